package rebuild

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/rebuild/kl"
	"github.com/forgedaemon/forged/ane/rebuild/plan"
	"github.com/forgedaemon/forged/ane/ref"
)

// TestAcceptanceTableTiny is the end-to-end check on the tiny
// model: synth → quantize → lowrank → kl, the reference engine running
// every export, and the orderings of the published work on mean KL —
// GPTQ < RTN with the same plan, LUT4 < vector 2x16 on the same (MLP)
// layers, rank factors reduce KL (rank 8 here: tiny's mixers are 64 wide,
// so 64 would be exact). It prints the table.
func TestAcceptanceTableTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("quantizes the tiny model four times")
	}
	model := tinyModel(t)
	dir := t.TempDir()
	set := calibSet(t, 12, 32, 512, 21)
	r := rand.New(rand.NewPCG(77, 1))
	tr := &kl.Trace{}
	for s := 0; s < 6; s++ {
		tr.Lengths, tr.Plens = append(tr.Lengths, 40), append(tr.Plens, 0)
		for j := 0; j < 40; j++ {
			tr.IDs = append(tr.IDs, r.IntN(512))
		}
	}
	bf, err := ref.Open(model, ref.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	reference, err := kl.BuildReference(kl.SessionFactory(bf), tr, 64)
	bf.Close()
	if err != nil {
		t.Fatal(err)
	}
	quant := func(name, method, planJSON string) string {
		out := filepath.Join(dir, name)
		p, err := plan.Parse([]byte(planJSON))
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Model: model, Out: out, Plan: p, Calib: set, Method: method, Seed: 1, Threads: 1}
		if _, err := Quantize(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		return out
	}
	eval := func(exportDir string) *kl.Result {
		m, err := ref.OpenExport(model, exportDir, ref.Options{Threads: 1})
		if err != nil {
			t.Fatalf("reference engine on %s: %v", exportDir, err)
		}
		defer m.Close()
		res, _, err := kl.Evaluate(kl.SessionFactory(m), reference)
		if err != nil {
			t.Fatal(err)
		}
		size, _, _ := kl.ExportSize(exportDir)
		res.SizeGiB, res.Tag = float64(size)/(1<<30), filepath.Base(exportDir)
		return res
	}
	const vec, lut4 = `{".*mlp\\..*": "vector 2x16 + pcs"}`, `{".*mlp\\..*": "LUT4 per-tensor + pcs"}`
	gptqVec := quant("gptq_vec2x16", MethodGPTQ, vec)
	rows := []*kl.Result{eval(gptqVec), eval(quant("rtn_vec2x16", MethodRTN, vec)), eval(quant("gptq_lut4", MethodGPTQ, lut4))}
	lr := filepath.Join(dir, "gptq_vec2x16_lr8")
	if _, err := LowRank(LowRankOptions{Model: model, Export: gptqVec, Out: lr, Rank: 8, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	rows = append(rows, eval(lr))
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n%-18s %8s %10s %10s %10s %10s %8s %8s %10s\n", "export", "tokens", "mean_kl", "median_kl", "p99_kl", "top1", "ppl", "ref_ppl", "size_kib")
	for _, r := range rows {
		fmt.Fprintf(&tab, "%-18s %8d %10.5f %10.5f %10.5f %10.4f %8.3f %8.3f %10.1f\n", r.Tag, r.Tokens, r.MeanKL, r.MedianKL,
			r.P99KL, r.Top1Agree, r.PPL, r.RefPPL, r.SizeGiB*(1<<20))
	}
	t.Log(tab.String())
	g, rtn, l4, lrk := rows[0].MeanKL, rows[1].MeanKL, rows[2].MeanKL, rows[3].MeanKL
	if !(g < rtn) {
		t.Errorf("GPTQ mean KL %.5f is not below RTN's %.5f", g, rtn)
	}
	if !(l4 < g) {
		t.Errorf("LUT4 MLP mean KL %.5f is not below vector 2x16's %.5f", l4, g)
	}
	if !(lrk < g) {
		t.Errorf("rank-8 factors: mean KL %.5f, not below %.5f without", lrk, g)
	}
}
