package demo

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/verify"

	"github.com/forgedaemon/forged/internal/leakcheck"
)

var wantSteps = []string{"synth", "quantize", "bundle", "hub", "daemon", "pull", "load", "chat", "coreai", "cleanup"}

// TestRunKeep runs the whole demo keeping the artefacts, then checks them
// independently: the kept bundle and the daemon's pulled snapshot both
// verify PASS, the snapshot is the published bundle, every step is
// reported in order, the answer streamed equals the final reply, and
// nothing the demo started is still running.
func TestRunKeep(t *testing.T) {
	keep := filepath.Join(t.TempDir(), "kept")
	before := runtime.NumGoroutine()
	var seen []string
	var streamed strings.Builder
	rep, err := Run(context.Background(), Options{Keep: keep,
		Step:  func(s Step) { seen = append(seen, s.Name) },
		Token: func(s string) { streamed.WriteString(s) }})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != strings.Join(wantSteps, ",") || len(rep.Steps) != len(wantSteps) {
		t.Fatalf("steps %v, want %v", seen, wantSteps)
	}
	for _, s := range rep.Steps {
		if !s.OK || s.Seconds <= 0 || s.Detail == "" {
			t.Errorf("step %+v", s)
		}
	}
	if !rep.OK || rep.Verify != verify.StatusPass || rep.Streamed == "" || rep.Streamed != rep.Reply ||
		rep.Streamed != streamed.String() || rep.Generated == 0 || len(rep.Commit) != 40 {
		t.Errorf("report %+v", rep)
	}
	if !inOrder(rep.States, "downloading", "verifying", "loading", "ready") {
		t.Errorf("daemon states %v, want downloading, verifying, loading, ready in order", rep.States)
	}
	// On Linux auto serves export/ with the reference engine; the coreai
	// step then serves the same snapshot through Core AI over the
	// stand-in bridge and must give the same answer (or say why it
	// could not run: no C compiler).
	if !strings.HasPrefix(rep.Backend, "ref ") {
		t.Errorf("served by %q, want the reference engine (auto on %s)", rep.Backend, runtime.GOOS)
	}
	if rep.CoreAISkipped == "" && (rep.CoreAI == nil || !rep.CoreAI.Same || rep.CoreAI.Reply != rep.Reply || !strings.Contains(rep.CoreAI.Bridge, "stand-in")) {
		t.Errorf("coreai step %+v (skipped %q): want the reference answer through the stand-in bridge", rep.CoreAI, rep.CoreAISkipped)
	}
	if rep.CDNFiles == 0 {
		t.Error("no file went through the hub's CDN redirect")
	}
	if rep.Kept != keep || len(rep.Leftovers) != 0 {
		t.Errorf("kept %q, leftovers %v", rep.Kept, rep.Leftovers)
	}
	if _, err := os.Stat(rep.Socket); !os.IsNotExist(err) {
		t.Errorf("socket %s still exists: %v", rep.Socket, err)
	}
	sel := bundle.Selection{Runtime: bundle.ComponentCoreAI, Plain: true, IncludeExport: true}
	snap := filepath.Join(keep, "data", "snapshots", filepath.FromSlash(Repo), rep.Commit)
	for _, dir := range []string{filepath.Join(keep, "bundle"), snap} {
		vr, err := verify.Integrity(dir, verify.Options{Selection: sel, Full: true})
		if err != nil || !vr.Passed() || vr.VerifiedFiles != rep.VerifiedFiles {
			t.Errorf("%s: %v %+v", dir, err, vr)
		}
	}
	m, err := ref.OpenBundle(snap, ref.Options{Threads: 1})
	if err != nil {
		t.Fatalf("the pulled snapshot does not open: %v", err)
	}
	m.Close()
	// Goroutines wind down asynchronously (closed HTTP connections).
	leakcheck.Goroutines(t, before, "the demo")
}

// TestRunRefusesNonEmptyKeep: the kept directory must be empty, and the
// refusal leaves its contents alone.
func TestRunRefusesNonEmptyKeep(t *testing.T) {
	keep := t.TempDir()
	os.WriteFile(filepath.Join(keep, "mine"), []byte("x"), 0o644)
	rep, err := Run(context.Background(), Options{Keep: keep})
	if err == nil || !strings.Contains(err.Error(), "not empty") || rep.OK {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(filepath.Join(keep, "mine")); err != nil {
		t.Errorf("the user's file is gone: %v", err)
	}
}

// TestRunCancelled: a cancelled context stops at the first long step,
// reports it as failed, and still cleans up.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := Run(ctx, Options{})
	if err == nil || rep.OK {
		t.Fatalf("a cancelled run succeeded: %+v", rep)
	}
	last := rep.Steps[len(rep.Steps)-1]
	if last.Name != "cleanup" || !last.OK || len(rep.Leftovers) != 0 {
		t.Errorf("cleanup %+v, leftovers %v", last, rep.Leftovers)
	}
	var failed bool
	for _, s := range rep.Steps {
		failed = failed || (!s.OK && s.Error != "")
	}
	if !failed {
		t.Errorf("no step reports the cancellation: %+v", rep.Steps)
	}
}

// inOrder reports whether want appears in got as a subsequence.
func inOrder(got []string, want ...string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}
