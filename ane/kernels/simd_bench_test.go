package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkKernelSIMD times one 1024×4096 matrix-vector product per format
// with each kernel level the machine has (pure Go, AVX2, AVX-512),
// alternating within each iteration so all see the same machine load, and
// reports the median time per stored weight of each and the median ratio
// of the fallback to the best level.
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
	levels := kernelLevels()
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			times := make([][]float64, len(levels))
			var ratio []float64 // fallback / best
			for b.Loop() {
				for k, l := range levels {
					restore := useLevel(l)
					start := time.Now()
					c.m.mulVec(y, x, 0, rows)
					times[k] = append(times[k], float64(time.Since(start)))
					restore()
				}
				ratio = append(ratio, times[0][len(times[0])-1]/times[len(levels)-1][len(times[0])-1])
			}
			med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
			for k, l := range levels {
				b.ReportMetric(med(times[k])/(rows*cols), "ns/weight_"+l.name)
			}
			b.ReportMetric(med(ratio), "speedup")
		})
	}
}

// BenchmarkKernelScaling measures the machine's own ceiling for a 2-worker
// product: the same LUT4 matrix-vector product (cache-resident 512×2048
// matrix, then a DRAM-sized 8192×8192 one) run by one goroutine, then by
// two goroutines at once each on its own matrix, alternating. It reports the
// median throughput ratio (2 goroutines' work per second ÷ one's): about 2
// on two physical cores, about 1 when the two CPUs share one core's vector
// units (SMT siblings) or its memory bandwidth. Decode's 2-vs-1-worker
// speedup (ane/ref BenchmarkDecodeThreads) cannot exceed it.
func BenchmarkKernelScaling(b *testing.B) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, sz := range []struct {
		name       string
		rows, cols int
	}{{"cache", 512, 2048}, {"dram", 8192, 8192}} {
		b.Run(sz.name, func(b *testing.B) {
			mats := make([]Matrix, 2)
			for k := range mats {
				idx := make([]uint8, sz.rows*sz.cols)
				for i := range idx {
					idx[i] = uint8(r.IntN(16))
				}
				mats[k], _ = NewLUT("scaling", sz.rows, sz.cols, 1, randVec(r, 16), idx, randVec(r, sz.rows))
			}
			x := randVec(r, sz.cols)
			ys := [][]float32{make([]float32, sz.rows), make([]float32, sz.rows)}
			reps := max(1, (64<<20)/(sz.rows*sz.cols))
			work := func(k int) {
				for range reps {
					mats[k].mulVec(ys[k], x, 0, sz.rows)
				}
			}
			var ratios []float64
			for b.Loop() {
				start := time.Now()
				work(0)
				one := time.Since(start)
				start = time.Now()
				done := make(chan struct{})
				go func() { work(1); close(done) }()
				work(0)
				<-done
				two := time.Since(start)
				ratios = append(ratios, 2*one.Seconds()/two.Seconds())
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "2thr_scaling")
		})
	}
}

// BenchmarkPoolStreaming is decode's shape: 96 different LUT4 products
// (1024×2048 each, 96 MiB of packed indices, more than the caches hold)
// one after another, by 1 and by 2 workers. It reports the stored bytes
// streamed per second: how far the products themselves scale once they are limited by
// memory bandwidth rather than by the kernel.
func BenchmarkPoolStreaming(b *testing.B) {
	r := rand.New(rand.NewPCG(25, 26))
	const rows, cols, count = 1024, 2048, 96 // 1 MiB of packed indices each
	lins := make([]*Linear, count)
	var bytes int64
	for k := range lins {
		idx := make([]uint8, rows*cols)
		for i := range idx {
			idx[i] = uint8(r.IntN(16))
		}
		m, _ := NewLUT("streaming", rows, cols, 1, randVec(r, 16), idx, randVec(r, rows))
		lins[k], _ = NewLinear("streaming", m, nil, nil)
		bytes += lins[k].Bytes()
	}
	x, y := randVec(r, cols), make([]float32, rows)
	for _, workers := range []int{1, 2} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			run := NewRunner(workers)
			defer run.Close()
			for b.Loop() {
				for _, l := range lins {
					run.Apply(l, y, x, 1)
				}
			}
			b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkKernelBatch is the matrix-matrix path (prefill, Verify): one
// 1024×4096 product over 8 and 64 tokens through the Runner on one worker,
// each kernel level alternating; it reports the median ns per stored
// weight and token at each level.
func BenchmarkKernelBatch(b *testing.B) {
	const rows, cols = 1024, 4096
	r := rand.New(rand.NewPCG(27, 28))
	idx := make([]uint8, rows/2*cols)
	for i := range idx {
		idx[i] = uint8(r.IntN(16))
	}
	m, _ := NewLUT("bench", rows, cols, 2, randVec(r, 32), idx, randVec(r, rows))
	lin, _ := NewLinear("bench", m, nil, nil)
	run := NewRunner(1)
	defer run.Close()
	levels := kernelLevels()
	for _, n := range []int{8, 64} {
		x, y := randVec(r, n*cols), make([]float32, n*rows)
		b.Run("vec2x16/tokens="+strconv.Itoa(n), func(b *testing.B) {
			times := make([][]float64, len(levels))
			for b.Loop() {
				for k, l := range levels {
					restore := useLevel(l)
					start := time.Now()
					run.Apply(lin, y, x, n)
					times[k] = append(times[k], float64(time.Since(start)))
					restore()
				}
			}
			for k, l := range levels {
				slices.Sort(times[k])
				b.ReportMetric(times[k][len(times[k])/2]/float64(rows*cols*n), "ns/weight/token_"+l.name)
			}
		})
		// The best level's alternatives, alternating on the same product:
		// four-row against two-row calls (Verify-sized blocks), the panel
		// path against the four-row kernel (prefill-sized ones).
		// Without AVX-512 the panel path's alternative is the decode of
		// each row group and dot4.
		name, flag, base, alt := "rows4", &nibBatch4, "2rows", "4rows"
		if n >= panelMinTokens {
			name, flag, base, alt = "panel", &panelOn, "4rows", "panel"
			if !haveNibBatch4() {
				base = "dot4"
			}
		}
		if n < panelMinTokens && !haveNibBatch4() || n >= panelMinTokens && !havePanel() {
			continue
		}
		b.Run("vec2x16/"+name+"/tokens="+strconv.Itoa(n), func(b *testing.B) {
			off, on := timeOffOn(b, float64(rows*cols*n), func(v bool) { *flag = v }, func() { run.Apply(lin, y, x, n) })
			*flag = true
			t0, t1 := median(off), median(on)
			b.ReportMetric(t0, "ns/weight/token_"+base)
			b.ReportMetric(t1, "ns/weight/token_"+alt)
			b.ReportMetric(t0/t1, "speedup")
		})
	}
}
