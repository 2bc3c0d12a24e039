package cpuprobe

import (
	"sync"
	"time"
)

// Buffers are one read buffer per goroutine. Each should be much larger
// than the last-level cache, so that a pass streams from memory.
type Buffers [][]uint64

// NewBuffers allocates k buffers of size bytes each (rounded down to 8),
// every word written once so the pages are mapped before any timing.
func NewBuffers(k, size int) Buffers {
	b := make(Buffers, k)
	for g := range b {
		b[g] = make([]uint64, size/8)
		for i := range b[g] {
			b[g][i] = uint64(i)
		}
	}
	return b
}

// Sum reads buffer g from start to end and returns the sum of its words
// (returned so that the loop is not optimised away). Four accumulators
// keep the add chain from setting the pace instead of memory.
func (b Buffers) Sum(g int) uint64 {
	var s0, s1, s2, s3 uint64
	buf := b[g]
	i := 0
	for ; i+4 <= len(buf); i += 4 {
		s0 += buf[i]
		s1 += buf[i+1]
		s2 += buf[i+2]
		s3 += buf[i+3]
	}
	for ; i < len(buf); i++ {
		s0 += buf[i]
	}
	return s0 + s1 + s2 + s3
}

// sink keeps the sums alive.
var sink [64]uint64

// ReadBandwidth reads buffers 0..k-1 at once, one goroutine each, and
// returns the bytes read per second (STREAM counts a read-only kernel's
// bytes the same way), the best of passes passes.
func (b Buffers) ReadBandwidth(k, passes int) float64 {
	var bytes int
	for g := range k {
		bytes += 8 * len(b[g])
	}
	best := 0.0
	for range passes {
		start := time.Now()
		var wg sync.WaitGroup
		for g := range k {
			wg.Add(1)
			go func() { defer wg.Done(); sink[g%len(sink)] += b.Sum(g) }()
		}
		wg.Wait()
		best = max(best, float64(bytes)/time.Since(start).Seconds())
	}
	return best
}
