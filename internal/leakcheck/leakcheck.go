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
// leak only, far above the milliseconds an exiting goroutine needs (a variable so
// this package's own test of a leak is short).
var Settle = 10 * time.Second

// Goroutines fails t unless runtime.NumGoroutine() falls to max or below
// within Settle. what names the action whose goroutines should have ended.
func Goroutines(t testing.TB, max int, what string) {
	t.Helper()
	deadline := time.Now().Add(Settle)
	for n := runtime.NumGoroutine(); n > max; n = runtime.NumGoroutine() {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines %v after %s, want at most %d", n, Settle, what, max)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
