package ref

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/refdata"
)

// heldOutIDs tokenizes the texts of testdata/qwen3/encodings.jsonl (not the
// synthetic tokenizer's training corpus) with the tokenizer in dir and
// returns the first n ids.
func heldOutIDs(b *testing.B, dir string, n int) []int {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(refdata.Path(b, "qwen3", "encodings.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var ids []int
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() && len(ids) < n {
		var line struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, tok.Encode(line.Text)...)
	}
	if len(ids) < n {
		b.Fatalf("held-out text gives %d tokens, need %d", len(ids), n)
	}
	return ids[:n]
}

// modeAgreement decodes ids one position at a time (the serving path,
// where the fast mode's integer INT8 products apply) in sessions of ref
// (the exact mode) and fast, and returns the mean KL(ref‖fast) of the
// next-token distributions (nats) and the fraction of positions whose
// top-1 token agrees.
func modeAgreement(b *testing.B, ref, fast *Model, ids []int) (meanKL, top1 float64) {
	sr, sf := ref.NewSession(), fast.NewSession()
	defer sr.Close()
	defer sf.Close()
	agree := 0
	for _, id := range ids {
		lr, err := sr.Feed([]int{id})
		if err != nil {
			b.Fatal(err)
		}
		lf, err := sf.Feed([]int{id})
		if err != nil {
			b.Fatal(err)
		}
		kl, same := klTop1(lr, lf)
		meanKL += kl
		if same {
			agree++
		}
	}
	return meanKL / float64(len(ids)), float64(agree) / float64(len(ids))
}

// klTop1 is KL(softmax(p)‖softmax(q)) in float64 and whether the argmaxes agree.
func klTop1(p, q []float32) (float64, bool) {
	lse := func(x []float32) (float64, int) {
		arg := 0
		for i, v := range x {
			if v > x[arg] {
				arg = i
			}
		}
		var s float64
		for _, v := range x {
			s += math.Exp(float64(v - x[arg]))
		}
		return float64(x[arg]) + math.Log(s), arg
	}
	lp, ap := lse(p)
	lq, aq := lse(q)
	var kl float64
	for i := range p {
		logP, logQ := float64(p[i])-lp, float64(q[i])-lq
		kl += math.Exp(logP) * (logP - logQ)
	}
	return kl, ap == aq
}

// BenchmarkFastNumericsKL measures the fast numeric mode against the exact
// one on the quick export (the published recipe's formats, bench_test.go)
// over 2,048 positions of held-out text: mean KL (nats) and top-1
// agreement, the bound of docs/KERNELS.md being KL ≤ 1e-3 and top-1 ≥ 99%.
// It fails when the bound is not met. Run with
//
//	go test -run '^$' -bench FastNumericsKL/small -benchtime 1x ./ane/ref
func BenchmarkFastNumericsKL(b *testing.B) {
	for _, p := range []string{"small", "medium"} {
		b.Run(p, func(b *testing.B) { benchAgreement(b, p, modeAgreement, "one at a time") })
	}
}

// BenchmarkDecodeModes decodes the quick export in the exact and the fast
// mode side by side (alternating blocks of 8 steps in one process, so a
// busy machine loads both alike) and reports tok/s of each and the ratio.
//
//	go test -run '^$' -bench DecodeModes/small -benchtime 64x ./ane/ref
func BenchmarkDecodeModes(b *testing.B) {
	for _, p := range []string{"small", "medium"} {
		b.Run(p, func(b *testing.B) {
			bm := loadBench(b, p)
			var sessions [2]*Session
			for i, fast := range []bool{false, true} {
				m, err := NewModel(bm.cfg, bm.export, Options{Ladder: []int{4096}, Fast: fast})
				if err != nil {
					b.Fatal(err)
				}
				sessions[i] = m.NewSession()
				defer sessions[i].Close()
				sessions[i].Feed([]int{1, 2, 3, 4, 5, 6, 7, 8})
				decodeSteps(b, sessions[i], 2) // warm up scratch
			}
			b.ResetTimer()
			var spent [2]float64
			for done := 0; done < b.N; done += 8 {
				for i, s := range sessions {
					spent[i] += decodeSteps(b, s, 8).Seconds()
				}
			}
			steps := float64((b.N + 7) / 8 * 8)
			b.ReportMetric(steps/spent[0], "tok/s_exact")
			b.ReportMetric(steps/spent[1], "tok/s_fast")
			b.ReportMetric(spent[0]/spent[1], "speedup")
		})
	}
}
