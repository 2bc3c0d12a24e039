//go:build amd64 && !purego

package kernels

// int8Q8DotAVX2 and int8Q8DotVNNI (q8_amd64.s) sum blocks whole 32-value
// blocks, to the same bits.
//
//go:noescape
func int8Q8DotAVX2(w *int8, q *int8, scale *float32, blocks int) float32

//go:noescape
func int8Q8DotVNNI(w *int8, q *int8, scale *float32, blocks int) float32

// q8Prefix runs the SIMD kernel over the whole blocks of w: VPDPBUSD with
// AVX-512 VNNI, VPMADDUBSW otherwise.
func q8Prefix(w []int8, q *Q8) q8Done {
	nb := len(w) / Q8Block
	switch {
	case nb == 0:
	case simdVNNI:
		return q8Done{nb, int8Q8DotVNNI(&w[0], &q.Q[0], &q.Scale[0], nb)}
	case simd:
		return q8Done{nb, int8Q8DotAVX2(&w[0], &q.Q[0], &q.Scale[0], nb)}
	}
	return q8Done{}
}
