package ref

import (
	"math"

	"github.com/forgedaemon/forged/ane"
)

// funcs are the elementwise functions, in the form the numerics options select.
type funcs struct {
	silu     func(float32) float32
	softplus func(float64) float64
}

func newFuncs(n ane.Numerics) funcs {
	f := funcs{silu: siluExact, softplus: softplusTorch}
	if n.TanhSiLU {
		f.silu = siluTanh
	}
	if n.StableSoftplus {
		f.softplus = softplusStable
	}
	return f
}

func siluExact(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) }

// siluTanh is the ANE graph's form: 0.5·x·(1 + tanh(x/2)).
func siluTanh(x float32) float32 { return 0.5 * x * (1 + float32(math.Tanh(float64(x)/2))) }

// softplusTorch is torch.nn.functional.softplus (beta 1, threshold 20).
func softplusTorch(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

// softplusStable is the graph's overflow-safe form relu(x) + log(1 + exp(−|x|)).
func softplusStable(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

func sigmoid(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

// rmsScale is 1/sqrt(mean(x²) + eps), accumulated in float64.
func rmsScale(x []float32, eps float64) float32 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return float32(1 / math.Sqrt(s/float64(len(x))+eps))
}

// rmsNormCentered writes x·rms·(1 + w): the zero-centred norm of every
// qwen3_5 norm except the DeltaNet gated one.
func rmsNormCentered(dst, x, w []float32, eps float64) {
	r := rmsScale(x, eps)
	for i, v := range x {
		dst[i] = v * r * (1 + w[i])
	}
}

// l2Normalize scales x to unit length: x·rsqrt(Σx² + eps).
func l2Normalize(x []float32, eps float64) {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	r := float32(1 / math.Sqrt(s+eps))
	for i := range x {
		x[i] *= r
	}
}
