package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/forgedaemon/forged/ane/format/half"
)

// The attention-history kernels against float64 sums, on every kernel
// level, at ragged lengths and unaligned offsets; dst beyond len(h) must
// be left alone.
func TestVectorKernelsMatchNaive(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(31, 32))
		for _, n := range raggedLens {
			x := randVec(r, n+1)[1:]
			h := make([]uint16, n+1)[1:]
			q := make([]int8, n)
			for i := range n {
				h[i] = half.F16(float32(r.NormFloat64()))
				q[i] = int8(r.IntN(256) - 128)
			}
			var want, abs float64
			for i := range n {
				p := float64(half.F16Float(h[i])) * float64(x[i])
				want, abs = want+p, abs+math.Abs(p)
			}
			checkSum(t, "DotF16", DotF16(h, x), want, abs)

			const a = float32(-0.37)
			base := randVec(r, n+2)
			for _, c := range []struct {
				name string
				add  func(dst []float32)
				term func(i int) float64
			}{
				{"AxpyF16", func(d []float32) { AxpyF16(d, a, h) }, func(i int) float64 { return float64(a) * float64(half.F16Float(h[i])) }},
				{"AxpyInt8", func(d []float32) { AxpyInt8(d, a, q) }, func(i int) float64 { return float64(a) * float64(q[i]) }},
			} {
				dst := append([]float32(nil), base...)
				c.add(dst)
				for i := range n {
					want := float64(base[i]) + c.term(i)
					if d := math.Abs(float64(dst[i]) - want); d > 1e-6*(math.Abs(float64(base[i]))+math.Abs(c.term(i)))+1e-30 {
						t.Fatalf("%s n=%d: dst[%d] = %v, want %v", c.name, n, i, dst[i], want)
					}
				}
				for i := n; i < len(dst); i++ {
					if dst[i] != base[i] {
						t.Fatalf("%s n=%d wrote dst[%d] past the input", c.name, n, i)
					}
				}
			}
		}
	})
}

// The delta-rule kernels against float64 arithmetic, on every level.
func TestStateKernelsMatchNaive(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(33, 34))
		const a, b, s = float32(0.61), float32(-1.3), float32(0.87)
		near := func(name string, n, i int, got float32, want, scale float64) {
			if d := math.Abs(float64(got) - want); d > 1e-6*scale+1e-30 {
				t.Fatalf("%s n=%d: [%d] = %v, want %v", name, n, i, got, want)
			}
		}
		for _, n := range raggedLens {
			x, row0, acc0 := randVec(r, n+1)[1:], randVec(r, n+3)[3:], randVec(r, n)

			dst := append([]float32(nil), row0...)
			Axpy(dst, a, x)
			for i := range n {
				near("Axpy", n, i, dst[i], float64(row0[i])+float64(a)*float64(x[i]), math.Abs(float64(row0[i]))+math.Abs(float64(a*x[i])))
			}

			row, acc := append([]float32(nil), row0...), append([]float32(nil), acc0...)
			ScaleAxpy(row, s, acc, a)
			for i := range n {
				sr := float64(row0[i]) * float64(s)
				near("ScaleAxpy row", n, i, row[i], sr, math.Abs(sr))
				near("ScaleAxpy acc", n, i, acc[i], float64(acc0[i])+float64(a)*sr, math.Abs(float64(acc0[i]))+math.Abs(float64(a)*sr))
			}

			row, out := append([]float32(nil), row0...), append([]float32(nil), acc0...)
			AxpyThenAxpy(row, a, x, out, b)
			for i := range n {
				nr := float64(row0[i]) + float64(a)*float64(x[i])
				near("AxpyThenAxpy row", n, i, row[i], nr, math.Abs(float64(row0[i]))+math.Abs(float64(a*x[i])))
				near("AxpyThenAxpy out", n, i, out[i], float64(acc0[i])+float64(b)*nr, math.Abs(float64(acc0[i]))+math.Abs(float64(b)*nr)+math.Abs(float64(b*a*x[i])))
			}
		}
	})
}
