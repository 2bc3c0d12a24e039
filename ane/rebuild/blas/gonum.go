package blas

import (
	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	glapack "gonum.org/v1/gonum/lapack/gonum"
)

// gonumImpl is the pure-Go fallback: gonum's BLAS (parallel GEMM with SSE
// kernels) and LAPACK, both row-major like this package.
type gonumImpl struct{}

func (gonumImpl) Name() string { return "go" }

func tr(t bool) gblas.Transpose {
	if t {
		return gblas.Trans
	}
	return gblas.NoTrans
}

func (gonumImpl) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	gonum.Implementation{}.Sgemm(tr(transA), tr(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (gonumImpl) Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	gonum.Implementation{}.Dgemm(tr(transA), tr(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (gonumImpl) CholeskyLower(n int, a []float64, lda int) bool {
	if n == 0 {
		return true
	}
	ok := glapack.Implementation{}.Dpotrf(gblas.Lower, n, a, lda)
	zeroUpper(n, a, lda)
	return ok
}

func (gonumImpl) InvertLower(n int, a []float64, lda int) bool {
	if n == 0 {
		return true
	}
	return glapack.Implementation{}.Dtrtri(gblas.Lower, gblas.NonUnit, n, a, lda)
}
