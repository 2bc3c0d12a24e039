package kernels

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/forgedaemon/forged/internal/cpuprobe"
)

// BenchmarkStreamQ16 streams packed codebook rows that no cache holds
// (512 MiB, 4096 columns) through the fast mode's single-row kernels, as
// a decode step of a DRAM-sized export reads its matrices, on 1 and 2
// goroutines (each its own half of the rows, in q16Chunk-row calls),
// alternating with cpuprobe's plain read of as many bytes. It reports the
// median GB/s of packed indices of each and kernel / read: how far the
// kernels' software prefetch (stream_amd64.h's AHEAD) lets a core's
// stream go. Edit AHEAD to compare distances.
//
//	go test -run '^$' -bench StreamQ16 -benchtime 5x ./ane/kernels
func BenchmarkStreamQ16(b *testing.B) {
	if !q4Faster() {
		b.Skip("the integer codebook kernels do not run at this level")
	}
	const cols, size = 4096, 512 << 20
	const stride = cols / 2
	r := rand.New(rand.NewPCG(21, 20))
	nib := make([]uint8, size)
	for i := range nib {
		nib[i] = uint8(r.Uint32())
	}
	var cb intCodebook
	for t := range 2 {
		var code [16]int16
		for e := range code {
			code[e] = int16(r.IntN(4095) - 2047)
		}
		cb.setCodes(t, &code)
	}
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	var q Q16
	QuantizeQ16(&q, x, 8191)
	read := cpuprobe.NewBuffers(2, size/2)
	for _, two := range []bool{false, true} {
		name := "LUT4"
		if two {
			name = "vector2x16"
		}
		for _, k := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", name, k), func(b *testing.B) {
				var kern, plain []float64
				for b.Loop() {
					start := time.Now()
					streamQ16(&cb, two, nib, stride, &q, k)
					kern = append(kern, size/time.Since(start).Seconds()/1e9)
					plain = append(plain, read.ReadBandwidth(k, 1)/1e9)
				}
				kg, pg := median(kern), median(plain)
				b.ReportMetric(kg, "GB/s_kernel")
				b.ReportMetric(pg, "GB/s_read")
				b.ReportMetric(kg/pg, "kernel/read")
			})
		}
	}
}

// streamQ16 runs the single-row kernels of component 0 (or 0 and 1, two)
// over every packed row of nib, the rows split in k contiguous parts, one
// goroutine each.
func streamQ16(cb *intCodebook, two bool, nib []uint8, stride int, q *Q16, k int) {
	rows := len(nib) / stride
	var wg sync.WaitGroup
	for g := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out [2 * q16Chunk]float32
			for r := g * rows / k; r < (g+1)*rows/k; r += q16Chunk {
				n := min(q16Chunk, (g+1)*rows/k-r)
				if lutQ16Rows(cb, 0, two, nib, stride, q, r, r+n, out[:]) {
					continue
				}
				for i := range n {
					p := nib[(r+i)*stride:]
					if two {
						out[0], out[1] = lutQ16Dot2(cb, 0, p, q)
					} else {
						out[0] = lutQ16Dot(cb, 0, p, q)
					}
				}
			}
		}()
	}
	wg.Wait()
}
