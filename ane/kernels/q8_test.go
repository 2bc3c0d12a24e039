package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// q8Inputs is a weight row (the full int8 range, −128 and 127 included)
// and an activation vector whose magnitude changes from block to block,
// with an all-zero block when there are at least two.
func q8Inputs(r *rand.Rand, n int) ([]int8, []float32) {
	w, x := make([]int8, n), make([]float32, n)
	for j := range w {
		w[j] = int8(r.IntN(256) - 128)
		x[j] = float32(r.NormFloat64() * math.Pow(10, float64(j/Q8Block%5)-2))
	}
	if n >= 2*Q8Block {
		clear(x[Q8Block : 2*Q8Block])
	}
	return w, x
}

// TestQuantizeQ8: every value within scale/2 of scale·code, codes within
// ±127 (the largest magnitude of a block exactly ±127), the padding and an
// all-zero block zero; the same for QuantizeQ16 (±actMax at each of codeLevels, each code stored
// at q16Pos, one scale per run of Q16Group blocks).
func TestQuantizeQ8(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	var q Q8
	var q16 Q16
	for _, n := range append(raggedLens, 4096) {
		_, x := q8Inputs(r, n)
		QuantizeQ8(&q, x)
		checkQuantized(t, x, q.Q, q.Scale, 127, 1, func(j int) int { return j })
		for _, codeMax := range codeLevels {
			levels := actMaxFor(lanePicks * codeMax)
			QuantizeQ16(&q16, x, levels)
			checkQuantized(t, x, q16.Q, q16.Scale, int16(levels), Q16Group, q16.at)
		}
	}
}

// TestInt8Q8Dot: at every level, on ragged lengths, the integer product
// is the quantized product within the bounds of checkQ8Product.
func TestInt8Q8Dot(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 9))
		var q Q8
		for _, n := range append(raggedLens, 4096, 4096+40) {
			w, x := q8Inputs(r, n)
			QuantizeQ8(&q, x)
			checkQ8Product(t, fmt.Sprintf("n=%d", n), w, x, &q, int8Q8Dot(w, &q))
		}
	})
}

// checkQ8Product checks an integer product got of w by x (quantized as
// q): it equals the quantized product Σ_b scale_b·Σ w·q (float64) within
// float rounding, and stays within the quantization bound of the float
// kernel int8Dot: |Δ| ≤ Σ_b (scale_b/2)·Σ_{j∈b}|w_j| (each activation is
// off by at most half its block's step), plus rounding.
func checkQ8Product(t *testing.T, what string, w []int8, x []float32, q *Q8, got32 float32) {
	t.Helper()
	n, got := len(w), float64(got32)
	var quantized, qabs, bound, abs float64
	for b := 0; b*Q8Block < n; b++ {
		var acc, wabs float64
		for j := b * Q8Block; j < min((b+1)*Q8Block, n); j++ {
			acc += float64(w[j]) * float64(q.Q[j])
			wabs += math.Abs(float64(w[j]))
			abs += math.Abs(float64(w[j]) * float64(x[j]))
		}
		s := float64(q.Scale[b])
		quantized += s * acc
		qabs += s * math.Abs(acc)
		bound += s / 2 * wabs
	}
	if d := math.Abs(got - quantized); d > 1e-5*qabs+1e-30 {
		t.Errorf("%s: integer product %g, quantized product %g (|Δ| %.3g > 1e-5 × %.3g)", what, got, quantized, d, qabs)
	}
	float := float64(int8Dot(w, x))
	if d := math.Abs(got - float); d > bound+2e-5*abs+1e-30 {
		t.Errorf("%s: integer product %g, float kernel %g (|Δ| %.3g > quantization bound %.3g)", what, got, float, d, bound)
	}
}

// TestInt8Q8DotExtremes: −128 weights against ±127 codes, the largest
// int16 pair sums VPMADDUBSW forms, are summed exactly.
func TestInt8Q8DotExtremes(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		const n = 4 * Q8Block
		w := make([]int8, n)
		x := make([]float32, n)
		for j := range w {
			w[j] = -128
			x[j] = 127
			if j%3 == 0 {
				w[j], x[j] = 127, -127
			}
		}
		var q Q8
		QuantizeQ8(&q, x)
		var want float64
		for j := range w {
			want += float64(w[j]) * float64(q.Q[j]) * float64(q.Scale[j/Q8Block])
		}
		if got := int8Q8Dot(w, &q); float64(got) != want {
			t.Fatalf("extremes: %g, want %g", got, want)
		}
	})
}

// TestInt8Q8DotExactSums: at every level the block sums are exact
// integers. Codes over QuantizeQ8's range ±127 (the AVX2 kernel's sign
// trick needs it) against the whole weight range, scales 1 and
// 2 in alternate blocks, at most 16 blocks: every partial sum is an integer
// below 2^24, so any float order adds it exactly and the result must equal
// the int64 sum — a saturated or mis-extended product would show.
func TestInt8Q8DotExactSums(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(10, 10))
		for _, n := range []int{1, 31, 32, 33, 64, 95, 96, 100, 257, 16 * Q8Block} {
			nb := (n + Q8Block - 1) / Q8Block
			q := Q8{Q: make([]int8, nb*Q8Block), Scale: make([]float32, nb)}
			w := make([]int8, n)
			var want int64
			for j := range w {
				w[j], q.Q[j] = int8(r.IntN(256)-128), int8(r.IntN(255)-127)
				if j%5 == 0 {
					w[j], q.Q[j] = -128, -127 // the largest product
				}
				want += int64(w[j]) * int64(q.Q[j]) * int64(1+j/Q8Block%2)
			}
			for b := range q.Scale {
				q.Scale[b] = float32(1 + b%2)
			}
			if got := int8Q8Dot(w, &q); float64(got) != float64(want) {
				t.Errorf("n=%d: %v, want the exact sum %d", n, got, want)
			}
		}
	})
}

// BenchmarkInt8Q8 times one 1024×4096 INT8 product through the float
// kernel (int8Dot per row) and through the integer one (QuantizeQ8 once,
// then int8Q8Dot per row), alternating inside each iteration, at the best
// level here; it reports ns/weight of both and the ratio float / integer.
func BenchmarkInt8Q8(b *testing.B) {
	const rows, cols = 1024, 4096
	r := rand.New(rand.NewPCG(3, 3))
	w, _ := q8Inputs(r, rows*cols)
	_, x := q8Inputs(r, cols)
	y := make([]float32, rows)
	var q Q8
	var tf, ti time.Duration
	for range b.N {
		t0 := time.Now()
		for row := range rows {
			y[row] = int8Dot(w[row*cols:(row+1)*cols], x)
		}
		t1 := time.Now()
		QuantizeQ8(&q, x)
		for row := range rows {
			y[row] = int8Q8Dot(w[row*cols:(row+1)*cols], &q)
		}
		tf, ti = tf+t1.Sub(t0), ti+time.Since(t1)
	}
	n := float64(b.N) * rows * cols
	b.ReportMetric(float64(tf.Nanoseconds())/n, "ns/weight_float")
	b.ReportMetric(float64(ti.Nanoseconds())/n, "ns/weight_int8")
	b.ReportMetric(float64(tf)/float64(ti), "speedup")
}

// BenchmarkInt8Q8Levels times one 1024×4096 INT8 integer product at each
// amd64 SIMD level, one activation row (int8Q8Dot per row) and four
// (int8Q8Dot4), the levels alternating inside each iteration; it reports
// the median ns per weight·token of each. The levels give the same bits
// (TestInt8Q8LevelsAgree), so which kernel each uses is a speed choice
// (docs/KERNELS.md, "INT8 per-channel").
//
//	go test -run '^$' -bench Int8Q8Levels -benchtime 20x ./ane/kernels
func BenchmarkInt8Q8Levels(b *testing.B) {
	const rows, cols = 1024, 4096
	r := rand.New(rand.NewPCG(3, 4))
	w, _ := q8Inputs(r, rows*cols)
	_, x := q8Inputs(r, 4*cols)
	var q1, q4 Q8
	QuantizeQ8(&q1, x[:cols])
	quantizeQ8Rows(&q4, x, 4, cols)
	var levels []level
	for _, l := range kernelLevels() {
		if l.simd && runtime.GOARCH == "amd64" {
			levels = append(levels, l)
		}
	}
	if len(levels) == 0 {
		b.Skip("no amd64 SIMD level here")
	}
	for _, tokens := range []int{1, 4} {
		b.Run(fmt.Sprintf("tokens=%d", tokens), func(b *testing.B) {
			times := make([][]float64, len(levels))
			var out [4]float32
			for b.Loop() {
				for i, l := range levels {
					restore := useLevel(l)
					start := time.Now()
					for row := range rows {
						wr := w[row*cols : (row+1)*cols]
						if tokens == 1 {
							out[0] = int8Q8Dot(wr, &q1)
						} else {
							int8Q8Dot4(wr, &q4, 0, q8Blocks(cols), &out)
						}
					}
					times[i] = append(times[i], float64(time.Since(start))/float64(rows*cols*tokens))
					restore()
				}
			}
			for i, l := range levels {
				b.ReportMetric(median(times[i]), "ns/weight/token_"+l.name)
			}
		})
	}
}

// TestRunnerInteger: with Runner.Integer a single-row ApplyPair of two INT8
// matrices (attention's k and v) gives each row's integer product (the
// row scale times int8Q8Dot, exactly; TestInt8Q8Dot bounds it against the
// float kernel); without it, int8Dot's. Products of n rows:
// TestRunnerIntegerRows (q8batch_test.go).
func TestRunnerInteger(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(4, 4))
		const rows, cols = 48, 200
		mats := [2]*Linear{}
		for i := range mats {
			w, _ := q8Inputs(r, rows*cols)
			sc := make([]float32, rows)
			for j := range sc {
				sc[j] = float32(r.Float64() + 0.5)
			}
			m, err := NewInt8(rows, cols, w, sc)
			if err != nil {
				t.Fatal(err)
			}
			mats[i] = &Linear{W: m}
		}
		_, x := q8Inputs(r, 2*cols)
		run := NewRunner(2)
		defer run.Close()
		run.MinParallel = 1
		var q Q8
		QuantizeQ8(&q, x[:cols])
		apply := func(integer bool, n int) [2][]float32 {
			run.Integer = integer
			out := [2][]float32{make([]float32, n*rows), make([]float32, n*rows)}
			run.ApplyPair(mats[0], mats[1], out[0], out[1], x, n, nil)
			return out
		}
		for _, integer := range []bool{true, false} {
			got := apply(integer, 1)
			for side := range got {
				m := mats[side].W.(*Int8)
				for i := range rows {
					row := m.q[i*cols : (i+1)*cols]
					want := int8Dot(row, x[:cols]) * m.scale[i]
					if integer {
						want = int8Q8Dot(row, &q) * m.scale[i]
					}
					if got[side][i] != want {
						t.Fatalf("integer %v side %d row %d: %g, want %g", integer, side, i, got[side][i], want)
					}
				}
			}
		}
	})
}

// TestInt8Q8LevelsAgree: the INT8 integer kernels of every amd64 SIMD
// level (VPMADDUBSW; VPDPBUSD with AVX-512 VNNI) give the same bits, one
// row and four rows at a time, on lengths with a lone last block and a Go
// tail, so the fast mode's INT8 products do not depend on the machine's
// level.
func TestInt8Q8LevelsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 31))
	for _, n := range []int{32, 64, 96, 203, 1029} {
		w, x := q8Inputs(r, n)
		var xs []float32
		for range 4 {
			_, x := q8Inputs(r, n)
			xs = append(xs, x...)
		}
		var q, q4 Q8
		QuantizeQ8(&q, x)
		quantizeQ8Rows(&q4, xs, 4, n)
		sameAtAmd64Levels(t, fmt.Sprintf("INT8 products of %d values", n), func() []float32 {
			var four [4]float32
			int8Q8Dot4(w, &q4, 0, q8Blocks(n), &four)
			return append([]float32{int8Q8Dot(w, &q)}, four[:]...)
		})
	}
}
