package main

import (
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/rebuild"
	"github.com/forgedaemon/forged/internal/demo"
	"github.com/forgedaemon/forged/verify"

	"github.com/forgedaemon/forged/internal/leakcheck"
)

// jsonCommit is the bundle commit of the JSON demo run (seed 1).
var jsonCommit string

// TestDemoJSONThenRebuildBundle runs `forgectl demo --json --keep DIR`, checks
// the step report, then assembles a second bundle from the kept checkpoint
// and export with `forgectl rebuild bundle` and checks `forgectl verify`
// PASSes it.
func TestDemoJSONThenRebuildBundle(t *testing.T) {
	keep := filepath.Join(t.TempDir(), "kept")
	// os/signal starts one process-wide receiver goroutine on first use
	// (forgectl demo watches SIGINT); start it first so it is not counted.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	signal.Stop(sig)
	before := runtime.NumGoroutine()
	out, _, err := runCtl(t, "", "demo", "--json=true", "--keep", keep, "--prompt", "Hello there", "--max-tokens", "12", "--seed", "1")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep demo.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not one JSON report: %v\n%s", err, out)
	}
	want := []string{"synth", "quantize", "bundle", "hub", "daemon", "pull", "load", "chat", "coreai", "cleanup"}
	if len(rep.Steps) != len(want) {
		t.Fatalf("steps %+v", rep.Steps)
	}
	for i, s := range rep.Steps {
		if s.Name != want[i] || !s.OK || s.Seconds <= 0 {
			t.Errorf("step %d: %+v, want %s ok", i, s, want[i])
		}
	}
	if !rep.OK || rep.Verify != verify.StatusPass || rep.Prompt != "Hello there" {
		t.Errorf("report: ok %v, verify %q, prompt %q", rep.OK, rep.Verify, rep.Prompt)
	}
	if rep.Streamed == "" || rep.Streamed != rep.Reply || rep.Generated == 0 || rep.Generated > 12 {
		t.Errorf("streamed %q, reply %q, %d tokens", rep.Streamed, rep.Reply, rep.Generated)
	}
	jsonCommit = rep.Commit
	if len(rep.Leftovers) != 0 || rep.Kept != keep {
		t.Errorf("leftovers %v, kept %q", rep.Leftovers, rep.Kept)
	}
	if _, err := os.Stat(filepath.Dir(rep.Socket)); !os.IsNotExist(err) {
		t.Errorf("socket directory %s survived: %v", filepath.Dir(rep.Socket), err)
	}
	leakcheck.Goroutines(t, before, "the demo")

	b := filepath.Join(t.TempDir(), "b")
	out, _, err = runCtl(t, "", "rebuild", "bundle", "--model", filepath.Join(keep, "checkpoint"), "--export", filepath.Join(keep, "export"),
		"--out", b, "--ctx", "8192,16384", "--chunk-layers", "4", "--model-id", rebuild.DefaultModelID,
		"--model-revision", rebuild.DefaultModelRevision, "--json=true")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var ar rebuild.AssembleReport
	if err := json.Unmarshal([]byte(out), &ar); err != nil || !ar.Verify.Passed() || len(ar.Contexts) != 2 || ar.Layers != 4 {
		t.Fatalf("rebuild bundle report: %v %+v", err, ar)
	}
	out, _, err = runCtl(t, "", "verify", "--bundle", b, "--repo", "", "--data", "", "--plain=true", "--include-export=true", "--full=true", "--ctx", "16384", "--json=true")
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	var vr verify.Report
	if err := json.Unmarshal([]byte(out), &vr); err != nil || !vr.Passed() || vr.VerifiedFiles != ar.Files {
		t.Errorf("forgectl verify: %v %+v (assembled %d files)", err, vr, ar.Files)
	}

	// Bad input names the problem and leaves nothing behind.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", keep + "/checkpoint", "--export", "", "--out", b + "2", "--ctx", "8192"}, "--export is required"},
		{[]string{"--model", keep + "/checkpoint", "--export", keep + "/export", "--out", b, "--ctx", "8192"}, "is not empty"},
		{[]string{"--model", keep + "/checkpoint", "--export", keep + "/export", "--out", b + "3", "--ctx", "8k"}, `"8k" is not an integer`},
		{[]string{"--model", keep + "/checkpoint", "--export", keep + "/export", "--out", b + "4", "--ctx", "16384,8192"}, "ascending"},
	} {
		args := append([]string{"rebuild", "bundle", "--chunk-layers", "4", "--json=false"}, c.args...)
		if _, _, err := runCtl(t, "", args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
	for _, d := range []string{b + "2", b + "3", b + "4"} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left behind", d)
		}
	}
}

// TestDemoHumanOutput: the printed run says what the model is, names every
// step with its time, and shows the answer. The bundle is reproducible: the
// hub's content-derived commit equals the one of the JSON run (same seed).
func TestDemoHumanOutput(t *testing.T) {
	out, _, err := runCtl(t, "", "demo", "--json=false", "--keep", "", "--prompt", "Hi", "--max-tokens", "8", "--seed", "1")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"random", "gibberish", "stand-in packages", "Qwen3.8-27B", "not been run here", "answer:", "served by ref", "demo OK in"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if jsonCommit != "" && !strings.Contains(out, "main → "+jsonCommit[:12]) {
		t.Errorf("the same seed published another commit than %s:\n%s", jsonCommit, out)
	}
	for _, step := range []string{"synth", "quantize", "bundle", "hub", "daemon", "pull", "load", "chat", "coreai", "cleanup"} {
		if !strings.Contains(out, "\n"+step) || !strings.Contains(out, step+strings.Repeat(" ", 9-len(step))+" ok") {
			t.Errorf("no ok line for step %s:\n%s", step, out)
		}
	}
}

// TestDemoRefusesBadFlags: bad flags are named before anything starts.
func TestDemoRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-tokens", "0", "--prompt", "x"}, "--max-tokens 0: must be between 1 and 1024"},
		{[]string{"--max-tokens", "5000", "--prompt", "x"}, "--max-tokens 5000"},
		{[]string{"--max-tokens", "8", "--prompt", " "}, "--prompt is empty"},
	} {
		out, _, err := runCtl(t, "", append([]string{"demo", "--json=false", "--keep", "", "--seed", "1"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(out, "synth") {
			t.Errorf("%v: got %v (output %q), want %q before any step", c.args, err, out, c.want)
		}
	}
}
