package blas

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkGPTQUpdate times the GPTQ lazy-block product (1024×128 errors
// times a 128×896 slab of H⁻¹) on the native BLAS and the pure-Go one in
// the same process and reports go/native.
func BenchmarkGPTQUpdate(b *testing.B) {
	nat, err := Native()
	if err != nil {
		b.Skipf("native BLAS absent: %v", err)
	}
	const m, n, k = 1024, 896, 128
	r := rand.New(rand.NewPCG(1, 1))
	a, bb, c := randSlice(r, m*k), randSlice(r, k*n), make([]float64, m*n)
	var tn, tg time.Duration
	for b.Loop() {
		t0 := time.Now()
		nat.Dgemm(false, false, m, n, k, -1, a, k, bb, n, 1, c, n)
		t1 := time.Now()
		Go().Dgemm(false, false, m, n, k, -1, a, k, bb, n, 1, c, n)
		tn, tg = tn+t1.Sub(t0), tg+time.Since(t1)
	}
	b.ReportMetric(float64(tg)/float64(tn), "go/native")
	b.ReportMetric(2*m*n*k*float64(b.N)/tn.Seconds()/1e9, "native_GFLOP/s")
}
