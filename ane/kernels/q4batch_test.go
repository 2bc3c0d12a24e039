package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestQ16BatchIsSingleRows: where the batch kernels run, every packed
// codebook format (± pcs, CD 1, 2, 4) times n = 2…15 rows on ragged
// column counts gives each token's rows bit-identical to the single-row
// integer product of that token's row (mulVecQ16 on its own QuantizeQ16),
// and the batch quantization holds exactly each row's own codes and run
// scales.
func TestQ16BatchIsSingleRows(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		if !haveQ16Batch() {
			t.Skip("no batch kernel at this level")
		}
		r := rand.New(rand.NewPCG(21, 9))
		const rows = 12
		var qb q16Batch
		var q Q16
		for _, name := range codebookFormats16 {
			for _, cols := range []int{1, 7, 33, 203, 8*Q16Group*Q16Block + 40} {
				m, _, _, _, _ := randLUT(t, r, name, rows, cols, false)
				for _, n := range []int{2, 3, 4, 5, 8, 9, 12, 15} {
					_, x := q8Inputs(r, n*cols)
					levels := m.icb.actMax
					quantizeQ16Batch(&qb, x, n, cols, levels)
					got := make([]float32, n*rows)
					m.mulBatchQ16(got, &qb, 0, rows)
					for tok := range n {
						QuantizeQ16(&q, x[tok*cols:(tok+1)*cols], levels)
						checkBatchCodes(t, &qb, tok, &q)
						want := make([]float32, rows)
						m.mulVecQ16(want, &q, 0, rows)
						if !equalBits(got[tok*rows:(tok+1)*rows], want) {
							t.Fatalf("%s cols %d n %d token %d: batch %v, single row %v", name, cols, n, tok, got[tok*rows:(tok+1)*rows], want)
						}
					}
				}
			}
		}
	})
}

// checkBatchCodes compares token tok's codes and run scales in qb with its
// own quantization q.
func checkBatchCodes(t *testing.T, qb *q16Batch, tok int, q *Q16) {
	t.Helper()
	t0 := tok / q16BatchGroup * q16BatchGroup
	w, base, sbase := qb.group(t0)
	k := tok - t0
	for b := range qb.blocks {
		got := qb.Q[base+(b*w+k)*Q16Block:][:Q16Block]
		if fmt.Sprint(got) != fmt.Sprint(q.Q[b*Q16Block:(b+1)*Q16Block]) {
			t.Fatalf("token %d block %d: codes %v, want %v", tok, b, got, q.Q[b*Q16Block:(b+1)*Q16Block])
		}
		if s := qb.Scale[sbase+b/Q16Group*w+k]; s != q.Scale[b] {
			t.Fatalf("token %d block %d: run scale %g, want %g", tok, b, s, q.Scale[b])
		}
	}
}

// TestQ16BatchExtremes: codes ±codeMax against activation codes
// ±actMax at each of codeLevels in whole runs of one sign (the
// int32 limit, as TestLUTQ16DotExtremes) for both kernel widths, every
// token alike: no overflow, each token within float rounding of the exact
// sum and equal to the single-row kernel.
func TestQ16BatchExtremes(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		if !haveQ16Batch() {
			t.Skip("no batch kernel at this level")
		}
		const cols = extremeCols
		for _, codeMax := range codeLevels {
			cb, p := extremeCodebook(codeMax)
			levels := cb.actMax
			for _, n := range []int{3, 8} { // widths 4 and 8
				x := make([]float32, n*cols)
				for j := range x {
					x[j] = float32(1 + j/cols) // token k: all k+1, codes ±levels
				}
				var qb q16Batch
				quantizeQ16Batch(&qb, x, n, cols, levels)
				w, base, sbase := qb.group(0)
				for c, sign := range []float64{1, -1} {
					var acc [q16BatchGroup]batchLanes
					lutQ16BatchDot(cb, c, p, qb.Q[base:], qb.Scale[sbase:], qb.blocks, w, qb.pairs, &acc)
					var q Q16
					for tok := range n {
						QuantizeQ16(&q, x[tok*cols:(tok+1)*cols], levels)
						got, single := qb.sum(&acc[tok]), lutQ16Dot(cb, c, p, &q)
						want := sign * cols * float64(codeMax) * float64(levels) * float64(q.Scale[0])
						if math.Abs(float64(got)-want) > 1e-6*math.Abs(want) || got != single {
							t.Fatalf("codes ±%d n %d token %d component %d: %g, want %g (single row %g)", codeMax, n, tok, c, got, want, single)
						}
					}
				}
			}
		}
	})
}

// TestRunnerIntegerBatch: through Runner.Apply and ApplyPair with Integer,
// a product of n = 2…15 rows by packed codebook matrices gives, where the
// batch kernels run, each token exactly what a one-row product of it
// gives; a malformed (unpacked) matrix and every level without the
// kernels stay on the float path bit-identically; 16 rows take the panel
// path, not this one.
func TestRunnerIntegerBatch(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 10))
		run := NewRunner(2)
		defer run.Close()
		run.MinParallel = 1
		const rows, cols = 24, 203
		for _, name := range codebookFormats16 {
			for _, malformed := range []bool{false, true} {
				a, _, _, _, _ := randLUT(t, r, name, rows, cols, malformed)
				b, _, _, _, _ := randLUT(t, r, name, rows, cols, malformed)
				la, lb := &Linear{W: a}, &Linear{W: b}
				for _, n := range []int{2, 5, 8, 15} {
					_, x := q8Inputs(r, n*cols)
					pair := func(integer bool, x []float32, n int) []float32 {
						run.Integer = integer
						out := make([]float32, 2*n*rows)
						run.ApplyPair(la, lb, out[:n*rows], out[n*rows:], x, n, nil)
						return out
					}
					got, float := pair(true, x, n), pair(false, x, n)
					if malformed || !haveQ16Batch() {
						if !equalBits(got, float) {
							t.Fatalf("%s n %d malformed %v: integer mode left the float path", name, n, malformed)
						}
						continue
					}
					for tok := range n {
						one := pair(true, x[tok*cols:(tok+1)*cols], 1)
						for side := range 2 {
							g := got[side*n*rows+tok*rows:][:rows]
							if !equalBits(g, one[side*rows:(side+1)*rows]) {
								t.Fatalf("%s n %d token %d side %d: batch %v, one row %v", name, n, tok, side, g, one[side*rows:(side+1)*rows])
							}
						}
					}
				}
				if !malformed && haveQ16Batch() {
					run.Integer = true
					var tk pairTask
					tk.parts[0] = product{m: a}
					run.useQ16(&tk, make([]float32, panelMinTokens*cols), panelMinTokens)
					if tk.parts[0].q16b != nil {
						t.Fatalf("%s: %d rows took the batch path, not the panel path", name, panelMinTokens)
					}
				}
			}
		}
	})
}

// BenchmarkQ16Batch is the fast mode's few-row codebook product against
// the float path it replaces and against one-row products: one 1024×4096
// product of n tokens through the Runner on one worker, the float path
// (Integer off), the batch kernels (Integer on) and n one-row integer
// products, alternating inside each iteration. It reports the median ns
// per stored weight and token of each, float / batch ("speedup") and
// batch / n rows ("of_rows": what a Verify block costs in one-row steps,
// for these products).
//
//	go test -run '^$' -bench Q16Batch -benchtime 20x ./ane/kernels
func BenchmarkQ16Batch(b *testing.B) {
	if !haveQ16Batch() {
		b.Skip("no batch kernel here")
	}
	const rows, cols = 1024, 4096
	r := rand.New(rand.NewPCG(21, 11))
	run := NewRunner(1)
	defer run.Close()
	for _, name := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs"} {
		m, _, _, _, _ := randLUT(&testing.T{}, r, name, rows, cols, false)
		lin := &Linear{W: m}
		for _, n := range []int{4, 8} {
			_, x := q8Inputs(r, n*cols)
			y := make([]float32, n*rows)
			b.Run(fmt.Sprintf("%s/tokens=%d", name, n), func(b *testing.B) {
				var t [3][]float64
				per := float64(rows * cols * n)
				for b.Loop() {
					for k, f := range []func(){
						func() { run.Integer = false; run.Apply(lin, y, x, n) },
						func() { run.Integer = true; run.Apply(lin, y, x, n) },
						func() {
							run.Integer = true
							for tok := range n {
								run.Apply(lin, y[tok*rows:(tok+1)*rows], x[tok*cols:(tok+1)*cols], 1)
							}
						},
					} {
						start := time.Now()
						f()
						t[k] = append(t[k], float64(time.Since(start))/per)
					}
				}
				fl, ba, one := median(t[0]), median(t[1]), median(t[2])
				b.ReportMetric(fl, "ns/weight/token_float")
				b.ReportMetric(ba, "ns/weight/token_batch")
				b.ReportMetric(one, "ns/weight/token_rows")
				b.ReportMetric(fl/ba, "speedup")
				b.ReportMetric(ba/one, "of_rows")
			})
		}
	}
}
