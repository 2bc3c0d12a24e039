package rebuildcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/layout"
	"github.com/forgedaemon/forged/internal/synth"
)

func TestRebuildSynthJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	out, _, err := runCtl(t, "", "rebuild", "synth", "--preset", "tiny", "--seed", "3", "--out", dir, "--force=false", "--json=true")
	if err != nil {
		t.Fatal(err)
	}
	var rep synth.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	cfg, _ := synth.PresetConfig("tiny")
	if rep.Preset != "tiny" || rep.Seed != 3 || rep.Parameters != layout.ParameterCount(cfg) || rep.Shards < 2 {
		t.Errorf("report %+v", rep)
	}
	var sum int64
	for _, f := range rep.Files {
		st, err := os.Stat(filepath.Join(dir, f.Name))
		if err != nil || st.Size() != f.Bytes {
			t.Errorf("%s: reported %d bytes, on disk %v (%v)", f.Name, f.Bytes, st, err)
		}
		sum += f.Bytes
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(rep.Files) || sum != rep.TotalBytes {
		t.Errorf("%d files on disk, %d reported; total %d vs %d", len(entries), len(rep.Files), sum, rep.TotalBytes)
	}
}

func TestRebuildSynthRefusesNonEmptyOut(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "notes.txt")
	os.WriteFile(keep, []byte("mine"), 0o644)
	_, _, err := runCtl(t, "", "rebuild", "synth", "--preset", "tiny", "--seed", "1", "--out", dir, "--force=false", "--json=false")
	if err == nil || !strings.Contains(err.Error(), "not empty") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("error = %v, want a refusal naming --force", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("refused run still wrote %d entries", len(entries))
	}
	// --force writes, keeps unrelated files, and prints a text summary.
	out, _, err := runCtl(t, "", "rebuild", "synth", "--preset", "tiny", "--seed", "1", "--out", dir, "--force=true", "--json=false")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "wrote the tiny synthetic checkpoint (seed 1)") || !strings.Contains(out, "config.json") {
		t.Errorf("text output:\n%s", out)
	}
	if b, _ := os.ReadFile(keep); string(b) != "mine" {
		t.Error("--force clobbered an unrelated file")
	}
}

func TestRebuildSynthBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "", "--out", "x"}, "--preset is required"},
		{[]string{"--preset", "huge", "--out", t.TempDir()}, `unknown preset "huge"`},
		{[]string{"--preset", "tiny", "--out", ""}, "--out is required"},
	} {
		args := append([]string{"rebuild", "synth", "--seed", "0", "--force=false", "--json=false"}, tc.args...)
		if _, _, err := runCtl(t, "", args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error = %v, want %q", tc.args, err, tc.want)
		}
	}
}
