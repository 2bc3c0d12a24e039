//go:build arm64 && !purego

package kernels

// The integer kernels of q8_arm64.s sum blocks whole 32-value blocks: with
// SDOT where the CPU has it (simdDot), otherwise SMULL and SADALP. Both
// form the same exact int32 block sums.

//go:noescape
func int8Q8DotSDOT(w *int8, q *int8, scale *float32, blocks int) float32

//go:noescape
func int8Q8DotNEON(w *int8, q *int8, scale *float32, blocks int) float32

// q8Prefix runs the NEON kernel over the whole blocks of w.
func q8Prefix(w []int8, q *Q8) q8Done {
	nb := len(w) / Q8Block
	switch {
	case !simd || nb == 0:
		return q8Done{}
	case simdDot:
		return q8Done{nb, int8Q8DotSDOT(&w[0], &q.Q[0], &q.Scale[0], nb)}
	}
	return q8Done{nb, int8Q8DotNEON(&w[0], &q.Q[0], &q.Scale[0], nb)}
}
