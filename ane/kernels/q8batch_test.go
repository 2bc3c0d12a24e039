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

// integerCase is one matrix of TestRunnerIntegerRows.
type integerCase struct {
	name string
	m    Matrix
}

// integerCases are an INT8 matrix and codebook matrices of every shape the
// integer matrix-matrix path decodes: scalar and vector codebooks with and
// without row scales, 16 entries packed, 64 entries, and a 16-entry one
// left unpacked by an index ≥ 16 (which reads the zero padding).
func integerCases(t *testing.T, r *rand.Rand, rows, cols int) []integerCase {
	w, _ := q8Inputs(r, rows*cols)
	sc := make([]float32, rows)
	for j := range sc {
		sc[j] = float32(r.Float64() + 0.5)
	}
	i8, err := NewInt8(rows, cols, w, sc)
	if err != nil {
		t.Fatal(err)
	}
	cases := []integerCase{{"INT8", i8}}
	for _, c := range []struct {
		name             string
		cd, entries      int
		scaled, outOfLUT bool
	}{
		{"LUT4", 1, 16, false, false}, {"LUT4+pcs", 1, 16, true, false}, {"2x16+pcs", 2, 16, true, false},
		{"4x16", 4, 16, false, false}, {"2x64+pcs", 2, 64, true, false}, {"2x16 unpacked", 2, 16, false, true},
	} {
		idx := make([]uint8, rows/c.cd*cols)
		for j := range idx {
			idx[j] = uint8(r.IntN(c.entries))
		}
		if c.outOfLUT {
			idx[len(idx)/2] = 200
		}
		var s []float32
		if c.scaled {
			s = sc
		}
		m, err := NewLUT(c.name, rows, cols, c.cd, randVec(r, c.entries*c.cd), idx, s)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, integerCase{c.name, m})
	}
	return cases
}

// q8Weights is m's rows as the integer path multiplies them: int8 codes
// and one float factor per row (INT8: its codes and row scales; a
// codebook: the int8 codebook's codes and row scale × codebook scale).
func q8Weights(m Matrix) ([]int8, []float32) {
	rows, cols := m.Rows(), m.Cols()
	codes, sc := make([]int8, rows*cols), make([]float32, rows)
	switch m := m.(type) {
	case *Int8:
		copy(codes, m.q)
		copy(sc, m.scale)
	case *LUT:
		for g := range rows / m.cd {
			m.decodeGroupQ8(g, codes[g*m.cd*cols:(g+1)*m.cd*cols])
		}
		for r := range sc {
			sc[r] = m.rowScale(r) * m.q8cb.scale
		}
	}
	return codes, sc
}

// TestRunnerIntegerRows: each integer weight (q8Weights) is within half
// the int8 codebook's step (times its row scale) of the stored weight
// (INT8: within rounding of it). With Runner.Integer, an n-row Apply (n not a
// multiple of 4 included, rows split over two workers) of a matrix whose
// q8Rows(n) holds gives every token's single-row integer product of the
// integer weights (q8Weights) bit-identically — the token's own
// quantization, its row factor times int8Q8Dot — and stays within the
// derived bound of the exact product of the stored weights (float64):
// Σ_j |w_j − ŵ_j|·|x_j| + Σ_b (s_b/2)·Σ_{j∈b} |ŵ_j|, the codebook's
// rounding (≤ codebook scale/2 × row scale a weight) plus the
// activations' (≤ s_b/2), plus float rounding. A product that does not
// take the integer path (a codebook with the AVX-512 batch kernel), and
// every product with Integer off, is within float rounding (1e-5 of
// Σ|w·x|) of the exact product.
func TestRunnerIntegerRows(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 3))
		const rows = 24
		run := NewRunner(2)
		defer run.Close()
		run.MinParallel = 1
		for _, cols := range []int{37, 200} {
			for _, c := range integerCases(t, r, rows, cols) {
				dense := Densify(c.m)
				codes, sc := q8Weights(c.m)
				step := float64(0) // INT8: the codes are the weights
				if m, ok := c.m.(*LUT); ok {
					step = float64(m.q8cb.scale)
				}
				for j, v := range dense {
					rs := float64(sc[j/cols])
					if step > 0 {
						rs /= step // the row scale alone
					}
					if d := math.Abs(float64(v) - float64(codes[j])*float64(sc[j/cols])); d > step/2*math.Abs(rs)*(1+1e-5)+1e-6*math.Abs(float64(v)) {
						t.Fatalf("%s cols=%d weight %d: %g as int8 %d × %g, |Δ| %.3g > codebook step/2", c.name, cols, j, v, codes[j], sc[j/cols], d)
					}
				}
				for _, n := range []int{2, 3, 4, 5, 8, 11} {
					_, x, _ := q8RowsInputs(r, n, cols)
					for _, mode := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
						integer := mode[0]
						run.Integer, run.IntegerCodebooks = mode[0], mode[1]
						y := make([]float32, n*rows)
						run.Apply(&Linear{W: c.m}, y, x, n)
						useInt := integer && c.m.(q8Matrix).q8Rows(n, mode[1])
						if m, ok := c.m.(*LUT); ok && integer && !useInt && m.hasQ16() && haveQ16Batch() {
							continue // the Q16 batch path: each row the single-row product (TestRunnerIntegerBatch)
						}
						for tok := range n {
							xt := x[tok*cols : (tok+1)*cols]
							var q Q8
							QuantizeQ8(&q, xt)
							for i := range rows {
								what := fmt.Sprintf("%s cols=%d n=%d integer=%v codebooks=%v token %d row %d", c.name, cols, n, integer, mode[1], tok, i)
								got := y[tok*rows+i]
								w, wq := dense[i*cols:(i+1)*cols], codes[i*cols:(i+1)*cols]
								var exact, abs, bound float64
								for j, v := range w {
									exact += float64(v) * float64(xt[j])
									abs += math.Abs(float64(v) * float64(xt[j]))
									wh := float64(wq[j]) * float64(sc[i])
									bound += math.Abs(float64(v)-wh)*math.Abs(float64(xt[j])) + float64(q.Scale[j/Q8Block])/2*math.Abs(wh)
								}
								if !useInt {
									if d := math.Abs(float64(got) - exact); d > 1e-5*abs+1e-30 {
										t.Fatalf("%s: float path %g, exact %g (|Δ| %.3g > 1e-5 × %.3g)", what, got, exact, d, abs)
									}
									continue
								}
								if want := int8Q8Dot(wq, &q) * sc[i]; math.Float32bits(got) != math.Float32bits(want) {
									t.Fatalf("%s: %g, single-row integer product %g", what, got, want)
								}
								if d := math.Abs(float64(got) - exact); d > bound+2e-5*abs+1e-30 {
									t.Fatalf("%s: integer path %g, exact %g (|Δ| %.3g > bound %.3g)", what, got, exact, d, bound)
								}
							}
						}
					}
				}
			}
		}
	})
}

// BenchmarkIntegerRows is the fast mode's matrix-matrix path against the
// float one: one 1024×4096 product over 8 and 64 tokens through the Runner
// on one worker, Integer off and on alternating inside each iteration, at
// the best level here, for INT8 per-channel and vector 2x16 + pcs
// (IntegerCodebooks; integer only where lutNibDot2x4 has no kernel). It reports the median ns per
// stored weight and token of both and their ratio.
//
//	go test -run '^$' -bench IntegerRows -benchtime 20x ./ane/kernels
func BenchmarkIntegerRows(b *testing.B) {
	const rows, cols = 1024, 4096
	r := rand.New(rand.NewPCG(21, 4))
	w, _ := q8Inputs(r, rows*cols)
	i8, _ := NewInt8(rows, cols, w, randVec(r, rows))
	idx := make([]uint8, rows/2*cols)
	for i := range idx {
		idx[i] = uint8(r.IntN(16))
	}
	v2, _ := NewLUT("vector 2x16 + pcs", rows, cols, 2, randVec(r, 32), idx, randVec(r, rows))
	run := NewRunner(1)
	defer run.Close()
	for _, c := range []integerCase{{"INT8", i8}, {"vec2x16", v2}} {
		lin := &Linear{W: c.m}
		for _, n := range []int{8, 64} {
			_, x, _ := q8RowsInputs(r, n, cols)
			y := make([]float32, n*rows)
			b.Run(fmt.Sprintf("%s/tokens=%d", c.name, n), func(b *testing.B) {
				tf, ti := timeOffOn(b, float64(rows*cols*n),
					func(on bool) { run.Integer, run.IntegerCodebooks = on, on },
					func() { run.Apply(lin, y, x, n) })
				f, i := median(tf), median(ti)
				b.ReportMetric(f, "ns/weight/token_float")
				b.ReportMetric(i, "ns/weight/token_int")
				b.ReportMetric(f/i, "speedup")
			})
		}
	}
}

// timeOffOn runs f with set(false), then with set(true), in each
// iteration of b's loop (so a busy machine loads both alike) and returns
// the times of each divided by per.
func timeOffOn(b *testing.B, per float64, set func(bool), f func()) (off, on []float64) {
	for b.Loop() {
		for _, v := range []bool{false, true} {
			set(v)
			start := time.Now()
			f()
			d := float64(time.Since(start)) / per
			if v {
				on = append(on, d)
			} else {
				off = append(off, d)
			}
		}
	}
	return off, on
}

// median is the middle value of v (sorted in place).
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
