// Package leakcheck is the tests' one way to assert that goroutines ended:
// it waits for the count to settle instead of sleeping a fixed time, which a
// loaded CI machine (or -race) can outlast.
package leakcheck

import (
	"runtime"
	"testing"
	"time"
)

// Settle is how long Goroutines waits before it fails: a bound for a real
// leak only, far above the milliseconds an exiting goroutine needs (a
// variable so this package's own test of a leak is short).
var Settle = 10 * time.Second

// Goroutines fails t unless runtime.NumGoroutine() falls to max or below
// within Settle; the failure names what and lists every goroutine's stack.
// what names the action whose goroutines should have ended. Each poll runs
// the garbage collector, so goroutines stopped by a finalizer (a dropped
// session's workers) count as ended once nothing references their owner.
func Goroutines(t testing.TB, max int, what string) {
	t.Helper()
	deadline := time.Now().Add(Settle)
	for n := runtime.NumGoroutine(); n > max; n = runtime.NumGoroutine() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines %v after %s, want at most %d:\n%s", n, Settle, what, max, buf[:runtime.Stack(buf, true)])
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
