//go:build arm64 && !purego

package kernels

// The prefix kernels of vector.go on arm64: the NEON kernels of
// vector_arm64.s over the largest multiple of 4 elements (8 for
// axpyInt8Prefix), or nothing when the level is off. Each returns how many
// elements it did; the slices have their callers' lengths (dst, x, acc,
// out at least as long).

//go:noescape
func dotF16NEON(h *uint16, x *float32, n int) float32

//go:noescape
func axpyF16NEON(dst *float32, a float32, h *uint16, n int)

//go:noescape
func axpyInt8NEON(dst *float32, a float32, q *int8, n int)

//go:noescape
func axpyNEON(dst *float32, a float32, x *float32, n int)

//go:noescape
func scaleAxpyNEON(row *float32, s float32, acc *float32, a float32, n int)

//go:noescape
func axpyThenAxpyNEON(row *float32, a float32, x *float32, out *float32, b float32, n int)

func dotF16Prefix(h []uint16, x []float32) (int, float32) {
	if n := len(h) &^ 3; simdF16 && n > 0 {
		return n, dotF16NEON(&h[0], &x[0], n)
	}
	return 0, 0
}

func axpyF16Prefix(dst []float32, a float32, h []uint16) int {
	if n := len(h) &^ 3; simdF16 && n > 0 {
		axpyF16NEON(&dst[0], a, &h[0], n)
		return n
	}
	return 0
}

func axpyInt8Prefix(dst []float32, a float32, q []int8) int {
	if n := len(q) &^ 7; simd && n > 0 {
		axpyInt8NEON(&dst[0], a, &q[0], n)
		return n
	}
	return 0
}

func axpyPrefix(dst []float32, a float32, x []float32) int {
	if n := len(x) &^ 3; simd && n > 0 {
		axpyNEON(&dst[0], a, &x[0], n)
		return n
	}
	return 0
}

func scaleAxpyPrefix(row []float32, s float32, acc []float32, a float32) int {
	if n := len(row) &^ 3; simd && n > 0 {
		scaleAxpyNEON(&row[0], s, &acc[0], a, n)
		return n
	}
	return 0
}

func axpyThenAxpyPrefix(row []float32, a float32, x, out []float32, b float32) int {
	if n := len(row) &^ 3; simd && n > 0 {
		axpyThenAxpyNEON(&row[0], a, &x[0], &out[0], b, n)
		return n
	}
	return 0
}

func scaleAxpyRowsSIMD(S []float32, s float32, acc, a []float32) bool { return false }

func axpyThenAxpyRowsSIMD(S, a, x, out, b []float32) bool { return false }
