//go:build !amd64 || purego

package kernels

// No SIMD kernels on this platform (arm64 included): the pure-Go loops run
// everywhere. simd exists so the tests read the same on every platform.
var simd, simd512, simdF16 = false, false, false

func spinPause() {}

func dotF16AVX2(h *uint16, x *float32, n int) float32       { panic("quant: no SIMD kernels") }
func axpyF16AVX2(dst *float32, a float32, h *uint16, n int) { panic("quant: no SIMD kernels") }
func axpyInt8AVX2(dst *float32, a float32, q *int8, n int)  { panic("quant: no SIMD kernels") }
func axpyAVX2(dst *float32, a float32, x *float32, n int)   { panic("quant: no SIMD kernels") }
func scaleAxpyAVX2(row *float32, s float32, acc *float32, a float32, n int) {
	panic("quant: no SIMD kernels")
}
func axpyThenAxpyAVX2(row *float32, a float32, x *float32, out *float32, b float32, n int) {
	panic("quant: no SIMD kernels")
}

func dot(a, b []float32) float32              { return dotGo(a, b) }
func bf16Dot(w []uint16, x []float32) float32 { return bf16DotGo(w, x) }
func int8Dot(q []int8, x []float32) float32   { return int8DotGo(q, x) }

func lutNibDot(tab *[16]float32, p []uint8, x []float32) float32 { return lutNibDotGo(tab, p, x) }

func haveNibBatch() bool { return false }

func lutNibDot2x4(tabA, tabB *[16]float32, pA, pB []uint8, x []float32, stride, cols int, out *[8]float32) {
	panic("quant: no SIMD kernels")
}

func lutNibDot2(tab *[2][16]float32, p []uint8, x []float32) (s0, s1 float32, ok bool) {
	return 0, 0, false
}

func dot4(w, x0, x1, x2, x3 []float32) (s0, s1, s2, s3 float32) { return dot4Go(w, x0, x1, x2, x3) }

func lut64Dot2(tab *[2][64]float32, idx []uint8, x []float32) (s0, s1 float32, ok bool) {
	return 0, 0, false
}
