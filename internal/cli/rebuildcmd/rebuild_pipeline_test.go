package rebuildcmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/forgedaemon/forged/ane/rebuild/calib"
	"github.com/forgedaemon/forged/ane/rebuild/kl"
	"github.com/forgedaemon/forged/internal/synth"
)

// runFresh runs a newly built command (no flag state carried over).
func runFresh(t *testing.T, c *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&out)
	c.SetArgs(args)
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.Execute()
	return out.String(), err
}

// TestRebuildPipelineCommands: synth → quantize → lowrank → trace → kl
// reference → kl eval → embeddings through the commands, with --json.
func TestRebuildPipelineCommands(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model")
	if err := synth.Generate(model, synth.Options{Preset: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	rows := make([][]int, 4)
	for i := range rows {
		for j := 0; j < 16; j++ {
			rows[i] = append(rows[i], (i*31+j*7)%500)
		}
	}
	cal := filepath.Join(dir, "cal.npy")
	if err := calib.WriteRows(cal, rows); err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(dir, "plan.json")
	os.WriteFile(planFile, []byte(`{"1.gate": "LUT4 per-tensor + pcs"}`), 0o644)
	exp := filepath.Join(dir, "export")
	out, err := runFresh(t, newRebuildQuantizeCmd(), "--model", model, "--out", exp, "--calib", cal+":3,"+cal+":1",
		"--plan", planFile, "--method", "rtn", "--threads", "1", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first, last map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if first["step"] != "plan" || last["written_tensor_bytes"] == nil || last["calib_rows"] != float64(4) {
		t.Fatalf("quantize --json: first %v, last %v", first, last)
	}
	lr := filepath.Join(dir, "export_lr")
	if out, err := runFresh(t, newRebuildLowRankCmd(), "--model", model, "--export", exp, "--out", lr, "--rank", "4", "--seed", "2", "--json"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	trace := filepath.Join(dir, "trace.npz")
	if out, err := runFresh(t, newRebuildTraceCmd(), "--model", model, "--out", trace, "--max-new", "6", "--seed", "1"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	refFile := filepath.Join(dir, "ref.npz")
	if out, err := runFresh(t, newRebuildKLCmd(), "reference", "--model", model, "--trace", trace, "--out", refFile, "--top-k", "32"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err = runFresh(t, newRebuildKLCmd(), "eval", "--ref", refFile, "--model", model, "--export", lr, "--json",
		"--positions", filepath.Join(dir, "klpos.npy"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res kl.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Tokens == 0 || !(res.MeanKL > 0) || res.TopK != 32 || res.Tag != "export_lr" || res.SizeGiB <= 0 || len(res.ExportSHA256) != 64 {
		t.Errorf("kl eval: %+v", res)
	}
	out, err = runFresh(t, newRebuildKLCmd(), "eval", "--ref", refFile, "--model", model)
	if err != nil || !strings.Contains(out, "mean_kl") || !strings.Contains(out, "tag bf16") {
		t.Errorf("BF16 control: %v\n%s", err, out)
	}
	if out, err := runFresh(t, newRebuildEmbeddingsCmd(), "--model", model, "--out", filepath.Join(dir, "embed_tokens_fp16.npy")); err != nil ||
		!strings.Contains(out, "512×64") {
		t.Errorf("embeddings: %v\n%s", err, out)
	}
	// Bad input is reported before anything is written.
	os.WriteFile(planFile, []byte(`{"12.gate": "bf16"}`), 0o644)
	bad := filepath.Join(dir, "bad")
	if _, err := runFresh(t, newRebuildQuantizeCmd(), "--model", model, "--out", bad, "--calib", cal, "--plan", planFile); err == nil ||
		!strings.Contains(err.Error(), "layer 12") {
		t.Errorf("plan key for a missing layer: %v", err)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("output written despite the bad plan")
	}
	if _, err := runFresh(t, newRebuildQuantizeCmd(), "--model", model, "--out", bad, "--calib", cal+":9"); err == nil ||
		!strings.Contains(err.Error(), "9 rows requested") {
		t.Errorf("too many calibration rows: %v", err)
	}
}

func TestRebuildPlanNeedsReference(t *testing.T) {
	if _, err := runFresh(t, newRebuildPlanCmd(), "--model", "m", "--calib", "c.npy", "--out", "p.json"); err == nil ||
		!strings.Contains(err.Error(), "--ref") {
		t.Errorf("missing --ref: %v", err)
	}
}
