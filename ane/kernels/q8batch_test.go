package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// q8RowsInputs is a weight row of cols values and n activation rows
// (q8Inputs each, so magnitudes change between blocks and rows), with the
// rows quantized by quantizeQ8Rows.
func q8RowsInputs(r *rand.Rand, n, cols int) ([]int8, []float32, *Q8) {
	w, _ := q8Inputs(r, cols)
	x := make([]float32, 0, n*cols)
	for t := range n {
		_, xt := q8Inputs(r, cols)
		for j := range xt {
			xt[j] *= float32(t + 1)
		}
		x = append(x, xt...)
	}
	q := new(Q8)
	quantizeQ8Rows(q, x, n, cols)
	return w, x, q
}

// TestQuantizeQ8Rows: each row of a multi-row quantization is exactly what
// QuantizeQ8 makes of that row alone, stored where q8Row finds it.
func TestQuantizeQ8Rows(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 1))
	for _, cols := range []int{1, 31, 32, 33, 200} {
		const n = 5
		_, x, q := q8RowsInputs(r, n, cols)
		nb := q8Blocks(cols)
		if len(q.Q) != n*nb*Q8Block || len(q.Scale) != n*nb {
			t.Fatalf("cols=%d: %d codes, %d scales; want %d, %d", cols, len(q.Q), len(q.Scale), n*nb*Q8Block, n*nb)
		}
		for tok := range n {
			var alone Q8
			QuantizeQ8(&alone, x[tok*cols:(tok+1)*cols])
			row := q8Row(q, tok, nb)
			for j := range alone.Q {
				if row.Q[j] != alone.Q[j] {
					t.Fatalf("cols=%d row %d code %d: %d, alone %d", cols, tok, j, row.Q[j], alone.Q[j])
				}
			}
			for b := range alone.Scale {
				if row.Scale[b] != alone.Scale[b] {
					t.Fatalf("cols=%d row %d scale %d: %g, alone %g", cols, tok, b, row.Scale[b], alone.Scale[b])
				}
			}
		}
	}
}

// TestInt8Q8Dot4: at every level, on ragged lengths, each of the four
// results of the 4-row kernel is bit-identical to the single-row integer
// product of its row (int8Q8Dot), and so within checkQ8Product's bounds of
// the float64 quantized product and of the float kernel; the rows are
// taken at an offset (t = 1) in a quantization of six.
func TestInt8Q8Dot4(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 2))
		for _, cols := range append(raggedLens[1:], 4096, 4096+40) {
			w, x, q := q8RowsInputs(r, 6, cols)
			nb := q8Blocks(cols)
			var out [4]float32
			int8Q8Dot4(w, q, 1, nb, &out)
			for k, got := range out {
				tok := 1 + k
				row := q8Row(q, tok, nb)
				if want := int8Q8Dot(w, &row); math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("cols=%d row %d: 4-row kernel %g, single-row %g", cols, tok, got, want)
				}
				checkQ8Product(t, fmt.Sprintf("cols=%d row %d", cols, tok), w, x[tok*cols:(tok+1)*cols], &row, got)
			}
		}
	})
}

// TestInt8Q8Dot4Extremes: −128 weights against ±127 codes in all four
// rows, the largest int16 pair sums, are summed exactly.
func TestInt8Q8Dot4Extremes(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		const cols = 4 * Q8Block
		w := make([]int8, cols)
		x := make([]float32, 4*cols)
		for j := range w {
			w[j] = -128
			if j%3 == 0 {
				w[j] = 127
			}
			for k := range 4 {
				x[k*cols+j] = 127 * float32(k+1)
				if j%3 == k%3 {
					x[k*cols+j] = -x[k*cols+j]
				}
			}
		}
		var q Q8
		quantizeQ8Rows(&q, x, 4, cols)
		var out [4]float32
		int8Q8Dot4(w, &q, 0, q8Blocks(cols), &out)
		for k := range out {
			var want float64
			for j := range w {
				want += float64(w[j]) * float64(q.Q[k*cols+j]) * float64(q.Scale[k*4+j/Q8Block])
			}
			if float64(out[k]) != want {
				t.Fatalf("row %d: %g, want %g", k, out[k], want)
			}
		}
	})
}

// TestRunnerIntegerRows: with Runner.Integer an n-row ApplyPair (n not a
// multiple of 4 included, split over two workers) of an INT8 matrix and a
// LUT4 one gives, for the INT8 side, every token's single-row integer
// product bit-identically (row scale × int8Q8Dot of that token's own
// quantization) and, for the LUT4 side, the float path's result
// bit-identically (the mode does not touch it); without Integer the INT8
// side is the float path's, bit-identical to a run of the same product
// with Integer off.
func TestRunnerIntegerRows(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 3))
		const rows = 24
		for _, cols := range []int{37, 200} {
			w, _ := q8Inputs(r, rows*cols)
			sc := make([]float32, rows)
			for j := range sc {
				sc[j] = float32(r.Float64() + 0.5)
			}
			i8, err := NewInt8(rows, cols, w, sc)
			if err != nil {
				t.Fatal(err)
			}
			idx := make([]uint8, rows*cols)
			for j := range idx {
				idx[j] = uint8(r.IntN(16))
			}
			lut, err := NewLUT("LUT4 per-tensor", rows, cols, 1, randVec(r, 16), idx, nil)
			if err != nil {
				t.Fatal(err)
			}
			a, b := &Linear{W: i8}, &Linear{W: lut}
			run := NewRunner(2)
			run.MinParallel = 1
			apply := func(integer bool, x []float32, n int) [2][]float32 {
				run.Integer = integer
				out := [2][]float32{make([]float32, n*rows), make([]float32, n*rows)}
				run.ApplyPair(a, b, out[0], out[1], x, n, nil)
				return out
			}
			for _, n := range []int{2, 3, 4, 5, 8, 11} {
				_, x, _ := q8RowsInputs(r, n, cols)
				in, fl := apply(true, x, n), apply(false, x, n)
				for tok := range n {
					var q Q8
					QuantizeQ8(&q, x[tok*cols:(tok+1)*cols])
					for i := range rows {
						want := int8Q8Dot(w[i*cols:(i+1)*cols], &q) * sc[i]
						if got := in[0][tok*rows+i]; math.Float32bits(got) != math.Float32bits(want) {
							t.Fatalf("cols=%d n=%d token %d row %d: %g, single-row integer %g", cols, n, tok, i, got, want)
						}
					}
				}
				for side, integer := range [2][]float32{fl[0], in[1]} {
					want := apply(false, x, n)[side]
					for i := range want {
						if math.Float32bits(integer[i]) != math.Float32bits(want[i]) {
							t.Fatalf("cols=%d n=%d side %d [%d]: %g, float path %g", cols, n, side, i, integer[i], want[i])
						}
					}
				}
			}
			run.Close()
		}
	})
}

// BenchmarkInt8Q8Rows times one 1024×4096 INT8 product over 8 and 64
// tokens through the Runner on one worker, float (Integer off: each row
// decoded and dot4) and integer (the tokens quantized once, int8Q8Dot4)
// alternating inside each iteration, at the best level here; it reports
// the median ns per weight and token of both and their ratio.
func BenchmarkInt8Q8Rows(b *testing.B) {
	const rows, cols = 1024, 4096
	r := rand.New(rand.NewPCG(21, 4))
	w, _ := q8Inputs(r, rows*cols)
	m, _ := NewInt8(rows, cols, w, randVec(r, rows))
	lin := &Linear{W: m}
	run := NewRunner(1)
	defer run.Close()
	for _, n := range []int{8, 64} {
		_, x, _ := q8RowsInputs(r, n, cols)
		y := make([]float32, n*rows)
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			var tf, ti []float64
			for b.Loop() {
				for _, integer := range []bool{false, true} {
					run.Integer = integer
					start := time.Now()
					run.Apply(lin, y, x, n)
					d := float64(time.Since(start)) / float64(rows*cols*n)
					if integer {
						ti = append(ti, d)
					} else {
						tf = append(tf, d)
					}
				}
			}
			f, i := median(tf), median(ti)
			b.ReportMetric(f, "ns/weight/token_float")
			b.ReportMetric(i, "ns/weight/token_int8")
			b.ReportMetric(f/i, "speedup")
		})
	}
}

// median is the middle value of v (sorted in place).
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
