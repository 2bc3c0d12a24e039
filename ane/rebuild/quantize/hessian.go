package quantize

import (
	"fmt"
	"math"

	"github.com/forgedaemon/forged/ane/rebuild/blas"
)

// Hessian accumulates H = XᵀX/N in float64 over calibration rows x (one
// row per token, n input features).
type Hessian struct {
	n    int
	rows int64
	sum  []float64 // XᵀX so far, n×n; only the upper triangle is kept
	buf  []float64
}

// hessianChunk bounds the float64 copy of the rows multiplied at once;
// hessianBlock is the width of the row blocks of XᵀX computed per product.
const (
	hessianChunk = 256
	hessianBlock = 256
)

// NewHessian starts an empty accumulator for n input features.
func NewHessian(n int) *Hessian {
	return &Hessian{n: n, sum: make([]float64, n*n)}
}

// N is the number of input features.
func (h *Hessian) N() int { return h.n }

// Rows is how many calibration rows were added.
func (h *Hessian) Rows() int64 { return h.rows }

// Add accumulates rows×n activations (row-major). On error nothing is added.
func (h *Hessian) Add(x []float32, rows int) error {
	if rows < 0 || len(x) != rows*h.n {
		return fmt.Errorf("hessian: %d values are not %d rows of %d features", len(x), rows, h.n)
	}
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("hessian: activation at row %d, feature %d is %v", i/h.n, i%h.n, v)
		}
	}
	if h.buf == nil {
		h.buf = make([]float64, hessianChunk*h.n)
	}
	for r0 := 0; r0 < rows; r0 += hessianChunk {
		m := min(hessianChunk, rows-r0)
		b := h.buf[:m*h.n]
		for i, v := range x[r0*h.n : (r0+m)*h.n] {
			b[i] = float64(v)
		}
		// XᵀX is symmetric: only the blocks on and above the diagonal are
		// computed (about half the work), and Finalize mirrors the upper
		// triangle, so H is exactly symmetric by construction. Nothing here
		// relies on the BLAS summing (i,j) and (j,i) alike: many do not (a
		// kernel tile's summation order depends on where it lands).
		for i0 := 0; i0 < h.n; i0 += hessianBlock {
			bi := min(hessianBlock, h.n-i0)
			blas.Dgemm(true, false, bi, h.n-i0, m, 1, b[i0:], h.n, b[i0:], h.n, 1, h.sum[i0*h.n+i0:], h.n)
		}
	}
	h.rows += int64(rows)
	return nil
}

// Finalize returns XᵀX/N (exactly symmetric); all zeros when no rows were
// added, which GPTQ treats as all inputs dead.
func (h *Hessian) Finalize() []float64 {
	out := make([]float64, h.n*h.n)
	if h.rows == 0 {
		return out
	}
	inv := 1 / float64(h.rows)
	for i := 0; i < h.n; i++ {
		for j := i; j < h.n; j++ {
			v := h.sum[i*h.n+j] * inv
			out[i*h.n+j], out[j*h.n+i] = v, v
		}
	}
	return out
}
