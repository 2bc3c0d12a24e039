package ref

import (
	"math"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/kernels"
	"github.com/forgedaemon/forged/ane/nn"
)

// Numeric modes, as NumericMode names them (status shows it).
const (
	ModeExact = "exact"
	ModeFast  = "fast"
)

// funcs are the elementwise functions, in the form the options select:
// the exact scalar forms (silu, softplus, in the numerics options' form)
// or, when fast, ane/kernels' vectorised ones. The slice methods are what
// the forward pass calls; each exact one computes element by element what
// the scalar form gives, so the exact mode is bit-identical to it.
type funcs struct {
	silu     func(float32) float32
	softplus func(float64) float64
	fast     bool
}

// siluTo sets dst[i] = silu(x[i]).
func (f *funcs) siluTo(dst, x []float32) { f.each(dst, x, kernels.SiLU, f.silu) }

// sigmoidTo sets dst[i] = sigmoid(x[i]).
func (f *funcs) sigmoidTo(dst, x []float32) { f.each(dst, x, kernels.Sigmoid, nn.Sigmoid) }

// expTo sets dst[i] = exp(x[i]).
func (f *funcs) expTo(dst, x []float32) { f.each(dst, x, kernels.Exp, expExact) }

// each applies the slice kernel (fast) or the scalar form (exact).
func (f *funcs) each(dst, x []float32, kernel func(dst, x []float32), scalar func(float32) float32) {
	if f.fast {
		kernel(dst, x)
		return
	}
	for i, v := range x {
		dst[i] = scalar(v)
	}
}

func expExact(x float32) float32 { return float32(math.Exp(float64(x))) }

// decayGates sets g[i] = −exp(aLog[i])·softplus(g[i] + dtBias[i]), the
// DeltaNet decay gate (exact: in float64; fast: softplus in float32).
func (f *funcs) decayGates(g, aLog, dtBias []float32) {
	if !f.fast {
		for i := range g {
			g[i] = float32(-math.Exp(float64(aLog[i])) * f.softplus(float64(g[i])+float64(dtBias[i])))
		}
		return
	}
	for i := range g {
		g[i] += dtBias[i]
	}
	kernels.Softplus(g, g)
	for i := range g {
		g[i] *= float32(-math.Exp(float64(aLog[i])))
	}
}

func newFuncs(n ane.Numerics, fast bool) funcs {
	f := funcs{silu: siluExact, softplus: softplusTorch, fast: fast}
	if n.TanhSiLU {
		f.silu = siluTanh
	}
	if n.StableSoftplus {
		f.softplus = nn.SoftplusStable
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

// NumericMode names the mode the model's functions run in: ModeFast or
// ModeExact.
func (m *Model) NumericMode() string {
	if m.fn.fast {
		return ModeFast
	}
	return ModeExact
}
