package quant

import (
	"math"
	"testing"
)

// FuzzLUTRow feeds arbitrary index bytes (as read from an export) through
// the scalar and two-row 16-entry kernels and the 64-entry kernel: they must
// never read out of bounds, must decline exactly when an index is past the
// codebook, and otherwise agree with the 256-entry fallback.
func FuzzLUTRow(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 15, 14})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 200, 8, 9})
	f.Add(make([]byte, 41))
	var tab [2][16]float32
	var lut0, lut1 [256]float32
	for e := range 16 {
		tab[0][e], tab[1][e] = float32(e)-7.5, float32(e*e)/16
		lut0[e], lut1[e] = tab[0][e], tab[1][e]
	}
	var tab64 [2][64]float32
	var lut64 [256]float32
	for e := range 64 {
		tab64[0][e], tab64[1][e] = float32(e%9)-4, float32(e)/8
		lut64[e] = tab64[0][e]
	}
	f.Fuzz(func(t *testing.T, idx []byte) {
		x := make([]float32, len(idx))
		var abs0, abs1 float64
		valid := true
		for j, i := range idx {
			x[j] = float32(j%13) - 6
			abs0 += math.Abs(float64(lut0[i] * x[j]))
			abs1 += math.Abs(float64(lut1[i] * x[j]))
			valid = valid && i < 16
		}
		want0, want1 := lut1DotGo(&lut0, idx, x), lut1DotGo(&lut1, idx, x)
		s, ok := lut16Dot(&tab[0], idx, x)
		s0, s1, ok2 := lut16Dot2(&tab, idx, x)
		if ok != ok2 {
			t.Fatalf("scalar kernel ok=%v, pair kernel ok=%v", ok, ok2)
		}
		if simd && len(idx) >= 8 && ok != valid {
			t.Fatalf("kernel ok=%v for indices valid=%v", ok, valid)
		}
		g0, _, ok64 := lut64Dot2(&tab64, idx, x)
		valid64 := true
		var abs64 float64
		for j, i := range idx {
			valid64 = valid64 && i < 64
			abs64 += math.Abs(float64(lut64[i] * x[j]))
		}
		if simd && len(idx) >= 8 && ok64 != valid64 {
			t.Fatalf("64-entry kernel ok=%v for indices valid=%v", ok64, valid64)
		}
		if want := lut1DotGo(&lut64, idx, x); ok64 && math.Abs(float64(g0-want)) > 1e-5*abs64+1e-6 {
			t.Fatalf("64-entry kernel %v, fallback %v", g0, want)
		}
		if !ok {
			return
		}
		if !valid {
			t.Fatal("kernel accepted an index ≥ 16")
		}
		for _, c := range []struct {
			got, want float32
			abs       float64
		}{{s, want0, abs0}, {s0, want0, abs0}, {s1, want1, abs1}} {
			if math.Abs(float64(c.got-c.want)) > 1e-5*c.abs+1e-6 {
				t.Fatalf("kernel %v, fallback %v", c.got, c.want)
			}
		}
	})
}
