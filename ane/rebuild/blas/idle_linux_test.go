package blas

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestOpenBLASThreadTimeoutSet: loading OpenBLAS sets its worker timeout
// to the minimum unless the user chose one.
func TestOpenBLASThreadTimeoutSet(t *testing.T) {
	_, set := os.LookupEnv("OPENBLAS_THREAD_TIMEOUT")
	if _, err := Native(); err != nil {
		t.Skipf("native BLAS absent: %v", err)
	}
	if got := os.Getenv("OPENBLAS_THREAD_TIMEOUT"); !set && got != "4" {
		t.Fatalf("OPENBLAS_THREAD_TIMEOUT=%q after loading, want 4", got)
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIdleWorkerCPU is one small native Dgemm followed by 20 ms of Go
// work elsewhere (a sleep), reporting the process CPU time per op: with
// OpenBLAS's default timeout its workers spin through the pause (measured
// 21.8 CPU ms per op); with the timeout prepareLoad sets they park (1.7).
// Compare by running it with OPENBLAS_THREAD_TIMEOUT=28.
func BenchmarkIdleWorkerCPU(b *testing.B) {
	nat, err := Native()
	if err != nil {
		b.Skipf("native BLAS absent: %v", err)
	}
	const n = 256
	a, c := make([]float64, n*n), make([]float64, n*n)
	for i := range a {
		a[i] = float64(i%7) - 3
	}
	c0 := processCPU()
	for b.Loop() {
		nat.Dgemm(false, false, n, n, n, 1, a, n, a, n, 0, c, n)
		time.Sleep(20 * time.Millisecond)
	}
	b.ReportMetric(float64(processCPU()-c0)/float64(b.N)/1e6, "cpu-ms/op")
}
