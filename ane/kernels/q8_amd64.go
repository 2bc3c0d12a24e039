//go:build amd64 && !purego

package kernels

// int8Q8DotAVX2 (q8_amd64.s) sums blocks whole 32-value blocks.
//
//go:noescape
func int8Q8DotAVX2(w *int8, q *int8, scale *float32, blocks int) float32

// q8Prefix runs the AVX2 kernel over the whole blocks of w, at the AVX-512
// levels too: a one-row VPDPBUSD form (a pair of blocks a ZMM, as
// int8Q8Dot4VNNI) measured 0.93× its speed (docs/KERNELS.md), and both
// give the same bits.
func q8Prefix(w []int8, q *Q8) q8Done {
	if nb := len(w) / Q8Block; simd && nb > 0 {
		return q8Done{nb, int8Q8DotAVX2(&w[0], &q.Q[0], &q.Scale[0], nb)}
	}
	return q8Done{}
}
