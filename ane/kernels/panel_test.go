package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The panel path (n ≥ panelMinTokens) on every format against the dense
// float64 product (the packed codebook formats take it, the others keep
// the row path), and its defining property: each output is one chain
// of its own, so the same (row, token) comes out bit-identical whatever
// the worker split and whichever 32-token group or 12-row block it falls
// in.
func TestPanelPath(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(41, 42))
		one, three := NewRunner(1), NewRunner(3)
		defer one.Close()
		defer three.Close()
		three.MinParallel = 1
		for _, rows := range []int{8, 28} {
			for _, cols := range []int{1, 33, 203, 600} { // 600: two whole column tiles and a ragged one
				for _, fx := range fixtures(t, r, rows, cols) {
					lin, _ := NewLinear(fx.name, fx.m, nil, nil)
					const n = 40
					x := randVec(r, n*cols)
					got := make([]float32, n*rows)
					one.px = panelX{}
					one.Apply(lin, got, x, n)
					td, tiled := fx.m.(tileDecoder)
					panel := havePanel() && tiled && td.tiled()
					if ran := one.px.n == n && one.px.cols == cols; ran != panel {
						t.Fatalf("%s: the panel path ran %v, want %v", fx.name, ran, panel)
					}
					if e := maxRelErr(got, matmul64(fx.ref, rows, cols, x, n)); e > 1e-5 {
						t.Errorf("%s rows=%d cols=%d n=%d: relative error %.3g > 1e-5", fx.name, rows, cols, n, e)
					}
					split := make([]float32, n*rows)
					three.Apply(lin, split, x, n)
					if !slices.Equal(got, split) {
						t.Errorf("%s rows=%d cols=%d: three workers differ from one", fx.name, rows, cols)
					}
					// Tokens 23…39 alone (n = 17): token 23 now starts a group.
					sub := make([]float32, 17*rows)
					one.Apply(lin, sub, x[23*cols:], 17)
					if panel && !slices.Equal(sub, got[23*rows:]) {
						t.Errorf("%s rows=%d cols=%d: a token's outputs depend on its place in the block", fx.name, rows, cols)
					}
				}
			}
		}
	})
}

// The panel kernel against its Go contract, on the edge column counts, a
// row stride wider than the columns, and added to what out holds.
func TestPanelKernel(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(43, 44))
		for _, cols := range []int{0, 1, 2, 31, 257} {
			stride := cols + 3
			w, xt := randVec(r, panelRows*stride), randVec(r, cols*panelTokens)
			var got, want [panelRows * panelTokens]float32
			copy(got[:], randVec(r, len(got)))
			want = got
			panel12x32(w, stride, cols, xt, &got)
			panel12x32Go(w, stride, cols, xt, &want)
			for i := range got {
				abs := math.Abs(float64(want[i]))
				for c := range cols {
					abs += math.Abs(float64(w[(i/panelTokens)*stride+c]) * float64(xt[c*panelTokens+i%panelTokens]))
				}
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*abs {
					t.Fatalf("cols=%d out[%d] = %v, Go %v (|Δ| %.3g, Σ|terms| %.3g)", cols, i, got[i], want[i], d, abs)
				}
			}
		}
	})
}

// The panel kernels of every level give the same bits: each output is the
// same FMA chain in the AVX-512 kernel and in the AVX2 one's four blocks.
// (It compares only on a machine with both.)
func TestPanelKernelLevels(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	const cols, stride = 301, 305
	w, xt := randVec(r, panelRows*stride), randVec(r, cols*panelTokens)
	start := randVec(r, panelRows*panelTokens)
	var first *[panelRows * panelTokens]float32
	var firstLevel string
	compared := 0
	for _, l := range kernelLevels() {
		restore := useLevel(l)
		if havePanel() {
			out := new([panelRows * panelTokens]float32)
			copy(out[:], start)
			panel12x32(w, stride, cols, xt, out)
			if first == nil {
				first, firstLevel = out, l.name
			} else {
				compared++
				if *out != *first {
					t.Errorf("the panel kernel at level %s differs from level %s", l.name, firstLevel)
				}
			}
		}
		restore()
	}
	if compared == 0 {
		t.Skip("fewer than two panel kernels on this machine")
	}
}

// The SIMD decode of packed rows is the Go loop's bit for bit (one
// multiply each), for every length.
func TestDecodeNibBlocks(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(45, 46))
		var tab [16]float32
		copy(tab[:], randVec(r, 16))
		for _, n := range []int{1, 31, 32, 33, 64, 100, 1029} {
			idx := make([]uint8, n)
			for i := range idx {
				idx[i] = uint8(r.IntN(16))
			}
			p, _, _ := packNibbles(idx, 1, n)
			s := 0.3 + r.Float32()
			got := make([]float32, n)
			decodeNib(p, &tab, s, got)
			for j, i := range idx {
				if want := tab[i] * s; got[j] != want {
					t.Fatalf("n=%d value %d = %v, want tab[%d]·s = %v", n, j, got[j], i, want)
				}
			}
		}
	})
}

// The packed codebook matrices take the tiled decode.
func TestPanelTiles(t *testing.T) {
	m, _ := NewLUT("t", 2, 64, 1, make([]float32, 16), make([]uint8, 128), nil)
	if td, ok := Matrix(m).(tileDecoder); !ok || !td.tiled() {
		t.Fatal("a packed LUT does not decode by tiles")
	}
}
