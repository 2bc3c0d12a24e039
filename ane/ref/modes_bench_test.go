package ref

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/kernels"
)

// exactAndFast is bm's quick export as an exact-mode and a fast-mode model.
func exactAndFast(b *testing.B, bm *benchModel) (exact, fast *Model) {
	var m [2]*Model
	for i, f := range []bool{false, true} {
		var err error
		if m[i], err = NewModel(bm.cfg, bm.export, Options{Ladder: []int{4096}, Fast: f}); err != nil {
			b.Fatal(err)
		}
	}
	return m[0], m[1]
}

// modeAgreementVerify is modeAgreement with ids fed as Verify blocks of
// ane.VerifyRows rows (each accepted whole), so every product is
// matrix-matrix: the prefill and Verify path, where the fast mode's
// codebook products run in integers without AVX-512. Every row's
// next-token distribution is compared.
func modeAgreementVerify(b *testing.B, ref, fast *Model, ids []int) (meanKL, top1 float64) {
	sr, sf := ref.NewSession(), fast.NewSession()
	defer sr.Close()
	defer sf.Close()
	agree := 0
	for i := 0; i < len(ids); i += ane.VerifyRows {
		block := ids[i:min(i+ane.VerifyRows, len(ids))]
		lr, err := sr.Verify(block)
		if err != nil {
			b.Fatal(err)
		}
		lf, err := sf.Verify(block)
		if err != nil {
			b.Fatal(err)
		}
		for row := range lr.Rows {
			kl, same := klTop1(lr.Data[row*lr.Vocab:(row+1)*lr.Vocab], lf.Data[row*lf.Vocab:(row+1)*lf.Vocab])
			meanKL += kl
			if same {
				agree++
			}
		}
		if err := sr.Accept(len(block)); err != nil {
			b.Fatal(err)
		}
		if err := sf.Accept(len(block)); err != nil {
			b.Fatal(err)
		}
	}
	return meanKL / float64(len(ids)), float64(agree) / float64(len(ids))
}

// modeAgreementPrefill is modeAgreement with ids fed as prefill blocks
// of ane.PrefillRows rows, every row's next-token distribution compared:
// the products of 64 rows, where the fast mode's codebook products take
// the integer panel path without AVX-512 (ane/kernels/panelq.go).
func modeAgreementPrefill(b *testing.B, ref, fast *Model, ids []int) (meanKL, top1 float64) {
	sr, sf := ref.NewSession(), fast.NewSession()
	defer sr.Close()
	defer sf.Close()
	agree := 0
	for i := 0; i < len(ids); i += ane.PrefillRows {
		block := ids[i:min(i+ane.PrefillRows, len(ids))]
		var logits [2][]float32
		for k, s := range []*Session{sr, sf} {
			if err := s.Fit(s.pos + len(block)); err != nil {
				b.Fatal(err)
			}
			s.prefill(block, len(block))
			logits[k] = s.s.logits[:len(block)*s.m.cfg.Vocab]
		}
		V := ref.cfg.Vocab
		for row := range block {
			kl, same := klTop1(logits[0][row*V:(row+1)*V], logits[1][row*V:(row+1)*V])
			meanKL += kl
			if same {
				agree++
			}
		}
	}
	return meanKL / float64(len(ids)), float64(agree) / float64(len(ids))
}

// BenchmarkFastNumericsKLPrefill is BenchmarkFastNumericsKL over prefill
// blocks of 64: the same 2,048 held-out positions and bound.
//
//	go test -run '^$' -bench FastNumericsKLPrefill/small -benchtime 1x ./ane/ref
func BenchmarkFastNumericsKLPrefill(b *testing.B) {
	for _, p := range []string{"small", "medium"} {
		b.Run(p, func(b *testing.B) {
			benchAgreement(b, p, modeAgreementPrefill, fmt.Sprintf("in prefill blocks of %d", ane.PrefillRows))
		})
	}
}

// BenchmarkFastNumericsKLVerify is BenchmarkFastNumericsKL over the
// matrix-matrix path (Verify blocks of 8): the same 2,048 held-out
// positions, the same bound, and it fails when the bound is not met.
// `-bench FastNumericsKL/small` runs both.
//
//	go test -run '^$' -bench FastNumericsKLVerify/small -benchtime 1x ./ane/ref
func BenchmarkFastNumericsKLVerify(b *testing.B) {
	for _, p := range []string{"small", "medium"} {
		b.Run(p, func(b *testing.B) {
			benchAgreement(b, p, modeAgreementVerify, fmt.Sprintf("in Verify blocks of %d", ane.VerifyRows))
		})
	}
}

// benchAgreement measures agree (modeAgreement or modeAgreementVerify) of
// the fast mode against the exact one on preset's quick export over 2,048
// held-out positions, reports mean KL and top-1, and fails outside the
// bound of docs/KERNELS.md (KL ≤ 1e-3 nats, top-1 ≥ 99%).
func benchAgreement(b *testing.B, preset string, agree agreement, how string) {
	bm := loadBench(b, preset)
	exact, fast := exactAndFast(b, bm)
	logIntegerForms(b, fast)
	reportAgreement(b, preset, bm.dir, exact, fast, agree, how)
}

// agreement compares two models' next-token distributions over ids:
// mean KL(ref‖fast) in nats and the top-1 agreement.
type agreement func(b *testing.B, ref, fast *Model, ids []int) (meanKL, top1 float64)

// reportAgreement runs agree over 2,048 held-out positions (tokenized by
// the tokenizer in dir), reports mean KL and top-1, and fails outside the
// bound of docs/KERNELS.md (KL ≤ 1e-3 nats, top-1 ≥ 99%).
func reportAgreement(b *testing.B, what, dir string, exact, fast *Model, agree agreement, how string) {
	ids := heldOutIDs(b, dir, 2048)
	b.ResetTimer()
	var kl, top1 float64
	for range b.N {
		kl, top1 = agree(b, exact, fast, ids)
	}
	b.ReportMetric(kl, "meanKL_nats")
	b.ReportMetric(100*top1, "top1_%")
	b.ReportMetric(float64(len(ids)), "positions")
	b.Logf("%s, %d positions %s, fast vs exact: mean KL %.3g nats, top-1 agreement %.2f%%", what, len(ids), how, kl, 100*top1)
	if kl > 1e-3 || top1 < 0.99 {
		b.Errorf("fast vs exact: mean KL %.3g nats, top-1 %.2f%%: outside the bound (KL ≤ 1e-3, top-1 ≥ 99%%)", kl, 100*top1)
	}
}

// BenchmarkFastNumericsKLExport is the fast mode's bound on an export the
// rebuild made (ane/rebuild: GPTQ codebooks under the recipe's plan, the
// online basis) where the other KL benchmarks use the quick export's
// round-to-nearest, fixed codebooks: one position at a time, in Verify
// blocks and in prefill blocks, the same 2,048 held-out positions and bound. FORGED_BENCH_MODEL
// names the checkpoint directory and FORGED_BENCH_EXPORT the export's;
// without them it is skipped. bench/rebuild/fastkl.sh makes both and runs it.
func BenchmarkFastNumericsKLExport(b *testing.B) {
	modelDir, exportDir := os.Getenv("FORGED_BENCH_MODEL"), os.Getenv("FORGED_BENCH_EXPORT")
	if modelDir == "" || exportDir == "" {
		b.Skip("FORGED_BENCH_MODEL and FORGED_BENCH_EXPORT name a checkpoint and its export (bench/rebuild/fastkl.sh)")
	}
	var m [2]*Model
	for i, f := range []bool{false, true} {
		var err error
		if m[i], err = OpenExport(modelDir, exportDir, Options{Ladder: []int{4096}, Fast: f}); err != nil {
			b.Fatal(err)
		}
		defer m[i].Close()
	}
	b.Run("decode", func(b *testing.B) {
		logIntegerForms(b, m[1]) // here: a parent benchmark's log is not printed
		reportAgreement(b, exportDir, modelDir, m[0], m[1], modeAgreement, "one at a time")
	})
	b.Run("verify", func(b *testing.B) {
		reportAgreement(b, exportDir, modelDir, m[0], m[1], modeAgreementVerify, fmt.Sprintf("in Verify blocks of %d", ane.VerifyRows))
	})
	b.Run("prefill", func(b *testing.B) {
		reportAgreement(b, exportDir, modelDir, m[0], m[1], modeAgreementPrefill, fmt.Sprintf("in prefill blocks of %d", ane.PrefillRows))
	})
}

// prefillPrompt is the prefill benchmarks' 512-token prompt for bm.
func prefillPrompt(bm *benchModel) []int {
	ids := make([]int, 512)
	for i := range ids {
		ids[i] = (i*37 + 11) % bm.cfg.Vocab
	}
	return ids
}

// prefillAlternately feeds ids into each of the two sessions in turn
// (after a warm-up block that sizes the scratch), b.N times, so a busy
// machine loads both alike. It returns each session's seconds and the
// per-iteration ratios of the first's time to the second's, sorted.
func prefillAlternately(b *testing.B, sessions [2]*Session, ids []int) (spent [2]float64, ratios []float64) {
	for _, s := range sessions {
		if _, err := s.Feed(ids[:s.block]); err != nil {
			b.Fatal(err)
		}
	}
	ratios = make([]float64, 0, b.N)
	b.ResetTimer()
	for range b.N {
		var t [2]float64
		for i, s := range sessions {
			s.Reset()
			start := time.Now()
			if _, err := s.Feed(ids); err != nil {
				b.Fatal(err)
			}
			t[i] = time.Since(start).Seconds()
			spent[i] += t[i]
		}
		ratios = append(ratios, t[0]/t[1])
	}
	slices.Sort(ratios)
	return spent, ratios
}

// BenchmarkPrefillModes prefills a 512-token prompt on the quick export in
// the exact mode (64-row blocks) and the fast mode (fastFeedRows-row
// blocks), alternating within each iteration, and reports tok/s of each
// and the ratio of their totals.
//
//	go test -run '^$' -bench PrefillModes/small -benchtime 4x ./ane/ref
func BenchmarkPrefillModes(b *testing.B) {
	for _, p := range []string{"small", "medium"} {
		b.Run(p, func(b *testing.B) {
			bm := loadBench(b, p)
			exact, fast := exactAndFast(b, bm)
			sessions := [2]*Session{exact.NewSession(), fast.NewSession()}
			defer sessions[0].Close()
			defer sessions[1].Close()
			ids := prefillPrompt(bm)
			spent, _ := prefillAlternately(b, sessions, ids)
			n := float64(len(ids) * b.N)
			b.ReportMetric(n/spent[0], "tok/s_exact")
			b.ReportMetric(n/spent[1], "tok/s_fast")
			b.ReportMetric(spent[0]/spent[1], "speedup")
		})
	}
}

// BenchmarkFeedBlock is what chose fastFeedRows: the fast mode prefilling a
// 512-token prompt in Core AI's 64-row blocks and in fastFeedRows-row
// ones, two sessions of one model alternating within each iteration; it
// reports the median per-iteration ratio of their times and each one's
// tok/s.
//
//	go test -run '^$' -bench FeedBlock/medium -benchtime 7x ./ane/ref
func BenchmarkFeedBlock(b *testing.B) {
	for _, p := range []string{"small", "medium"} {
		b.Run(p, func(b *testing.B) {
			bm := loadBench(b, p)
			_, fast := exactAndFast(b, bm)
			blocks := [2]int{ane.PrefillRows, fastFeedRows}
			var sessions [2]*Session
			for i, rows := range blocks {
				sessions[i] = fast.NewSession()
				sessions[i].block = rows
				defer sessions[i].Close()
			}
			ids := prefillPrompt(bm)
			spent, ratios := prefillAlternately(b, sessions, ids)
			n := float64(len(ids) * b.N)
			b.ReportMetric(n/spent[0], fmt.Sprintf("tok/s_%d", blocks[0]))
			b.ReportMetric(n/spent[1], fmt.Sprintf("tok/s_%d", blocks[1]))
			b.ReportMetric(ratios[len(ratios)/2], "speedup")
		})
	}
}

// logIntegerForms logs how the fast mode holds m's codebook matrices
// (kernels.LUT.IntegerForm): how many take each code bound, how many stay
// on the float kernels, and the largest relative errors with their names,
// so a KL figure can be read against the matrices that cause it.
func logIntegerForms(b *testing.B, m *Model) {
	type form struct {
		name    string
		codeMax int
		actMax  float32
		relErr  float64
	}
	var forms []form
	float := 0
	add := func(name string, l *kernels.Linear) {
		lut, isLUT := l.W.(*kernels.LUT)
		if !isLUT {
			return
		}
		if c, a, e, ok := lut.IntegerForm(); ok {
			forms = append(forms, form{name, c, a, e})
		} else {
			float++
		}
	}
	for i, L := range m.w.layers {
		for _, p := range []struct {
			name string
			l    *kernels.Linear
		}{{"q", L.q}, {"k", L.k}, {"v", L.v}, {"o", L.o}, {"qkv", L.qkv}, {"z", L.z}, {"out", L.out},
			{"gate", L.gate}, {"up", L.up}, {"down", L.down}} {
			if p.l != nil {
				add(fmt.Sprintf("%d.%s", i, p.name), p.l)
			}
		}
	}
	add("head", m.w.head)
	perLevel := map[int]int{}
	for _, f := range forms {
		perLevel[f.codeMax]++
	}
	slices.SortFunc(forms, func(x, y form) int { return cmp.Compare(y.relErr, x.relErr) })
	b.Logf("codebook matrices: %d on the float kernels; integer, by code bound: %v", float, perLevel)
	for _, f := range forms[:min(6, len(forms))] {
		b.Logf("  %s: codes ±%d, activations ±%g, relative error %.3g", f.name, f.codeMax, f.actMax, f.relErr)
	}
}
