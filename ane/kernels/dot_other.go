//go:build !amd64 || purego

package kernels

// The kernels only amd64 has (the 64-entry lookup, the nibble batch
// kernel, PAUSE), for every other build: arm64's NEON level included.

func spinPause() {}

func haveNibBatch() bool { return false }

// lutNibDot2x4 is the amd64 batch kernel's contract (dot_amd64.go) in Go,
// for the tests; products use it only where haveNibBatch.
func lutNibDot2x4(tabA, tabB *[16]float32, pA, pB []uint8, x []float32, stride, cols int, out *[8]float32) {
	for t := range 4 {
		xt := x[t*stride : t*stride+cols]
		out[t], out[4+t] = lutNibDotGo(tabA, pA, xt), lutNibDotGo(tabB, pB, xt)
	}
}

func lut64Dot2(tab *[2][64]float32, idx []uint8, x []float32) (s0, s1 float32, ok bool) {
	return 0, 0, false
}
