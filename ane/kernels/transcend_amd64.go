//go:build amd64 && !purego

package kernels

// The prefix kernels of transcend.go on amd64: the AVX2+FMA kernels of
// transcend_amd64.s over the largest multiple of 8 elements, or nothing
// when the level is off. Each returns how many elements it did.

//go:noescape
func expAVX2(dst, x *float32, n int)

//go:noescape
func sigmoidAVX2(dst, x *float32, n int)

//go:noescape
func siluAVX2(dst, x *float32, n int)

func expPrefix(dst, x []float32) int {
	if n := len(x) &^ 7; simd && n > 0 {
		expAVX2(&dst[0], &x[0], n)
		return n
	}
	return 0
}

func sigmoidPrefix(dst, x []float32) int {
	if n := len(x) &^ 7; simd && n > 0 {
		sigmoidAVX2(&dst[0], &x[0], n)
		return n
	}
	return 0
}

func siluPrefix(dst, x []float32) int {
	if n := len(x) &^ 7; simd && n > 0 {
		siluAVX2(&dst[0], &x[0], n)
		return n
	}
	return 0
}
