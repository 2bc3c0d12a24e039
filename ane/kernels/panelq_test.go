package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// panelQInputs is a random integer panel operand: 12 rows of codes in
// [−codeMax, codeMax] at stride, one 32-token group of column pairs with
// codes within the bound that lanes of codes all at ±codeMax allow and
// positive block scales. With extremes every code is at its limit with the
// same sign, so each block's int32 sum is the most the bounds allow.
func panelQInputs(r *rand.Rand, stride, blocks, codeMax int, extremes bool) ([]int16, []int32, []float32) {
	q16Max := int(actMaxFor(lanePicks * codeMax))
	w := make([]int16, panelRows*stride)
	for i := range w {
		w[i] = int16(r.IntN(2*codeMax+1) - codeMax)
		if extremes {
			w[i] = int16(codeMax)
		}
	}
	xq := make([]int32, blocks*Q16Block/2*panelTokens)
	for i := range xq {
		a, b := r.IntN(2*q16Max+1)-q16Max, r.IntN(2*q16Max+1)-q16Max
		if extremes {
			a, b = q16Max, q16Max
		}
		xq[i] = int32(uint32(uint16(a)) | uint32(uint16(b))<<16)
	}
	xs := make([]float32, blocks*panelTokens)
	for i := range xs {
		xs[i] = float32(math.Ldexp(0.5+r.Float64(), -20+r.IntN(10)))
	}
	return w, xq, xs
}

// The integer panel kernel against the exact product (float64 over the
// exact block sums) and its Go contract, on edge block counts, a stride
// wider than the blocks, at the int32 limit, and added to what out holds.
func TestPanelQKernel(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(51, 52))
		for _, blocks := range []int{0, 1, 2, 9} {
			for i, extremes := range []bool{false, true, true, true} {
				stride := blocks*Q16Block + 32
				codeMax := codeLevels[max(0, i-1)] // the int32 limit at every level
				w, xq, xs := panelQInputs(r, stride, blocks, codeMax, extremes)
				var got, goRef [panelRows * panelTokens]float32
				copy(got[:], randVec(r, len(got)))
				start := got
				goRef = got
				panelQ12x32(w, stride, blocks, xq, xs, &got)
				panelQ12x32Go(w, stride, blocks, xq, xs, &goRef)
				for i := range got {
					row, tok := i/panelTokens, i%panelTokens
					want, abs := float64(start[i]), math.Abs(float64(start[i]))
					for b := range blocks {
						var acc int64
						for p := b * 16; p < (b+1)*16; p++ {
							v := xq[p*panelTokens+tok]
							acc += int64(w[row*stride+2*p])*int64(int16(v)) + int64(w[row*stride+2*p+1])*int64(int16(v>>16))
						}
						want += float64(acc) * float64(xs[b*panelTokens+tok])
						abs += math.Abs(float64(acc) * float64(xs[b*panelTokens+tok]))
					}
					// One float32 rounding per block and per conversion.
					tol := 4e-7 * float64(blocks+1) * abs
					if d := math.Abs(float64(got[i]) - want); d > tol {
						t.Fatalf("blocks=%d extremes=%v out[%d] = %v, exact %v (|Δ| %.3g > %.3g)", blocks, extremes, i, got[i], want, d, tol)
					}
					if d := math.Abs(float64(goRef[i]) - want); d > tol {
						t.Fatalf("blocks=%d extremes=%v Go out[%d] = %v, exact %v (|Δ| %.3g > %.3g)", blocks, extremes, i, goRef[i], want, d, tol)
					}
				}
			}
		}
	})
}

// The integer panel kernels of every SIMD level (AVX2's four 6×16 calls,
// AVX-512 VNNI's one 12×32) give the same bits: the same exact block sums
// and the same conversion and FMA per block.
func TestPanelQKernelLevelsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(57, 58))
	const blocks = 5
	stride := blocks*Q16Block + 32
	w, xq, xs := panelQInputs(r, stride, blocks, codeLevels[0], false)
	start := randVec(r, panelRows*panelTokens)
	sameAtAmd64Levels(t, "integer panel kernel", func() []float32 {
		var got [panelRows * panelTokens]float32
		copy(got[:], start)
		panelQ12x32(w, stride, blocks, xq, xs, &got)
		return got[:]
	})
}

// The SIMD decode of packed rows to int16 codes is the Go loop's.
func TestDecodeTileQ16(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(53, 54))
		for _, cols := range []int{32, 70, 600} {
			lut := randVec(r, 32)
			idx := make([]uint8, 2*cols)
			for i := range idx {
				idx[i] = uint8(r.IntN(16))
			}
			m, err := NewLUT("vector 2x16", 4, cols, 2, lut, idx, nil)
			if err != nil {
				t.Fatal(err)
			}
			padded := (cols + 31) / 32 * 32
			for row := range 4 {
				got := make([]int16, padded)
				m.decodeTileQ16(row, 0, padded, got)
				for j := range padded {
					want := m.icb.code[row%2][0] // the padding decodes index 0
					if j < cols {
						want = m.icb.code[row%2][idx[row/2*cols+j]]
					}
					if got[j] != want {
						t.Fatalf("cols=%d row %d column %d: code %d, want %d", cols, row, j, got[j], want)
					}
				}
				if padded > 32 { // a tile that starts past the first block
					part := make([]int16, padded-32)
					m.decodeTileQ16(row, 32, padded, part)
					if !slices.Equal(part, got[32:]) {
						t.Fatalf("cols=%d row %d: the tile from column 32 differs", cols, row)
					}
				}
			}
		}
	})
}

// The integer panel path in the fast mode: it runs exactly where it
// applies (Integer, n ≥ panelMinTokens, an integer codebook), each output
// is within the codebook's and the activations' quantization bound of
// the float product (checkQ4Dot, the single-row integer product's bound,
// with the token quantized alone by QuantizeQ16), and each (row, token)
// comes out bit-identical whatever the worker split and wherever the
// token falls in the block.
func TestPanelQ16Path(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(55, 56))
		one, three := NewRunner(1), NewRunner(3)
		defer one.Close()
		defer three.Close()
		three.MinParallel = 1
		one.Integer, three.Integer = true, true
		const rows = 24
		for _, name := range codebookFormats16 {
			for _, cols := range []int{1, 33, 203, 600} {
				m, f, lut, idx, _ := randLUT(t, r, name, rows, cols, false)
				lin := &Linear{W: m}
				what := fmt.Sprintf("%s cols=%d", name, cols)
				for _, n := range []int{panelMinTokens - 1, 40} {
					_, x := q8Inputs(r, n*cols)
					got := make([]float32, n*rows)
					one.pq = panelQX{}
					one.Apply(lin, got, x, n)
					if ran, want := one.pq.n == n, n >= panelMinTokens && m.icb != nil && panelQ16Faster(); ran != want {
						t.Fatalf("%s n=%d: the integer panel path ran %v, want %v", what, n, ran, want)
					}
					if one.pq.n != n {
						continue
					}
					var q Q16
					for tok := range n {
						xt := x[tok*cols : (tok+1)*cols]
						QuantizeQ16(&q, xt, m.icb.actMax)
						for i := range rows {
							tc := i % f.CD
							var c [16]float32
							for e := range f.Entries {
								c[e] = lut[e*f.CD+tc]
							}
							checkQ4Dot(t, fmt.Sprintf("%s token %d row %d", what, tok, i), got[tok*rows+i]/m.rowScale(i), &c,
								&m.icb.code[tc], m.icb.scale[tc], idx[i/f.CD*cols:(i/f.CD+1)*cols], xt, &q)
						}
					}
					split := make([]float32, n*rows)
					three.Apply(lin, split, x, n)
					if !slices.Equal(got, split) {
						t.Errorf("%s: three workers differ from one", what)
					}
					// Tokens 23…39 alone (n = 17): token 23 now starts a group.
					sub := make([]float32, 17*rows)
					one.Apply(lin, sub, x[23*cols:], 17)
					if !slices.Equal(sub, got[23*rows:]) {
						t.Errorf("%s: a token's outputs depend on its place in the block", what)
					}
				}
			}
		}
	})
}

// BenchmarkPanelQ16 is the prefill-sized product (64 tokens, one
// 1024×4096 matrix, one worker) on the float panel path (Integer off)
// and the integer one (on), alternating; it reports the median ns per
// stored weight and token of each and the ratio.
//
//	go test -run '^$' -bench PanelQ16 -benchtime 30x ./ane/kernels
func BenchmarkPanelQ16(b *testing.B) {
	const rows, cols, n = 1024, 4096, 64
	r := rand.New(rand.NewPCG(57, 58))
	run := NewRunner(1)
	defer run.Close()
	for _, c := range []struct {
		name string
		cd   int
	}{{"LUT4+pcs", 1}, {"vec2x16+pcs", 2}} {
		idx := make([]uint8, rows/c.cd*cols)
		for i := range idx {
			idx[i] = uint8(r.IntN(16))
		}
		m, _ := NewLUT(c.name, rows, cols, c.cd, randVec(r, 16*c.cd), idx, randVec(r, rows))
		if !panelQ16Faster() {
			b.Skip("no integer panel kernel at this level")
		}
		lin := &Linear{W: m}
		x, y := randVec(r, n*cols), make([]float32, n*rows)
		b.Run(c.name, func(b *testing.B) {
			tf, ti := timeOffOn(b, float64(rows*cols*n), func(on bool) { run.Integer = on }, func() { run.Apply(lin, y, x, n) })
			run.Integer = false
			f, i := median(tf), median(ti)
			b.ReportMetric(f, "ns/weight/token_float")
			b.ReportMetric(i, "ns/weight/token_int")
			b.ReportMetric(f/i, "speedup")
		})
	}
}
