//go:build !amd64 || purego

package kernels

// The kernels only amd64 has (the 64-entry lookup, PAUSE), for every
// other build: arm64's NEON level included.

func spinPause() {}

func lut64Dot2(tab *[2][64]float32, idx []uint8, x []float32) (s0, s1 float32, ok bool) {
	return 0, 0, false
}
