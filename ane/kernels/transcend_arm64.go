//go:build arm64 && !purego

package kernels

// The prefix kernels of transcend.go on arm64: the NEON kernels of
// transcend_arm64.s over the largest multiple of 4 elements, or nothing
// when the level is off. Each returns how many elements it did.

//go:noescape
func expNEON(dst, x *float32, n int)

//go:noescape
func sigmoidNEON(dst, x *float32, n int)

//go:noescape
func siluNEON(dst, x *float32, n int)

func expPrefix(dst, x []float32) int {
	if n := len(x) &^ 3; simd && n > 0 {
		expNEON(&dst[0], &x[0], n)
		return n
	}
	return 0
}

func sigmoidPrefix(dst, x []float32) int {
	if n := len(x) &^ 3; simd && n > 0 {
		sigmoidNEON(&dst[0], &x[0], n)
		return n
	}
	return 0
}

func siluPrefix(dst, x []float32) int {
	if n := len(x) &^ 3; simd && n > 0 {
		siluNEON(&dst[0], &x[0], n)
		return n
	}
	return 0
}
