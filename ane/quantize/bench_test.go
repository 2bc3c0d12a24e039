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
