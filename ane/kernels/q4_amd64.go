//go:build amd64 && !purego

package kernels

// The AVX2 kernels of q4_amd64.s take whole 32-index blocks of a packed
// row and the Q8 blocks they meet.

//go:noescape
func lutQ8DotAVX2(code *[16]int8, p *uint8, q *int8, scale *float32, blocks int) float32

//go:noescape
func lutQ8Dot2AVX2(code *[2][16]int8, p *uint8, q *int8, scale *float32, blocks int) (s0, s1 float32)

// lutQ8Prefix runs the AVX2 kernel over every block of the row.
func lutQ8Prefix(code *[16]int8, p []uint8, q *Q8) q8Done {
	nb := len(q.Scale)
	if !simd || nb == 0 {
		return q8Done{}
	}
	_ = p[nb*16-1]
	return q8Done{nb, lutQ8DotAVX2(code, &p[0], &q.Q[0], &q.Scale[0], nb)}
}

func lutQ8Prefix2(code *[2][16]int8, p []uint8, q *Q8) (q8Done, q8Done) {
	nb := len(q.Scale)
	if !simd || nb == 0 {
		return q8Done{}, q8Done{}
	}
	_ = p[nb*16-1]
	s0, s1 := lutQ8Dot2AVX2(code, &p[0], &q.Q[0], &q.Scale[0], nb)
	return q8Done{nb, s0}, q8Done{nb, s1}
}

// q4Faster reports whether the integer codebook kernel is the faster one
// here (BenchmarkLUTQ8): with AVX2 it is; with AVX-512 the float kernels
// (dot512_amd64.s) run 16 lanes and no AVX-512 integer kernel has been
// measured against them yet; without SIMD the Go loops of lutQ8DotGo
// measured slower than the float ones (bucketing, for the vector formats).
func q4Faster() bool { return simd && !simd512 }
