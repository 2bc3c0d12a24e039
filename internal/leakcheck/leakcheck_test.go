package leakcheck

import (
	"runtime"
	"testing"
	"time"
)

// A goroutine that ends while Goroutines waits is not a leak.
func TestGoroutinesWaitsForExit(t *testing.T) {
	before := runtime.NumGoroutine()
	release := make(chan struct{})
	exited := make(chan struct{})
	go func() { <-release; close(exited) }()
	close(release)
	Goroutines(t, before, "a goroutine was released")
	<-exited
}

// One that never ends is reported, naming the counts.
func TestGoroutinesReportsLeak(t *testing.T) {
	defer func(d time.Duration) { Settle = d }(Settle)
	Settle = 100 * time.Millisecond
	block := make(chan struct{})
	defer close(block)
	before := runtime.NumGoroutine()
	go func() { <-block }()
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { recover() }() // fatalRecorder panics to stop like FailNow
		Goroutines(ft, before, "starting a blocked goroutine")
	}()
	<-done
	if ft.msg == "" {
		t.Fatal("a goroutine that never ends was not reported")
	}
}

type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	panic("fatal")
}
