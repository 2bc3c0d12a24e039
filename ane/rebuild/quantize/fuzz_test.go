package quantize

import (
	"encoding/binary"
	"math"
	"testing"
)

// FuzzEncodeRoundTrip: for any small matrix the fuzzer builds (any float32
// bit patterns, so NaN/Inf/huge/subnormal included), Fit either refuses it
// with an error or the RTN result encodes and decodes through ane/kernels to
// the same bits.
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 192, 0, 0, 0, 0, 205, 204, 76, 61}, uint8(0))
	f.Add([]byte{0, 0, 192, 127, 1, 0, 0, 0, 255, 255, 127, 127, 0, 0, 128, 0}, uint8(3))
	f.Add(make([]byte, 64), uint8(5))
	formats := []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "vector 4x16", "INT8 per-channel", "FP16", "LUT4 per-tensor"}
	f.Fuzz(func(t *testing.T, data []byte, pick uint8) {
		const rows = 4
		cols := len(data) / 4 / rows
		if cols == 0 || cols > 64 {
			return
		}
		w := make([]float32, rows*cols)
		for i := range w {
			w[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		format := formats[int(pick)%len(formats)]
		r, err := Fit("fuzz.w", w, rows, cols, format, FitOptions{})
		if err != nil {
			return
		}
		q, err := RTN(w, rows, cols, r)
		if err != nil {
			t.Fatalf("RTN after a successful Fit: %v", err)
		}
		e, err := r.Encode(q)
		if err != nil {
			t.Fatalf("%s: encode: %v", format, err)
		}
		back, err := Dequantize(e)
		if err != nil {
			t.Fatal(err)
		}
		for i := range q {
			if math.Float32bits(back[i]) != math.Float32bits(q[i]) {
				t.Fatalf("%s: element %d: %v decodes to %v", format, i, q[i], back[i])
			}
		}
	})
}
