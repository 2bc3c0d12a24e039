// Package blas is the dense linear algebra the rebuild path needs (GEMM,
// Cholesky, triangular inverse), in row-major terms.
//
// The heavy products run through a native BLAS reached with purego (no cgo):
// OpenBLAS (libopenblas.so.0) on Linux, Accelerate on macOS. When the
// library is absent, or FORGED_BLAS=go is set, the same calls run on a
// pure-Go implementation (gonum) that gives the same results to rounding;
// the choice is logged once and reported by Backend.
package blas

import (
	"log"
	"os"
	"sync"
)

// Impl is one implementation of the operations. All matrices are row-major
// with the given leading dimension (row stride).
type Impl interface {
	// Name says which implementation this is ("openblas", "accelerate", "go").
	Name() string
	// Sgemm sets C = alpha·op(A)·op(B) + beta·C with op(X) = Xᵀ when the
	// matching trans flag is set; C is m×n and the inner dimension is k.
	Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	// Dgemm is Sgemm in float64.
	Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int)
	// CholeskyLower overwrites the lower triangle of the symmetric n×n
	// matrix a with L, a = L·Lᵀ, and zeroes the strict upper triangle. It
	// reports false when a is not positive definite (a is then garbage).
	CholeskyLower(n int, a []float64, lda int) bool
	// InvertLower overwrites the lower-triangular n×n matrix a with its
	// inverse; false when a is singular.
	InvertLower(n int, a []float64, lda int) bool
}

var (
	once     sync.Once
	current  Impl
	loadErr  error
	goImpl   Impl = gonumImpl{}
	logPrint      = log.Printf
)

func pick() {
	once.Do(func() {
		if os.Getenv("FORGED_BLAS") == "go" {
			current = goImpl
			logPrint("blas: FORGED_BLAS=go: using the pure-Go implementation")
			return
		}
		n, err := loadNative()
		if err != nil {
			loadErr = err
			current = goImpl
			logPrint("blas: native BLAS unavailable (%v); using the pure-Go implementation (same results, slower)", err)
			return
		}
		current = n
	})
}

// Default returns the implementation in use: the native BLAS when it
// loaded, else the pure-Go one.
func Default() Impl { pick(); return current }

// SetDefault makes impl the implementation the package functions use and
// returns the previous one (tests compare backends end to end with it).
func SetDefault(impl Impl) Impl {
	pick()
	prev := current
	current = impl
	return prev
}

// Go returns the pure-Go implementation (always available).
func Go() Impl { return goImpl }

// Native returns the native BLAS, or the reason it could not be loaded.
func Native() (Impl, error) {
	pick()
	if loadErr != nil {
		return nil, loadErr
	}
	if current == goImpl {
		return loadNative()
	}
	return current, nil
}

// Backend names the implementation in use.
func Backend() string { return Default().Name() }

// Sgemm runs Impl.Sgemm on the default implementation.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Default().Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Dgemm runs Impl.Dgemm on the default implementation.
func Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	Default().Dgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// CholeskyLower runs Impl.CholeskyLower on the default implementation.
func CholeskyLower(n int, a []float64, lda int) bool { return Default().CholeskyLower(n, a, lda) }

// InvertLower runs Impl.InvertLower on the default implementation.
func InvertLower(n int, a []float64, lda int) bool { return Default().InvertLower(n, a, lda) }

// zeroUpper clears the strict upper triangle of a row-major n×n matrix.
func zeroUpper(n int, a []float64, lda int) {
	for i := 0; i < n; i++ {
		clear(a[i*lda+i+1 : i*lda+n])
	}
}

// checkGemm panics like a BLAS xerbla would on inconsistent arguments: these
// are programming errors, not input errors.
func checkGemm(transA, transB bool, m, n, k, lenA, lda, lenB, ldb, lenC, ldc int) {
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if m < 0 || n < 0 || k < 0 || lda < max(1, ac) || ldb < max(1, bc) || ldc < max(1, n) ||
		(ar > 0 && lenA < (ar-1)*lda+ac) || (br > 0 && lenB < (br-1)*ldb+bc) || (m > 0 && lenC < (m-1)*ldc+n) {
		panic("blas: gemm: inconsistent dimensions")
	}
}
