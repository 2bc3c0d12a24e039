package quantize

import (
	"math"
	"testing"
)

// naiveSNR is the definition, one dot product at a time.
func naiveSNR(w, q, x []float32, rows, cols int) float64 {
	var sig, noise float64
	for t := 0; t < len(x)/cols; t++ {
		for i := 0; i < rows; i++ {
			var a, b float64
			for j := 0; j < cols; j++ {
				a += float64(w[i*cols+j]) * float64(x[t*cols+j])
				b += float64(w[i*cols+j]-q[i*cols+j]) * float64(x[t*cols+j])
			}
			sig += a * a
			noise += b * b
		}
	}
	return 10 * math.Log10(sig/noise)
}

// TestOutputSNR: equals the one-dot-at-a-time definition on shapes with a
// ragged last chunk and a single short chunk, and is +Inf for an exact
// copy or no activations.
func TestOutputSNR(t *testing.T) {
	for _, s := range []struct{ rows, cols, tokens int }{{600, 40, 7}, {20, 64, 3}, {256, 8, 1}} {
		w := randMatrix(31, s.rows, s.cols)
		x := randMatrix(32, s.tokens, s.cols)
		r, err := Fit("snr", w, s.rows, s.cols, "LUT4 per-tensor + pcs", FitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q, err := RTN(w, s.rows, s.cols, r)
		if err != nil {
			t.Fatal(err)
		}
		got, want := OutputSNR(w, q, x, s.rows, s.cols), naiveSNR(w, q, x, s.rows, s.cols)
		if math.Abs(got-want) > 1e-9*math.Abs(want) || math.IsInf(want, 0) || want < 1 {
			t.Errorf("%v: OutputSNR %v, definition %v", s, got, want)
		}
		if v := OutputSNR(w, w, x, s.rows, s.cols); !math.IsInf(v, 1) {
			t.Errorf("%v: SNR of an exact copy is %v, want +Inf", s, v)
		}
		if v := OutputSNR(w, q, nil, s.rows, s.cols); !math.IsInf(v, 1) {
			t.Errorf("%v: SNR without activations is %v, want +Inf", s, v)
		}
	}
}
