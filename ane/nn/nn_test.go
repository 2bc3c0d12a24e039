package nn

import (
	"math"
	"testing"
)

func TestPrimitivesAgainstFormulas(t *testing.T) {
	for _, x := range []float64{-100, -20, -1, 0, 0.5, 3, 20, 100} {
		want := math.Log(1 + math.Exp(x))
		if x > 30 {
			want = x // log(1+e^x) rounds to x in float64 long before exp overflows
		}
		if got := SoftplusStable(x); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("SoftplusStable(%g) = %g, want %g", x, got, want)
		}
		if got, want := float64(Sigmoid(float32(x))), 1/(1+math.Exp(-x)); math.Abs(got-want) > 1e-6 {
			t.Errorf("Sigmoid(%g) = %g, want %g", x, got, want)
		}
	}
	if !math.IsInf(math.Log(1+math.Exp(1000)), 1) || SoftplusStable(1000) != 1000 {
		t.Fatal("SoftplusStable(1000) must be 1000 where the naive form overflows")
	}

	x := []float32{3, -4, 0, 12}
	w := []float32{0, 1, -0.5, 0.25}
	const eps = 1e-6
	ms := (9.0 + 16 + 0 + 144) / 4
	r := 1 / math.Sqrt(ms+eps)
	dst := make([]float32, 4)
	RMSNormCentered(dst, x, w, eps)
	for i := range x {
		want := float64(x[i]) * r * (1 + float64(w[i]))
		if math.Abs(float64(dst[i])-want) > 1e-6 {
			t.Errorf("RMSNormCentered[%d] = %g, want %g", i, dst[i], want)
		}
	}

	v := []float32{3, 4}
	L2Normalize(v, 0)
	if math.Abs(float64(v[0])-0.6) > 1e-7 || math.Abs(float64(v[1])-0.8) > 1e-7 {
		t.Fatalf("L2Normalize(3,4) = %v, want (0.6, 0.8)", v)
	}
}
