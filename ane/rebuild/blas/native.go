//go:build linux || darwin

package blas

import (
	"fmt"
	"runtime"

	"github.com/ebitengine/purego"
)

const (
	cblasRowMajor = 101
	cblasNoTrans  = 111
	cblasTrans    = 112
)

// native calls a C BLAS (cblas_*) and the Fortran LAPACK entry points of the
// same library (dpotrf_, dtrtri_, 32-bit integers).
type native struct {
	name   string
	sgemm  func(order, ta, tb, m, n, k int32, alpha float32, a *float32, lda int32, b *float32, ldb int32, beta float32, c *float32, ldc int32)
	dgemm  func(order, ta, tb, m, n, k int32, alpha float64, a *float64, lda int32, b *float64, ldb int32, beta float64, c *float64, ldc int32)
	dpotrf func(uplo *byte, n *int32, a *float64, lda *int32, info *int32)
	dtrtri func(uplo, diag *byte, n *int32, a *float64, lda *int32, info *int32)
}

func loadNative() (Impl, error) {
	var handle uintptr
	var errs []error
	var path string
	prepareLoad()
	for _, p := range libraryPaths {
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			handle, path = h, p
			break
		}
		errs = append(errs, err)
	}
	if handle == 0 {
		return nil, fmt.Errorf("cannot load %v: %v", libraryPaths, errs)
	}
	nb := &native{name: libraryName}
	for _, s := range []struct {
		name string
		fn   any
	}{{"cblas_sgemm", &nb.sgemm}, {"cblas_dgemm", &nb.dgemm}, {"dpotrf_", &nb.dpotrf}, {"dtrtri_", &nb.dtrtri}} {
		sym, err := purego.Dlsym(handle, s.name)
		if err != nil {
			return nil, fmt.Errorf("%s: missing symbol %s: %v", path, s.name, err)
		}
		purego.RegisterFunc(s.fn, sym)
	}
	return nb, nil
}

func (nb *native) Name() string { return nb.name }

func ctr(t bool) int32 {
	if t {
		return cblasTrans
	}
	return cblasNoTrans
}

func (nb *native) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		// Nothing to multiply; keep the C pointer arithmetic off empty slices.
		gonumImpl{}.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	nb.sgemm(cblasRowMajor, ctr(transA), ctr(transB), int32(m), int32(n), int32(k), alpha, &a[0], int32(lda), &b[0], int32(ldb), beta, &c[0], int32(ldc))
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
}

func (nb *native) Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		gonumImpl{}.Dgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	nb.dgemm(cblasRowMajor, ctr(transA), ctr(transB), int32(m), int32(n), int32(k), alpha, &a[0], int32(lda), &b[0], int32(ldb), beta, &c[0], int32(ldc))
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
}

// A row-major lower triangle is the column-major upper triangle of the same
// buffer, so the Fortran routines are called with 'U'.
func (nb *native) CholeskyLower(n int, a []float64, lda int) bool {
	if n == 0 {
		return true
	}
	uplo := byte('U')
	nn, ld, info := int32(n), int32(lda), int32(0)
	nb.dpotrf(&uplo, &nn, &a[0], &ld, &info)
	runtime.KeepAlive(a)
	zeroUpper(n, a, lda)
	return info == 0
}

func (nb *native) InvertLower(n int, a []float64, lda int) bool {
	if n == 0 {
		return true
	}
	uplo, diag := byte('U'), byte('N')
	nn, ld, info := int32(n), int32(lda), int32(0)
	nb.dtrtri(&uplo, &diag, &nn, &a[0], &ld, &info)
	runtime.KeepAlive(a)
	return info == 0
}
