// Package nn holds the scalar and vector primitives of the qwen3_5 forward
// pass that more than one implementation needs (the reference engine and
// the reference chunk functions of the Core AI driver), so they agree by
// construction rather than by copy.
package nn

import "math"

// Sigmoid is 1/(1+e^−x).
func Sigmoid(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

// SoftplusStable is max(x,0)+log(1+exp(−|x|)): softplus without overflow,
// the form the ANE graph uses.
func SoftplusStable(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

// RMSScale is 1/sqrt(mean(x²) + eps), accumulated in float64.
func RMSScale(x []float32, eps float64) float32 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return float32(1 / math.Sqrt(s/float64(len(x))+eps))
}

// RMSNormCentered writes x·rms·(1 + w): the zero-centred norm of every
// qwen3_5 norm except the DeltaNet gated one.
func RMSNormCentered(dst, x, w []float32, eps float64) {
	r := RMSScale(x, eps)
	for i, v := range x {
		dst[i] = v * r * (1 + w[i])
	}
}

// L2Normalize scales x in place to unit length: x·rsqrt(Σx² + eps).
func L2Normalize(x []float32, eps float64) {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	r := float32(1 / math.Sqrt(s+eps))
	for i := range x {
		x[i] *= r
	}
}
