package blas

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// implementations returns the pure-Go one and, when it loads, the native one.
func implementations(t *testing.T) []Impl {
	impls := []Impl{Go()}
	if n, err := Native(); err == nil {
		impls = append(impls, n)
	} else {
		t.Logf("native BLAS not tested: %v", err)
	}
	return impls
}

func randSlice(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.NormFloat64()
	}
	return s
}

// naiveGemm is the textbook triple loop in float64.
func naiveGemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	at := func(i, p int) float64 {
		if transA {
			return a[p*lda+i]
		}
		return a[i*lda+p]
	}
	bt := func(p, j int) float64 {
		if transB {
			return b[j*ldb+p]
		}
		return b[p*ldb+j]
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				s += at(i, p) * bt(p, j)
			}
			c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
		}
	}
}

func TestGemmMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const m, n, k = 37, 29, 53
	for _, impl := range implementations(t) {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				lda, ldb, ldc := k+3, n+1, n+2
				if ta {
					lda = m + 3
				}
				if tb {
					ldb = k + 1
				}
				a, b := randSlice(r, 64*lda), randSlice(r, 64*ldb)
				c0 := randSlice(r, m*ldc)
				want := append([]float64(nil), c0...)
				naiveGemm(ta, tb, m, n, k, 0.75, a, lda, b, ldb, -0.5, want, ldc)

				got := append([]float64(nil), c0...)
				impl.Dgemm(ta, tb, m, n, k, 0.75, a, lda, b, ldb, -0.5, got, ldc)
				if d := maxRel(got, want); d > 1e-13 {
					t.Errorf("%s Dgemm(ta=%v, tb=%v): max relative difference %g", impl.Name(), ta, tb, d)
				}

				a32, b32, c32 := to32(a), to32(b), to32(c0)
				impl.Sgemm(ta, tb, m, n, k, 0.75, a32, lda, b32, ldb, -0.5, c32, ldc)
				if d := maxRel(to64(c32), want); d > 1e-5 {
					t.Errorf("%s Sgemm(ta=%v, tb=%v): max relative difference %g", impl.Name(), ta, tb, d)
				}
			}
		}
	}
}

// TestNativeMatchesGo is the "same results to rounding" contract, on a
// GPTQ-shaped product (tall error block times a wide slab of H⁻¹).
func TestNativeMatchesGo(t *testing.T) {
	nat, err := Native()
	if err != nil {
		t.Skipf("native BLAS absent, nothing to compare: %v", err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	const m, n, k = 200, 300, 128
	a, b := randSlice(r, m*k), randSlice(r, k*n)
	want, got := make([]float64, m*n), make([]float64, m*n)
	Go().Dgemm(false, false, m, n, k, 1, a, k, b, n, 0, want, n)
	nat.Dgemm(false, false, m, n, k, 1, a, k, b, n, 0, got, n)
	if d := maxRel(got, want); d > 1e-12 {
		t.Fatalf("native vs Go Dgemm: max relative difference %g", d)
	}
	h := spd(r, 150)
	l1, l2 := append([]float64(nil), h...), append([]float64(nil), h...)
	if !Go().CholeskyLower(150, l1, 150) || !nat.CholeskyLower(150, l2, 150) {
		t.Fatal("Cholesky of an SPD matrix failed")
	}
	if d := maxRel(l1, l2); d > 1e-10 {
		t.Fatalf("native vs Go Cholesky: max relative difference %g", d)
	}
	Go().InvertLower(150, l1, 150)
	nat.InvertLower(150, l2, 150)
	if d := maxRel(l1, l2); d > 1e-10 {
		t.Fatalf("native vs Go triangular inverse: max relative difference %g", d)
	}
}

// spd returns XᵀX/N + I/10 for a random X, an n×n SPD matrix.
func spd(r *rand.Rand, n int) []float64 {
	x := randSlice(r, 2*n*n)
	h := make([]float64, n*n)
	naiveGemm(true, false, n, n, 2*n, 1/float64(2*n), x, n, x, n, 0, h, n)
	for i := 0; i < n; i++ {
		h[i*n+i] += 0.1
	}
	return h
}

func TestCholeskyAndInverse(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 70
	for _, impl := range implementations(t) {
		h := spd(r, n)
		l := append([]float64(nil), h...)
		if !impl.CholeskyLower(n, l, n) {
			t.Fatalf("%s: Cholesky failed on an SPD matrix", impl.Name())
		}
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if l[i*n+j] != 0 {
					t.Fatalf("%s: upper triangle not cleared at (%d,%d)", impl.Name(), i, j)
				}
			}
		}
		llt := make([]float64, n*n)
		naiveGemm(false, true, n, n, n, 1, l, n, l, n, 0, llt, n)
		if d := maxRel(llt, h); d > 1e-12 {
			t.Errorf("%s: L·Lᵀ differs from H by %g", impl.Name(), d)
		}
		inv := append([]float64(nil), l...)
		if !impl.InvertLower(n, inv, n) {
			t.Fatalf("%s: inverse of a nonsingular triangle failed", impl.Name())
		}
		prod := make([]float64, n*n)
		naiveGemm(false, false, n, n, n, 1, l, n, inv, n, 0, prod, n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				want := 0.0
				if i == j {
					want = 1
				}
				if math.Abs(prod[i*n+j]-want) > 1e-10 {
					t.Fatalf("%s: L·L⁻¹ (%d,%d) = %g", impl.Name(), i, j, prod[i*n+j])
				}
			}
		}
		bad := []float64{1, 3, 3, 1} // eigenvalues 4 and −2
		if impl.CholeskyLower(2, bad, 2) {
			t.Errorf("%s: Cholesky accepted an indefinite matrix", impl.Name())
		}
	}
}

func maxRel(got, want []float64) float64 {
	var d, scale float64
	for i := range want {
		d = math.Max(d, math.Abs(got[i]-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
	}
	return d / math.Max(scale, 1e-300)
}

func to32(s []float64) []float32 {
	o := make([]float32, len(s))
	for i, v := range s {
		o[i] = float32(v)
	}
	return o
}

func to64(s []float32) []float64 {
	o := make([]float64, len(s))
	for i, v := range s {
		o[i] = float64(v)
	}
	return o
}

// A missing library is an error that names what was tried (the fallback
// then takes over; see pick).
func TestMissingLibraryNamed(t *testing.T) {
	saved := libraryPaths
	defer func() { libraryPaths = saved }()
	libraryPaths = []string{"libforged-no-such-blas.so.7"}
	if _, err := loadNative(); err == nil || !strings.Contains(err.Error(), "libforged-no-such-blas.so.7") {
		t.Fatalf("loading a missing library: %v", err)
	}
}
