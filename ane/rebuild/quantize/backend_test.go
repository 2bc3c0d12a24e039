package quantize

import (
	"math"
	"testing"

	"github.com/forgedaemon/forged/ane/rebuild/blas"
)

// TestBackendsAgree: GPTQ and LowRank on the native BLAS and on the pure-Go
// fallback agree to rounding: the same values except rare near-ties, the
// same proxy loss and residual to 1e-9 relative.
func TestBackendsAgree(t *testing.T) {
	nat, err := blas.Native()
	if err != nil {
		t.Skipf("native BLAS absent, nothing to compare: %v", err)
	}
	const rows, cols = 32, 384
	w := randMatrix(21, rows, cols)
	h, _ := correlatedHessian(22, cols, 800)
	r, err := Fit("agree.w", w, rows, cols, "vector 2x16 + pcs", FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		q    []float32
		info GPTQInfo
		a, b []uint16
	}
	run := func(impl blas.Impl) out {
		prev := blas.SetDefault(impl)
		defer blas.SetDefault(prev)
		q, info, err := GPTQ(w, rows, cols, h, r, GPTQOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rtn, _ := RTN(w, rows, cols, r)
		e := make([]float32, len(w))
		for i := range w {
			e[i] = w[i] - rtn[i]
		}
		a, b, err := LowRank(e, rows, cols, 8, 5)
		if err != nil {
			t.Fatal(err)
		}
		return out{q, info, a, b}
	}
	g, n := run(blas.Go()), run(nat)
	diff := 0
	for i := range g.q {
		if g.q[i] != n.q[i] {
			diff++
		}
	}
	if diff > len(g.q)/1000 {
		t.Fatalf("%d of %d GPTQ values differ between the Go and native BLAS", diff, len(g.q))
	}
	if math.Abs(g.info.Loss-n.info.Loss) > 1e-9*math.Abs(n.info.Loss) && diff == 0 {
		t.Fatalf("proxy loss %v (Go) vs %v (native)", g.info.Loss, n.info.Loss)
	}
	e := make([]float32, len(w))
	rtn, _ := RTN(w, rows, cols, r)
	for i := range w {
		e[i] = w[i] - rtn[i]
	}
	rg, rn := residual(e, g.a, g.b, rows, cols, 8), residual(e, n.a, n.b, rows, cols, 8)
	if math.Abs(rg-rn) > 1e-3*rn {
		t.Fatalf("low-rank residual %v (Go) vs %v (native)", rg, rn)
	}
}
