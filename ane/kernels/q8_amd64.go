//go:build amd64 && !purego

package kernels

// int8Q8DotAVX2 (q8_amd64.s) sums blocks whole 32-value blocks.
//
//go:noescape
func int8Q8DotAVX2(w *int8, q *int8, scale *float32, blocks int) float32

// q8Prefix runs the AVX2 kernel over the whole blocks of w.
func q8Prefix(w []int8, q *Q8) q8Done {
	if nb := len(w) / Q8Block; simd && nb > 0 {
		return q8Done{nb, int8Q8DotAVX2(&w[0], &q.Q[0], &q.Scale[0], nb)}
	}
	return q8Done{}
}
