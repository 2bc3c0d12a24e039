//go:build !amd64 || purego

package kernels

// The kernels only amd64 has (the 64-entry lookup, PAUSE), for every
// other build: arm64's NEON level included.

func spinPause() {}

func lut64Dot2(tab *[2][64]float32, idx []uint8, x []float32) (s0, s1 float32, ok bool) {
	return 0, 0, false
}

// haveNibBatch4: no four-row matrix-matrix kernel on this build
// (lutNibDot4x4 is its contract in Go, for the tests).
func haveNibBatch4() bool { return false }

func lutNibDot4x4(q *nibQuad, p *[4][]uint8, x []float32, stride, cols int, out *[16]float32) {
	*out = [16]float32{}
	nibBatchTail(q, p, x, stride, cols, 0, out)
}
