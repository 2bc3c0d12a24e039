package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestEachCallsEveryIndexOnce: every index in [0, n) exactly once, none
// outside, for n around the worker count and zero.
func TestEachCallsEveryIndexOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{0, 1, 3, 4, 5, 1000} {
		calls := make([]atomic.Int32, n)
		Each(n, func(i int) { calls[i].Add(1) })
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n %d: index %d called %d times", n, i, c)
			}
		}
	}
}

// TestEachRunsAtOnce: with two CPUs, two jobs that each wait for the
// other to start both finish (run one after the other, the first would
// wait for ever: the test fails after a timeout instead), and never more
// than two run at once.
func TestEachRunsAtOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var running, most atomic.Int32
	started := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Each(6, func(i int) {
			r := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
			}
			if i < 2 {
				close(started[i])
				<-started[1-i]
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("two jobs waiting for each other never both ran: Each ran them one at a time")
	}
	if m := most.Load(); m > 2 {
		t.Fatalf("%d jobs ran at once with GOMAXPROCS 2", m)
	}
}
