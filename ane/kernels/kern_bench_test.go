package kernels

import (
	"math/rand/v2"
	"testing"
)

func benchLUT(b *testing.B, cd int) {
	r := rand.New(rand.NewPCG(1, 1))
	rows, cols := 1024, 4096
	lut := randVec(r, 16*cd)
	idx := make([]uint8, rows/cd*cols)
	for i := range idx {
		idx[i] = uint8(r.IntN(16))
	}
	m, _ := NewLUT("x", rows, cols, cd, lut, idx, randVec(r, rows))
	x, y := randVec(r, cols), make([]float32, rows)
	b.SetBytes(int64(len(idx)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.mulVec(y, x, 0, rows)
	}
}

func BenchmarkKernelLUT1(b *testing.B) { benchLUT(b, 1) }
func BenchmarkKernelLUT2(b *testing.B) { benchLUT(b, 2) }
func BenchmarkKernelLUT4(b *testing.B) { benchLUT(b, 4) }
