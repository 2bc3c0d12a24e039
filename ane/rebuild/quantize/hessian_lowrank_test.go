package quantize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/rebuild/blas"
)

// TestHessian: the accumulator equals XᵀX/N summed naively, whatever the
// split of rows across Add calls (including the internal chunking), and a
// bad call adds nothing.
func TestHessian(t *testing.T) {
	for _, n := range []int{9, 300} { // 300: a full and a ragged block of rows of XᵀX
		testHessian(t, n)
	}
	if z := NewHessian(3).Finalize(); slices.ContainsFunc(z, func(v float64) bool { return v != 0 }) {
		t.Fatal("empty accumulator must give zeros")
	}
}

func testHessian(t *testing.T, n int) {
	const tokens = 700
	r := rand.New(rand.NewPCG(8, uint64(n)))
	x := make([]float32, tokens*n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	want := make([]float64, n*n)
	for tk := 0; tk < tokens; tk++ {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				want[i*n+j] += float64(x[tk*n+i]) * float64(x[tk*n+j]) / tokens
			}
		}
	}
	h := NewHessian(n)
	for _, split := range [][2]int{{0, 1}, {1, 300}, {300, 700}} {
		if err := h.Add(x[split[0]*n:split[1]*n], split[1]-split[0]); err != nil {
			t.Fatal(err)
		}
	}
	bad := slices.Clone(x[:2*n])
	bad[n+4] = float32(math.Inf(1))
	if err := h.Add(bad, 2); err == nil || !strings.Contains(err.Error(), "row 1, feature 4") {
		t.Fatalf("Inf activation: %v", err)
	}
	if err := h.Add(x[:5], 1); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("5 values are not 1 rows of %d", n)) {
		t.Fatalf("short row: %v", err)
	}
	if h.Rows() != tokens {
		t.Fatalf("rows %d, want %d (bad calls must add nothing)", h.Rows(), tokens)
	}
	got := h.Finalize()
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("n=%d: H[%d] = %v, want %v", n, i, got[i], want[i])
		}
		if got[i] != got[(i%n)*n+i/n] {
			t.Fatal("H is not exactly symmetric")
		}
	}
}

// orderBLAS is a BLAS whose Dgemm gives the entries below the diagonal of
// C in the last bit differently from those above it, as a real BLAS may
// (OpenBLAS on an AVX-512 EPYC sums a kernel tile in an order that depends
// on where it lands), so XᵀX from it is not exactly symmetric; the Hessian
// must not depend on that.
type orderBLAS struct{ blas.Impl }

func (orderBLAS) Name() string { return "order-dependent" }

func (o orderBLAS) Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	o.Impl.Dgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	for i := 1; i < m; i++ {
		for j := 0; j < min(i, n); j++ {
			c[i*ldc+j] = math.Nextafter(c[i*ldc+j], math.Inf(1))
		}
	}
}

// TestHessianSymmetricWhateverTheBLAS: H is exactly symmetric by
// construction (one triangle computed, mirrored) on every BLAS, including
// one whose full product XᵀX is not symmetric, and equals the naive sum to
// rounding. No assertion depends on a BLAS's summation order.
func TestHessianSymmetricWhateverTheBLAS(t *testing.T) {
	impls := []blas.Impl{blas.Go(), orderBLAS{blas.Go()}}
	if nat, err := blas.Native(); err == nil {
		impls = append(impls, nat)
	}
	const n, m = 300, 64
	r := rand.New(rand.NewPCG(4, 4))
	x := make([]float32, m*n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	want := make([]float64, n*n)
	for tk := 0; tk < m; tk++ {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				want[i*n+j] += float64(x[tk*n+i]) * float64(x[tk*n+j])
			}
		}
	}
	asymmetric := false
	for _, impl := range impls {
		// The order-dependent BLAS really gives a non-symmetric XᵀX, so
		// the test would catch code that trusted the full product.
		xd := make([]float64, len(x))
		for i, v := range x {
			xd[i] = float64(v)
		}
		full := make([]float64, n*n)
		impl.Dgemm(true, false, n, n, m, 1, xd, n, xd, n, 0, full, n)
		for i := 0; i < n && impl.Name() == "order-dependent"; i++ {
			for j := i + 1; j < n; j++ {
				asymmetric = asymmetric || full[i*n+j] != full[j*n+i]
			}
		}
		prev := blas.SetDefault(impl)
		h := NewHessian(n)
		if err := h.Add(x, m); err != nil {
			t.Fatal(err)
		}
		got := h.Finalize()
		blas.SetDefault(prev)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if got[i*n+j] != got[j*n+i] {
					t.Fatalf("%s: H[%d,%d] = %v but H[%d,%d] = %v: not exactly symmetric", impl.Name(), i, j, got[i*n+j], j, i, got[j*n+i])
				}
				if w := want[i*n+j] / m; math.Abs(got[i*n+j]-w) > 1e-12*math.Max(1, math.Abs(w)) {
					t.Fatalf("%s: H[%d,%d] = %v, naive sum %v", impl.Name(), i, j, got[i*n+j], w)
				}
			}
		}
	}
	if !asymmetric {
		t.Fatal("the order-dependent BLAS gave a symmetric XᵀX: the test checks nothing")
	}
}

// orthonormalColumns is an n×k matrix with orthonormal columns (QR of a
// Gaussian matrix by Gram–Schmidt, written out here).
func orthonormalColumns(r *rand.Rand, n, k int) []float64 {
	x := make([]float64, n*k)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	for c := 0; c < k; c++ {
		for pass := 0; pass < 2; pass++ {
			for p := 0; p < c; p++ {
				var d float64
				for i := 0; i < n; i++ {
					d += x[i*k+p] * x[i*k+c]
				}
				for i := 0; i < n; i++ {
					x[i*k+c] -= d * x[i*k+p]
				}
			}
		}
		var s float64
		for i := 0; i < n; i++ {
			s += x[i*k+c] * x[i*k+c]
		}
		for i := 0; i < n; i++ {
			x[i*k+c] /= math.Sqrt(s)
		}
	}
	return x
}

// TestLowRank: on E = U·diag(σ)·Vᵀ with a known spectrum, the fp16 factors
// leave a residual close to the optimum sqrt(Σ_{i>k} σᵢ²) (Eckart–Young),
// the same seed gives the same bytes, and bad input is refused.
func TestLowRank(t *testing.T) {
	const rows, cols, full, rank = 120, 90, 60, 12
	r := rand.New(rand.NewPCG(9, 9))
	u, v := orthonormalColumns(r, rows, full), orthonormalColumns(r, cols, full)
	sigma := make([]float64, full)
	for i := range sigma {
		sigma[i] = 10 * math.Pow(0.8, float64(i))
	}
	e := make([]float32, rows*cols)
	var total float64
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			var s float64
			for k := 0; k < full; k++ {
				s += u[i*full+k] * sigma[k] * v[j*full+k]
			}
			e[i*cols+j] = float32(s)
			total += s * s
		}
	}
	var optimal float64
	for _, s := range sigma[rank:] {
		optimal += s * s
	}
	a, b, err := LowRank(e, rows, cols, rank, 42)
	if err != nil {
		t.Fatal(err)
	}
	resid := residual(e, a, b, rows, cols, rank)
	if resid > 1.02*math.Sqrt(optimal) || resid >= math.Sqrt(total) {
		t.Fatalf("residual %g, optimum %g, ‖E‖ %g", resid, math.Sqrt(optimal), math.Sqrt(total))
	}
	a2, b2, _ := LowRank(e, rows, cols, rank, 42)
	if !slices.Equal(a, a2) || !slices.Equal(b, b2) {
		t.Fatal("the same seed gave different factors")
	}
	a3, b3, _ := LowRank(e, rows, cols, rank, 43)
	if slices.Equal(a, a3) && slices.Equal(b, b3) {
		t.Fatal("a different seed gave bit-identical factors: the seed is not used")
	}
	if r3 := residual(e, a3, b3, rows, cols, rank); r3 > 1.02*math.Sqrt(optimal) {
		t.Fatalf("seed 43 residual %g, optimum %g", r3, math.Sqrt(optimal))
	}

	if _, _, err := LowRank(e, rows, cols, 91, 1); err == nil || !strings.Contains(err.Error(), "rank 91 must be in 1..90") {
		t.Fatalf("rank too large: %v", err)
	}
	e[7] = float32(math.NaN())
	if _, _, err := LowRank(e, rows, cols, 4, 1); err == nil || !strings.Contains(err.Error(), "is NaN") {
		t.Fatalf("NaN residual: %v", err)
	}
}

func residual(e []float32, a, b []uint16, rows, cols, rank int) float64 {
	af, bf := make([]float32, len(a)), make([]float32, len(b))
	half.F16ToF32(af, a)
	half.F16ToF32(bf, b)
	var s float64
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			d := float64(e[i*cols+j])
			for k := 0; k < rank; k++ {
				d -= float64(af[i*rank+k]) * float64(bf[k*cols+j])
			}
			s += d * d
		}
	}
	return math.Sqrt(s)
}
