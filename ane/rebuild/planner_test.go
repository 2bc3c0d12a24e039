package rebuild

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/rebuild/kl"
	"github.com/forgedaemon/forged/ane/rebuild/plan"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/internal/synth"
)

// TestTradeDecisions: the greedy trade accepts a cheap band that funds a
// valuable MLP upgrade and stops at the first band whose damage exceeds
// what it funds.
func TestTradeDecisions(t *testing.T) {
	res := &PlannerResult{
		MLP: []Sensitivity{
			{Group: "mlp 0", Layers: []int{0}, DeltaKL: 0.01, Bytes: 100},
			{Group: "mlp 1", Layers: []int{1}, DeltaKL: 0.30, Bytes: 100},
			{Group: "mlp 2", Layers: []int{2}, DeltaKL: 0.02, Bytes: 100},
		},
		Mixer: []Sensitivity{
			{Group: "mixer 0-1", Layers: []int{0, 1}, DeltaKL: 0.05, Bytes: 100},
			{Group: "mixer 2-3", Layers: []int{2, 3}, DeltaKL: 0.50, Bytes: 100},
		},
		Plan: map[string]string{},
	}
	var log bytes.Buffer
	trade(res, PlannerOptions{Low: "vector 2x16 + pcs", High: "LUT4 per-tensor + pcs", Log: &log})
	want := map[string]string{"0.mixer": "vector 2x16 + pcs", "1.mixer": "vector 2x16 + pcs",
		"1.gate": "LUT4 per-tensor + pcs", "1.up": "LUT4 per-tensor + pcs", "1.down": "LUT4 per-tensor + pcs"}
	if len(res.Plan) != len(want) {
		t.Errorf("plan %v, want %v", res.Plan, want)
	}
	for k, v := range want {
		if res.Plan[k] != v {
			t.Errorf("%s = %q, want %q", k, res.Plan[k], v)
		}
	}
	out := log.String()
	if !strings.Contains(out, "accept band mixer 0-1") || !strings.Contains(out, "reject band mixer 2-3") || !strings.Contains(out, "upgrade mlp 1") {
		t.Errorf("decisions not printed:\n%s", out)
	}
}

// TestPlannerOnTiny sweeps the tiny model (bands of 2) and checks the
// result is a plan that resolves and that every sweep was measured.
func TestPlannerOnTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("12 quantize runs")
	}
	model := tinyModel(t)
	bf, err := ref.Open(model, ref.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	tr := &kl.Trace{Lengths: []int{24, 24}, Plens: []int{0, 0}}
	for _, row := range calibSet(t, 2, 24, 512, 99).Rows {
		tr.IDs = append(tr.IDs, row...)
	}
	reference, err := kl.BuildReference(kl.SessionFactory(bf), tr, 32)
	bf.Close()
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	res, err := Planner(context.Background(), PlannerOptions{Model: model, Calib: calibSet(t, 4, 16, 512, 3), Ref: reference,
		Work: t.TempDir(), Band: 2, Method: MethodRTN, Threads: 1, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.MLP) != 4 || len(res.Mixer) != 2 || len(res.Decisions) == 0 {
		t.Fatalf("sweep %d MLP, %d mixer bands, %d decisions", len(res.MLP), len(res.Mixer), len(res.Decisions))
	}
	for _, s := range append(res.MLP, res.Mixer...) {
		if !(s.LowKL > 0) || !(s.HighKL > 0) || s.Bytes <= 0 {
			t.Errorf("%s: %+v", s.Group, s)
		}
	}
	cfg, _ := synth.PresetConfig("tiny")
	p := &plan.Plan{}
	for k, v := range res.Plan {
		e, err := plan.Parse([]byte(`{"` + k + `": "` + v + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		p.Entries = append(p.Entries, e.Entries...)
	}
	if _, err := plan.Resolve(cfg, p, plan.PublishedDefaults(cfg)); err != nil {
		t.Errorf("the planner's plan does not resolve: %v", err)
	}
	t.Log("\n" + log.String())
}
