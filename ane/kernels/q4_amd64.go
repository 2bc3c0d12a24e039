//go:build amd64 && !purego

package kernels

// The AVX2 kernels of q4_amd64.s take whole 32-index blocks of a packed
// row and the Q16 blocks they meet; lo and hi are a component's code
// bytes (intCodebook).

//go:noescape
func lutQ16DotAVX2(lo, hi *[16]uint8, p *uint8, q *int16, scale *float32, blocks int) float32

//go:noescape
func lutQ16Dot2AVX2(lo0, hi0, lo1, hi1 *[16]uint8, p *uint8, q *int16, scale *float32, blocks int) (s0, s1 float32)

// lutQ16Prefix runs the AVX2 kernel over every block of the row.
func lutQ16Prefix(cb *intCodebook, t int, p []uint8, q *Q16) q8Done {
	nb := len(q.Scale)
	if !simd || nb == 0 {
		return q8Done{}
	}
	_ = p[nb*16-1]
	return q8Done{nb, lutQ16DotAVX2(&cb.lo[t], &cb.hi[t], &p[0], &q.Q[0], &q.Scale[0], nb)}
}

func lutQ16Prefix2(cb *intCodebook, t int, p []uint8, q *Q16) (q8Done, q8Done) {
	nb := len(q.Scale)
	if !simd || nb == 0 {
		return q8Done{}, q8Done{}
	}
	_ = p[nb*16-1]
	s0, s1 := lutQ16Dot2AVX2(&cb.lo[t], &cb.hi[t], &cb.lo[t+1], &cb.hi[t+1], &p[0], &q.Q[0], &q.Scale[0], nb)
	return q8Done{nb, s0}, q8Done{nb, s1}
}

// q4Faster reports whether the integer codebook kernel is the faster one
// here (BenchmarkLUTQ16): with AVX2 it is; with AVX-512 the float kernels
// (dot512_amd64.s) run 16 lanes and no AVX-512 integer kernel has been
// measured against them yet; without SIMD the Go loops (lutQ16DotGo)
// measured slower than the float ones.
func q4Faster() bool { return simd && !simd512 }
