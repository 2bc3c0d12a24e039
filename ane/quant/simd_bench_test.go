package quant

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// BenchmarkKernelSIMD times one 1024×4096 matrix-vector product per format
// with the SIMD kernels and with the pure-Go fallback, alternating within
// each iteration so both see the same machine load, and reports the median
// time per stored weight of each and the median fallback/SIMD ratio.
func BenchmarkKernelSIMD(b *testing.B) {
	if !simd {
		b.Skip("no SIMD kernels on this machine")
	}
	const rows, cols = 1024, 4096
	r := rand.New(rand.NewPCG(21, 22))
	lutMatrix := func(cd, entries int) Matrix {
		idx := make([]uint8, rows/cd*cols)
		for i := range idx {
			idx[i] = uint8(r.IntN(entries))
		}
		m, _ := NewLUT("bench", rows, cols, cd, randVec(r, entries*cd), idx, randVec(r, rows))
		return m
	}
	q := make([]int8, rows*cols)
	bw := make([]uint16, rows*cols)
	for i := range q {
		q[i] = int8(r.IntN(255) - 127)
		bw[i] = uint16(math.Float32bits(float32(r.NormFloat64())) >> 16)
	}
	i8, _ := NewInt8(rows, cols, q, randVec(r, rows))
	bf, _ := NewBF16(rows, cols, bw)
	f32, _ := NewF32(rows, cols, randVec(r, rows*cols))
	cases := []struct {
		name string
		m    Matrix
	}{
		{"LUT4", lutMatrix(1, 16)}, {"vec2x16", lutMatrix(2, 16)}, {"vec4x16", lutMatrix(4, 16)},
		{"vec2x64", lutMatrix(2, 64)}, {"INT8", i8}, {"BF16", bf}, {"F32", f32},
	}
	x, y := randVec(r, cols), make([]float32, rows)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			defer func() { simd = true }()
			timeOne := func(on bool) time.Duration {
				simd = on
				start := time.Now()
				c.m.mulVec(y, x, 0, rows)
				return time.Since(start)
			}
			var tGo, tSIMD, ratio []float64
			for b.Loop() {
				g, s := timeOne(false), timeOne(true)
				tGo, tSIMD = append(tGo, float64(g)), append(tSIMD, float64(s))
				ratio = append(ratio, float64(g)/float64(s))
			}
			med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
			b.ReportMetric(med(tSIMD)/(rows*cols), "ns/weight_simd")
			b.ReportMetric(med(tGo)/(rows*cols), "ns/weight_go")
			b.ReportMetric(med(ratio), "speedup")
		})
	}
}
