package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

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

// The delta rule's whole-state passes give the per-row calls' bits, on
// every level: rows of 128 (the AVX-512 kernels) and of other lengths
// (the loop), one row and many.
func TestStateRowsMatchPerRow(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(35, 36))
		const s = float32(0.93)
		for _, n := range []int{128, 64, 100} {
			for _, rows := range []int{1, 3, 128} {
				S0, a, b := randVec(r, rows*n), randVec(r, rows), randVec(r, rows)
				x, acc0 := randVec(r, n), randVec(r, n)

				S, acc := slices.Clone(S0), slices.Clone(acc0)
				ScaleAxpyRows(S, s, acc, a)
				wantS, wantAcc := slices.Clone(S0), slices.Clone(acc0)
				for i := range rows {
					ScaleAxpy(wantS[i*n:(i+1)*n], s, wantAcc, a[i])
				}
				if !bitsEqual(S, wantS) || !bitsEqual(acc, wantAcc) {
					t.Fatalf("ScaleAxpyRows n=%d rows=%d differs from ScaleAxpy row by row", n, rows)
				}

				S, out := slices.Clone(S0), slices.Clone(acc0)
				AxpyThenAxpyRows(S, a, x, out, b)
				wantS, wantOut := slices.Clone(S0), slices.Clone(acc0)
				for i := range rows {
					AxpyThenAxpy(wantS[i*n:(i+1)*n], a[i], x, wantOut, b[i])
				}
				if !bitsEqual(S, wantS) || !bitsEqual(out, wantOut) {
					t.Fatalf("AxpyThenAxpyRows n=%d rows=%d differs from AxpyThenAxpy row by row", n, rows)
				}
			}
		}
	})
}

func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// BenchmarkStateRows: one head's delta-rule passes (128×128) over 16
// heads, the whole-state calls against the per-row ones, alternating
// (ns per state element and pass).
func BenchmarkStateRows(b *testing.B) {
	const n, heads = 128, 16
	r := rand.New(rand.NewPCG(37, 38))
	S, k, q := randVec(r, heads*n*n), randVec(r, n), randVec(r, n)
	x, acc := randVec(r, n), make([]float32, n)
	for i := range S {
		S[i] *= 1e-3
	}
	var per, rows []float64
	for b.Loop() {
		t0 := time.Now()
		for h := range heads {
			St := S[h*n*n : (h+1)*n*n]
			for i := range n {
				ScaleAxpy(St[i*n:(i+1)*n], 0.999, acc, k[i])
			}
			for i := range n {
				AxpyThenAxpy(St[i*n:(i+1)*n], k[i]*1e-3, x, acc, q[i])
			}
		}
		t1 := time.Now()
		for h := range heads {
			St := S[h*n*n : (h+1)*n*n]
			ScaleAxpyRows(St, 0.999, acc, k)
			AxpyThenAxpyRows(St, k, x, acc, q)
		}
		per, rows = append(per, float64(t1.Sub(t0))), append(rows, float64(time.Since(t1)))
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(med(per)/(2*heads*n*n), "ns/elem_per_row")
	b.ReportMetric(med(rows)/(2*heads*n*n), "ns/elem_rows")
	b.ReportMetric(med(per)/med(rows), "speedup")
}
