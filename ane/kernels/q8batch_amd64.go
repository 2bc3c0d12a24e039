//go:build amd64 && !purego

package kernels

// int8Q8Dot4AVX2 and int8Q8Dot4VNNI (q8batch_amd64.s) sum blocks whole
// 32-value blocks of one weight row against four activation rows, to the
// same bits.
//
//go:noescape
func int8Q8Dot4AVX2(w *int8, q *int8, qstride int, scale *float32, sstride int, blocks int) (s0, s1, s2, s3 float32)

//go:noescape
func int8Q8Dot4VNNI(w *int8, q *int8, qstride int, scale *float32, sstride int, blocks int) (s0, s1, s2, s3 float32)

// q8Prefix4 runs the SIMD kernel (VPDPBUSD with AVX-512 VNNI, 1.6× the
// VPMADDUBSW one there; the same bits as q8Prefix's) over the whole blocks of w against rows
// t…t+3 of q (nb blocks a row) and returns how many blocks it did (0:
// none, out untouched).
func q8Prefix4(w []int8, q *Q8, t, nb int, out *[4]float32) int {
	blocks := len(w) / Q8Block
	if !simd || blocks == 0 {
		return 0
	}
	_ = q.Q[(t+3)*nb*Q8Block+blocks*Q8Block-1]
	_ = q.Scale[(t+3)*nb+blocks-1]
	kernel := int8Q8Dot4AVX2
	if simdVNNI {
		kernel = int8Q8Dot4VNNI
	}
	out[0], out[1], out[2], out[3] = kernel(&w[0], &q.Q[t*nb*Q8Block], nb*Q8Block, &q.Scale[t*nb], nb*4, blocks)
	return blocks
}
