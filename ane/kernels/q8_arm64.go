//go:build arm64 && !purego

package kernels

// int8Q8DotNEON (q8_arm64.s) sums blocks whole 32-value blocks: with SDOT
// where the CPU has it (sdot: simdDot), otherwise SMULL and SADALP. Both
// form the same exact int32 block sums.
//
//go:noescape
func int8Q8DotNEON(w *int8, q *int8, scale *float32, blocks int, sdot bool) float32

// q8Prefix runs the NEON kernel over the whole blocks of w.
func q8Prefix(w []int8, q *Q8) q8Done {
	if nb := len(w) / Q8Block; simd && nb > 0 {
		return q8Done{nb, int8Q8DotNEON(&w[0], &q.Q[0], &q.Scale[0], nb, simdDot)}
	}
	return q8Done{}
}
