// Command cores measures how much a second worker can add on this machine:
// the throughput of two goroutines vs one on (1) pure AVX-512 FMA work and
// (2) streaming reads from memory, median over interleaved rounds. Two
// physical cores give about 2 on both; two SMT threads of one core give
// about 1 on the FMA probe, however much memory-level parallelism helps the
// second. The engine's 2-vs-1-worker decode speedup (ane/ref
// BenchmarkDecodeThreads) is bounded by these numbers.
//
//	go run ./bench/cores
package main

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/forgedaemon/forged/internal/cpuprobe"
)

func main() {
	fmt.Printf("GOMAXPROCS %d, NumCPU %d\n", runtime.GOMAXPROCS(0), runtime.NumCPU())
	if cpuprobe.HaveFMA() {
		r := scaling(func(int) { cpuprobe.FMABurst(20_000_000) })
		fmt.Printf("pure ZMM FMA: 2 goroutines / 1 = %.2f (median of 9)\n", r)
	} else {
		fmt.Println("pure ZMM FMA: no AVX-512 here, skipped")
	}
	bufs := cpuprobe.NewBuffers(2, 256<<20)
	var sink [2]uint64
	r := scaling(func(g int) { sink[g] = bufs.Sum(g) })
	fmt.Printf("streaming read of 256 MiB each: 2 goroutines / 1 = %.2f (median of 9)\n", r)
}

// scaling runs work(0) alone, then work(0) and work(1) at once, nine times,
// and returns the median throughput ratio.
func scaling(work func(g int)) float64 {
	var ratios []float64
	for range 9 {
		start := time.Now()
		work(0)
		one := time.Since(start)
		start = time.Now()
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); work(g) }()
		}
		wg.Wait()
		ratios = append(ratios, 2*one.Seconds()/time.Since(start).Seconds())
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2]
}
