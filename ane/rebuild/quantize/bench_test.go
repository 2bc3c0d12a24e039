package quantize

import "testing"

// BenchmarkGPTQ1024 is GPTQ on a 1024×1024 matrix with LUT4 + pcs (the
// 4096 comparison with PyTorch is bench/gptq).
func BenchmarkGPTQ1024(b *testing.B) {
	const n = 1024
	w := randMatrix(1, n, n)
	h, _ := correlatedHessian(2, n, 2*n)
	r, err := Fit("bench", w, n, n, "LUT4 per-tensor + pcs", FitOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := GPTQ(w, n, n, h, r, GPTQOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKMeans2x16 is one k-means run (k-means++ and Lloyd) on 300,000
// vectors of length 2 — the vector 2x16 codebook fit of a large matrix —
// with the bound-pruned search and with the exhaustive one.
func BenchmarkKMeans2x16(b *testing.B) {
	w := randMatrix(3, 600, 1000)
	x := make([]float64, len(w))
	for i, v := range w {
		x[i] = float64(v)
	}
	wt := make([]float64, len(x)/2)
	for i := range wt {
		wt[i] = 1
	}
	for _, exhaustive := range []bool{false, true} {
		name := "bounds"
		if exhaustive {
			name = "exhaustive"
		}
		b.Run(name, func(b *testing.B) {
			km := kmeans{x: x, w: wt, cd: 2, k: 16, exhaustive: exhaustive}
			for b.Loop() {
				km.run(newRNG(1))
			}
		})
	}
}
