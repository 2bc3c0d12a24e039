package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// ord maps float32 to integers in the order of their values, adjacent
// floats 1 apart (+0 and −0 both 0).
func ord(f float32) int64 {
	b := int64(math.Float32bits(f))
	if b&(1<<31) != 0 {
		return -(b &^ (1 << 31))
	}
	return b
}

func fromOrd(o int64) float32 {
	if o < 0 {
		return math.Float32frombits(uint32(-o) | 1<<31)
	}
	return math.Float32frombits(uint32(o))
}

// ulpDist is the distance of two float32 in units in the last place.
func ulpDist(a, b float32) int64 {
	d := ord(a) - ord(b)
	return max(d, -d)
}

// transcendental is one slice kernel and its float64 reference.
type transcendental struct {
	name string
	f    func(dst, x []float32)
	ref  func(x float64) float64
}

var transcendentals = []transcendental{
	{"exp", Exp, math.Exp},
	{"sigmoid", Sigmoid, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }},
	{"silu", SiLU, func(x float64) float64 { return x / (1 + math.Exp(-x)) }},
	{"softplus", Softplus, func(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }},
}

// maxULP runs tr over the floats in [lo, hi] at stride (stride 1: every
// one), in batches of ragged length so the Go tail runs too, and returns
// the worst ulp error against the float64 reference rounded to float32 and
// where it is. A NaN where the reference has none (or the reverse) counts
// as the worst possible error.
func maxULP(tr transcendental, lo, hi float32, stride int64) (worst int64, at float32) {
	x := make([]float32, 0, 4099)
	got := make([]float32, 4099)
	check := func() {
		tr.f(got, x)
		for i, v := range x {
			want := float32(tr.ref(float64(v)))
			u := ulpDist(got[i], want)
			if (got[i] != got[i]) != (want != want) {
				u = math.MaxInt64
			} else if want != want {
				u = 0
			} else if v < -87.33655 && float64(abs32(got[i]-want)) <= 2*(math.Abs(float64(v))+1)*math.SmallestNonzeroFloat32 {
				// Below ln(2^−126), exp(x) is subnormal, with few
				// significant bits; SiLU (x·exp(x)) then carries an
				// absolute error up to 2(|x|+1)·2^−149 (exp's ulp there).
				u = 0
			}
			if u > worst {
				worst, at = u, v
			}
		}
		x = x[:0]
	}
	for o := ord(lo); o <= ord(hi); o += stride {
		if x = append(x, fromOrd(o)); len(x) == cap(x) {
			check()
		}
	}
	check()
	return worst, at
}

// TestTranscendentalULP: every function at every kernel level, within 2
// ulp over a dense sweep of [−104, 89] (past both ends of exp's finite
// range), exhaustively over whole binades around 1 and over exp's
// subnormal and near-overflow ranges, and sparsely over all finite floats.
func TestTranscendentalULP(t *testing.T) {
	sweeps := []struct {
		lo, hi float32
		stride int64
	}{
		{-104, 89, 97},
		{1, 2, 1},
		{-1, -0.5, 1},
		{-104, -87, 1}, // exp's subnormal results
		{80, 89, 1},    // exp's overflow threshold
		{-math.MaxFloat32, math.MaxFloat32, 1 << 14},
	}
	if testing.Short() {
		for i := range sweeps {
			sweeps[i].stride *= 64
		}
	}
	withSIMD(t, func(t *testing.T) {
		for _, tr := range transcendentals {
			for _, s := range sweeps {
				worst, at := maxULP(tr, s.lo, s.hi, s.stride)
				if worst > 2 {
					t.Errorf("%s over [%g, %g] stride %d: %d ulp at x = %g (got %g, want %g)", tr.name, s.lo, s.hi, s.stride,
						worst, at, eval(tr, at), float32(tr.ref(float64(at))))
				}
				t.Logf("%s [%g, %g] stride %d: max %d ulp", tr.name, s.lo, s.hi, s.stride, worst)
			}
		}
	})
}

func eval(tr transcendental, x float32) float32 {
	out := make([]float32, 9)
	in := make([]float32, 9)
	for i := range in {
		in[i] = x
	}
	tr.f(out, in)
	return out[0]
}

// TestTranscendentalSpecials: ±0, ±Inf, NaN and the limits of exp's range,
// in the SIMD body (lane 0 of 8) and in the Go tail (the ninth element).
func TestTranscendentalSpecials(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	maxArg := float32(88.72283) // the largest x with exp(x) finite in float32
	minSub := float32(math.SmallestNonzeroFloat32)
	cases := []struct {
		name string
		f    func(dst, x []float32)
		x    float32
		want float32
	}{
		{"exp", Exp, 0, 1},
		{"exp", Exp, negZero, 1},
		{"exp", Exp, inf, inf},
		{"exp", Exp, -inf, 0},
		{"exp", Exp, nan, nan},
		{"exp", Exp, 89, inf},
		{"exp", Exp, 1000, inf},
		{"exp", Exp, -1000, 0},
		{"exp", Exp, -104, 0},
		{"exp", Exp, -103.2789, minSub},
		{"sigmoid", Sigmoid, 0, 0.5},
		{"sigmoid", Sigmoid, negZero, 0.5},
		{"sigmoid", Sigmoid, inf, 1},
		{"sigmoid", Sigmoid, -inf, 0},
		{"sigmoid", Sigmoid, nan, nan},
		{"sigmoid", Sigmoid, 200, 1},
		{"silu", SiLU, 0, 0},
		{"silu", SiLU, negZero, negZero},
		{"silu", SiLU, inf, inf},
		{"silu", SiLU, -inf, nan}, // x/(1+exp(−x)) is −Inf/Inf
		{"silu", SiLU, nan, nan},
		{"silu", SiLU, 200, 200},
		{"softplus", Softplus, 0, float32(math.Ln2)},
		{"softplus", Softplus, inf, inf},
		{"softplus", Softplus, -inf, 0},
		{"softplus", Softplus, nan, nan},
		{"softplus", Softplus, 200, 200},
	}
	withSIMD(t, func(t *testing.T) {
		if got := eval(transcendentals[0], maxArg); math.IsInf(float64(got), 0) {
			t.Errorf("exp(%g) = %g, want finite", maxArg, got)
		}
		for _, c := range cases {
			in := make([]float32, 9)
			for i := range in {
				in[i] = c.x
			}
			out := make([]float32, 9)
			c.f(out, in)
			for _, i := range []int{0, 8} {
				g := out[i]
				same := math.Float32bits(g) == math.Float32bits(c.want) || (g != g && c.want != c.want)
				if !same {
					t.Errorf("%s(%g) element %d = %g (%#x), want %g (%#x)", c.name, c.x, i, g, math.Float32bits(g), c.want, math.Float32bits(c.want))
				}
			}
		}
	})
}

// TestTranscendentalInPlace: dst may alias x, and a longer dst keeps its tail.
func TestTranscendentalInPlace(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		for _, tr := range transcendentals {
			for _, n := range raggedLens {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(i%23) - 11.5
				}
				want := make([]float32, n+1)
				want[n] = 42
				tr.f(want, x)
				if want[n] != 42 {
					t.Fatalf("%s n=%d wrote past len(x)", tr.name, n)
				}
				tr.f(x, x)
				for i := range x {
					if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s n=%d in place: [%d] = %g, want %g", tr.name, n, i, x[i], want[i])
					}
				}
			}
		}
	})
}

// A value's bits do not depend on where its slice begins or ends: the
// pool hands workers ranges whose ends move with the split, so a range's
// last few values must get the same bits as the vector lanes give them.
func TestTranscendentalBitsIndependentOfTheSlice(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		x := make([]float32, 4099)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 6)
		}
		for _, tr := range transcendentals {
			whole := make([]float32, len(x))
			tr.f(whole, x)
			for lo := range len(x) {
				// Each value alone (the Go tail, before), and ranges
				// ending a few values into a vector.
				for _, hi := range []int{lo + 1, min(len(x), lo+7), min(len(x), lo+9)} {
					part := make([]float32, hi-lo)
					tr.f(part, x[lo:hi])
					for i, v := range part {
						if math.Float32bits(v) != math.Float32bits(whole[lo+i]) {
							t.Fatalf("%s of x[%d] = %g: %g over x[%d:%d], %g over the whole slice", tr.name, lo+i, x[lo+i], v, lo, hi, whole[lo+i])
						}
					}
				}
			}
		}
	})
}

// BenchmarkTranscendental times each slice kernel against the scalar math
// loop it replaces (float64 math rounded to float32, as ane/ref's exact
// mode computes), on 4096 elements in [−10, 10], alternating inside each
// iteration; it reports ns/element of both and their ratio.
func BenchmarkTranscendental(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(i)/204.8 - 10
	}
	dst := make([]float32, len(x))
	scalar := map[string]func(float32) float32{
		"exp":     func(v float32) float32 { return float32(math.Exp(float64(v))) },
		"sigmoid": func(v float32) float32 { return 1 / (1 + float32(math.Exp(float64(-v)))) },
		"silu":    func(v float32) float32 { return v / (1 + float32(math.Exp(float64(-v)))) },
		"softplus": func(v float32) float32 {
			return float32(math.Max(float64(v), 0) + math.Log1p(math.Exp(-math.Abs(float64(v)))))
		},
	}
	for _, tr := range transcendentals {
		b.Run(tr.name, func(b *testing.B) {
			f := scalar[tr.name]
			var tv, ts time.Duration
			for range b.N {
				t0 := time.Now()
				tr.f(dst, x)
				t1 := time.Now()
				for i, v := range x {
					dst[i] = f(v)
				}
				tv, ts = tv+t1.Sub(t0), ts+time.Since(t1)
			}
			n := float64(b.N * len(x))
			b.ReportMetric(float64(tv.Nanoseconds())/n, "ns/elem_kernel")
			b.ReportMetric(float64(ts.Nanoseconds())/n, "ns/elem_math")
			b.ReportMetric(float64(ts)/float64(tv), "speedup")
		})
	}
}
