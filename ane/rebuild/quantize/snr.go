package quantize

import (
	"math"

	"github.com/forgedaemon/forged/ane/rebuild/blas"
)

// snrChunk is how many output rows of W and W−Q are multiplied at once; it
// bounds the float64 copies to 2·snrChunk·cols values.
const snrChunk = 256

// OutputSNR is the layer-output signal-to-noise ratio in dB of the
// quantized q against w (both rows×cols) on the activations x (one row of
// cols features per token): 10·log10(‖X·Wᵀ‖² / ‖X·(W−Q)ᵀ‖²), +Inf when the
// two outputs are equal. W−Q is formed in float32, as the export stores
// both; the products run in float64 through the BLAS, a chunk of output
// rows at a time.
func OutputSNR(w, q, x []float32, rows, cols int) float64 {
	n := len(x) / cols
	if n == 0 {
		return math.Inf(1)
	}
	xd := make([]float64, n*cols)
	for i, v := range x[:n*cols] {
		xd[i] = float64(v)
	}
	m := min(snrChunk, rows)
	// Rows 0..m−1 of wd hold W's chunk, rows m..2m−1 the same rows of W−Q,
	// so one product gives both outputs.
	wd := make([]float64, 2*m*cols)
	y := make([]float64, n*2*m)
	var sig, noise float64
	for r0 := 0; r0 < rows; r0 += m {
		c := min(m, rows-r0)
		for i := 0; i < c; i++ {
			wr, qr := w[(r0+i)*cols:(r0+i+1)*cols], q[(r0+i)*cols:(r0+i+1)*cols]
			sr, nr := wd[i*cols:(i+1)*cols], wd[(m+i)*cols:(m+i+1)*cols]
			for j, v := range wr {
				sr[j] = float64(v)
				nr[j] = float64(v - qr[j])
			}
		}
		if c < m { // the last chunk: clear the rows it does not fill
			clear(wd[c*cols : m*cols])
			clear(wd[(m+c)*cols:])
		}
		blas.Dgemm(false, true, n, 2*m, cols, 1, xd, cols, wd, cols, 0, y, 2*m)
		for t := 0; t < n; t++ {
			for i, v := range y[t*2*m : (t+1)*2*m] {
				if i < m {
					sig += v * v
				} else {
					noise += v * v
				}
			}
		}
	}
	if noise == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(sig/noise)
}
