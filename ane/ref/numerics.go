package ref

import (
	"math"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/nn"
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
