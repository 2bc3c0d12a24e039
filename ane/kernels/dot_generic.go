//go:build (!amd64 && !arm64) || purego

package kernels

// No SIMD kernels on this platform: the pure-Go loops run everywhere.
// simd exists so the tests read the same on every platform. An
// architecture with kernels gets its own dot_<arch>.go (and
// vector_<arch>.go) beside dot_amd64.go and dot_arm64.go; dot_other.go
// has the fallbacks of the kernels only amd64 has.
var simd, simd512, simdF16 = false, false, false

func dot(a, b []float32) float32              { return dotGo(a, b) }
func bf16Dot(w []uint16, x []float32) float32 { return bf16DotGo(w, x) }
func int8Dot(q []int8, x []float32) float32   { return int8DotGo(q, x) }

func lutNibDot(tab *[16]float32, p []uint8, x []float32) float32 { return lutNibDotGo(tab, p, x) }

func haveNibBatch() bool { return false }

// lutNibDot2x4 is the batch kernel's contract (dot_amd64.go) in Go, for
// the tests; products use it only where haveNibBatch.
func lutNibDot2x4(tabA, tabB *[16]float32, pA, pB []uint8, x []float32, stride, cols int, out *[8]float32) {
	for t := range 4 {
		xt := x[t*stride : t*stride+cols]
		out[t], out[4+t] = lutNibDotGo(tabA, pA, xt), lutNibDotGo(tabB, pB, xt)
	}
}

func lutNibDot2(tab *[2][16]float32, p []uint8, x []float32) (s0, s1 float32, ok bool) {
	return 0, 0, false
}

func dot4(w, x0, x1, x2, x3 []float32) (s0, s1, s2, s3 float32) { return dot4Go(w, x0, x1, x2, x3) }
