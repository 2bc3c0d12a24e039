// Package parallel runs independent jobs on every CPU: load-time and
// build-time passes (packing an export's indices, quantizing a quick
// export, writing a synthetic checkpoint's shards) whose parts write
// nothing the others read.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls fn(i) for every i in [0, n), on up to GOMAXPROCS goroutines
// at once, each taking the next i when it is free, and returns when every
// call has. With one CPU or one job it calls fn on the calling goroutine.
func Each(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}
