package quantize

import (
	"math"

	"github.com/forgedaemon/forged/ane/format/half"
)

// snapFP8 is the "FP8 LUT" option: c ← e4m3(c/s)·s with s = fp16(max|c|/240).
func snapFP8(c []float32) {
	var m float64
	for _, v := range c {
		m = math.Max(m, math.Abs(float64(v)))
	}
	s := float64(half.F16Float(half.F16(float32(m / 240))))
	if s == 0 {
		return
	}
	for i, v := range c {
		c[i] = float32(e4m3(float64(v)/s) * s)
	}
}

// e4m3 rounds x to the nearest FP8 E4M3 value (3 mantissa bits, exponent
// ≥ −6 with subnormals below, saturating at ±448), ties to even.
func e4m3(x float64) float64 {
	a := math.Abs(x)
	if a == 0 || math.IsNaN(x) {
		return x
	}
	_, e := math.Frexp(a) // a = f·2^e, f in [0.5, 1)
	exp := max(e-1, -6)
	step := math.Ldexp(1, exp-3)
	r := math.Min(math.RoundToEven(a/step)*step, 448)
	return math.Copysign(r, x)
}
