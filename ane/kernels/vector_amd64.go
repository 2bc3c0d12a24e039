//go:build amd64 && !purego

package kernels

// The prefix kernels of vector.go on amd64: the AVX2 (+F16C) kernels of
// vector_amd64.s over the largest multiple of 8 elements, or nothing when
// the level is off. Each returns how many elements it did; the slices
// have their callers' lengths (dst, x, acc, out at least as long).

func dotF16Prefix(h []uint16, x []float32) (int, float32) {
	if n := len(h) &^ 7; simdF16 && n > 0 {
		return n, dotF16AVX2(&h[0], &x[0], n)
	}
	return 0, 0
}

func axpyF16Prefix(dst []float32, a float32, h []uint16) int {
	if n := len(h) &^ 7; simdF16 && n > 0 {
		axpyF16AVX2(&dst[0], a, &h[0], n)
		return n
	}
	return 0
}

func axpyInt8Prefix(dst []float32, a float32, q []int8) int {
	if n := len(q) &^ 7; simd && n > 0 {
		axpyInt8AVX2(&dst[0], a, &q[0], n)
		return n
	}
	return 0
}

func axpyPrefix(dst []float32, a float32, x []float32) int {
	if n := len(x) &^ 7; simd && n > 0 {
		axpyAVX2(&dst[0], a, &x[0], n)
		return n
	}
	return 0
}

func scaleAxpyPrefix(row []float32, s float32, acc []float32, a float32) int {
	if n := len(row) &^ 7; simd && n > 0 {
		scaleAxpyAVX2(&row[0], s, &acc[0], a, n)
		return n
	}
	return 0
}

func axpyThenAxpyPrefix(row []float32, a float32, x, out []float32, b float32) int {
	if n := len(row) &^ 7; simd && n > 0 {
		axpyThenAxpyAVX2(&row[0], a, &x[0], &out[0], b, n)
		return n
	}
	return 0
}

//go:noescape
func scaleAxpyRows128AVX512(S *float32, s float32, acc *float32, a *float32, rows int)

//go:noescape
func axpyThenAxpyRows128AVX512(S *float32, a *float32, x *float32, out *float32, b *float32, rows int)

// scaleAxpyRowsSIMD is ScaleAxpyRows in one AVX-512 call, for rows of 128
// (vector512_amd64.s); false where it does not apply.
func scaleAxpyRowsSIMD(S []float32, s float32, acc, a []float32) bool {
	if !simd512 || len(acc) != 128 || len(a) == 0 {
		return false
	}
	_ = S[len(a)*128-1]
	scaleAxpyRows128AVX512(&S[0], s, &acc[0], &a[0], len(a))
	return true
}

// axpyThenAxpyRowsSIMD is AxpyThenAxpyRows in one AVX-512 call, for rows
// of 128; false where it does not apply.
func axpyThenAxpyRowsSIMD(S, a, x, out, b []float32) bool {
	if !simd512 || len(x) != 128 || len(out) != 128 || len(a) == 0 {
		return false
	}
	_, _ = S[len(a)*128-1], b[len(a)-1]
	axpyThenAxpyRows128AVX512(&S[0], &a[0], &x[0], &out[0], &b[0], len(a))
	return true
}
