package modelcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func lastJSONLine(t *testing.T, out string) runSummary {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var s runSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("%v in %q", err, lines[len(lines)-1])
	}
	return s
}

// synth-drafter writes a drafter that pairs with the target; run with it
// and --speculative on gives the plain greedy ids; a drafter that does not
// pair is refused with the rule.
func TestSynthDrafterAndSpeculativeRun(t *testing.T) {
	target := tinyModelDir(t)
	drafter := filepath.Join(t.TempDir(), "drafter")
	out, _, err := runCtl(t, "", "rebuild", "synth-drafter", "--target", target, "--out", drafter, "--seed", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Taps  []int `json:"taps"`
		Vocab int   `json:"vocab_size"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !slices.Equal(rep.Taps, []int{0, 1, 2, 3}) || rep.Vocab != 512 {
		t.Fatalf("report %q: %+v %v", out, rep, err)
	}
	if _, _, err := runCtl(t, "", "rebuild", "synth-drafter", "--target", target, "--out", drafter); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("non-empty --out: %v", err)
	}
	var runs []runSummary
	for _, mode := range []string{"off", "on"} {
		out, _, err := runCtl(t, "", "run", "--model", target, "--drafter", drafter, "--speculative", mode,
			"--ids", "5,17,200,33", "--max-tokens", "10", "--json")
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, lastJSONLine(t, out))
	}
	if len(runs[0].IDs) == 0 || !slices.Equal(runs[0].IDs, runs[1].IDs) || runs[0].Text != runs[1].Text {
		t.Errorf("speculative run %v != plain %v", runs[1].IDs, runs[0].IDs)
	}
	if runs[1].Stats.Cycles == 0 || runs[0].Stats.Cycles != 0 {
		t.Errorf("cycles: off %d, on %d", runs[0].Stats.Cycles, runs[1].Stats.Cycles)
	}
	cfgPath := filepath.Join(drafter, "config.json")
	data, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, []byte(strings.Replace(string(data), `"vocab_size": 512`, `"vocab_size": 1024`, 1)), 0o644)
	_, _, err = runCtl(t, "", "run", "--model", target, "--drafter", drafter, "--ids", "5,17", "--max-tokens", "2")
	if err == nil || !strings.Contains(err.Error(), "drafter.config") || !strings.Contains(err.Error(), "vocab_size") {
		t.Errorf("unpaired drafter: %v", err)
	}
}
