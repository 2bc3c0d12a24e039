package quantize

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/half"
)

// randMatrix is a rows×cols matrix with per-row magnitudes spread over two
// decades and a few outliers, like trained weights.
func randMatrix(seed uint64, rows, cols int) []float32 {
	r := rand.New(rand.NewPCG(seed, 99))
	w := make([]float32, rows*cols)
	for i := 0; i < rows; i++ {
		s := math.Pow(10, r.Float64()*2-2)
		for j := 0; j < cols; j++ {
			v := r.NormFloat64() * s
			if r.IntN(200) == 0 {
				v *= 8
			}
			w[i*cols+j] = float32(v)
		}
	}
	return w
}

// correlatedHessian is XᵀX/N for N rows of activations with correlated
// features of very different energy, plus the activations.
func correlatedHessian(seed uint64, n, tokens int) ([]float64, []float32) {
	r := rand.New(rand.NewPCG(seed, 7))
	mix := make([]float64, n*n)
	for i := range mix {
		mix[i] = r.NormFloat64() / math.Sqrt(float64(n))
	}
	energy := make([]float64, n)
	for j := range energy {
		energy[j] = math.Exp(r.NormFloat64())
	}
	x := make([]float32, tokens*n)
	z := make([]float64, n)
	for t := 0; t < tokens; t++ {
		for i := range z {
			z[i] = r.NormFloat64()
		}
		for j := 0; j < n; j++ {
			v := z[j]
			for i := 0; i < n; i++ {
				v += 0.8 * z[i] * mix[i*n+j]
			}
			x[t*n+j] = float32(v * energy[j])
		}
	}
	h := NewHessian(n)
	if err := h.Add(x, tokens); err != nil {
		panic(err)
	}
	return h.Finalize(), x
}

var roundTripFormats = []string{
	"LUT4 per-tensor + pcs", "LUT4 per-tensor",
	"vector 2x16 + pcs", "vector 2x64 + pcs", "vector 4x16 + pcs", "vector 4x64 + pcs",
	"vector 2x16", "vector 4x64 FP8 LUT",
	"INT8 per-channel", "FP16", "bf16",
}

// TestEncodeRoundTrip: for every exported format, RTN and GPTQ results
// encode to export tensors that ane/kernels's run-time kernels decode to the
// same float32 values bit for bit, and every value is one the format can
// store (checked independently of the rounder).
func TestEncodeRoundTrip(t *testing.T) {
	const rows, cols = 16, 160
	w := randMatrix(1, rows, cols)
	h, _ := correlatedHessian(2, cols, 400)
	for _, format := range roundTripFormats {
		r, err := Fit("test.w", w, rows, cols, format, FitOptions{Seed: 3})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		rtn, err := RTN(w, rows, cols, r)
		if err != nil {
			t.Fatal(err)
		}
		gq, _, err := GPTQ(w, rows, cols, h, r, GPTQOptions{})
		if err != nil {
			t.Fatalf("%s: GPTQ: %v", format, err)
		}
		for name, q := range map[string][]float32{"RTN": rtn, "GPTQ": gq} {
			e, err := r.Encode(q)
			if err != nil {
				t.Fatalf("%s %s: encode: %v", format, name, err)
			}
			back, err := Dequantize(e)
			if err != nil {
				t.Fatalf("%s %s: dequantize: %v", format, name, err)
			}
			for i := range q {
				if math.Float32bits(back[i]) != math.Float32bits(q[i]) {
					t.Fatalf("%s %s: element %d decodes to %v, quantizer produced %v", format, name, i, back[i], q[i])
				}
			}
			checkRepresentable(t, format, r, e, q)
		}
		checkNearest(t, format, r, w, rtn)
	}
}

// checkRepresentable checks shapes and that every q value is an fp16
// codebook entry times the fp16 row scale, or an int8 code times the scale.
func checkRepresentable(t *testing.T, format string, r *Rounder, e *Encoded, q []float32) {
	t.Helper()
	rows, cols := r.Rows, r.Cols
	switch {
	case e.Weight != nil:
		for i, v := range q {
			var back float32
			if e.WeightDType == "BF16" {
				back = half.BF16Float(half.BF16(v))
			} else {
				back = half.F16Float(half.F16(v))
			}
			if back != v {
				t.Fatalf("%s: %v is not a %s value", format, q[i], e.WeightDType)
			}
		}
	case e.Int8 != nil:
		for i, v := range q {
			s := half.F16Float(e.Scale[i/cols])
			c := v / s
			if c != float32(math.Round(float64(c))) || math.Abs(float64(c)) > 127 {
				t.Fatalf("%s: %v is not an int8 code times the scale %v", format, v, s)
			}
		}
	default:
		cd := r.CD
		if !slices.Equal(e.LUTShape, []int{r.K, cd}) || !slices.Equal(e.IdxShape, []int{rows / cd, cols}) {
			t.Fatalf("%s: shapes lut %v idx %v", format, e.LUTShape, e.IdxShape)
		}
		if (e.Scale != nil) != strings.Contains(format, "pcs") {
			t.Fatalf("%s: scale present = %v", format, e.Scale != nil)
		}
	}
}

// checkNearest: RTN picks, per group and column, an entry at minimal
// distance from w/s (brute force over the codebook in the test).
func checkNearest(t *testing.T, format string, r *Rounder, w, q []float32) {
	t.Helper()
	if r.LUT == nil {
		return
	}
	cols, cd := r.Cols, r.CD
	scale := func(row int) float64 {
		if r.Scale == nil {
			return 1
		}
		return float64(r.Scale[row])
	}
	for g := 0; g < r.Rows/cd; g++ {
		for j := 0; j < cols; j++ {
			dist := func(val func(row int) float64, e int) float64 {
				var d float64
				for k := 0; k < cd; k++ {
					x := val(g*cd+k)/scale(g*cd+k) - float64(r.LUT[e*cd+k])
					d += x * x
				}
				return d
			}
			best := math.Inf(1)
			for e := 0; e < r.K; e++ {
				best = math.Min(best, dist(func(row int) float64 { return float64(w[row*cols+j]) }, e))
			}
			// distance of the chosen value, computed from q
			var got float64
			for k := 0; k < cd; k++ {
				x := float64(w[(g*cd+k)*cols+j])/scale(g*cd+k) - float64(q[(g*cd+k)*cols+j])/scale(g*cd+k)
				got += x * x
			}
			if got > best*(1+1e-9)+1e-12 {
				t.Fatalf("%s: group %d column %d: RTN distance %g, nearest entry %g", format, g, j, got, best)
			}
		}
	}
}

func TestScales(t *testing.T) {
	w := []float32{3, -4, 0, 0, 1e-9, -1e-9, 70000, 1}
	r, err := Fit("s", w[:6], 3, 2, "LUT4 per-tensor + pcs", FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want0 := half.F16Float(half.F16(float32(math.Sqrt(12.5))))
	if r.Scale[0] != want0 || r.Scale[1] != 1 || r.Scale[2] != 1 {
		t.Fatalf("pcs scales %v, want [%v 1 1] (RMS through fp16, zeros → 1)", r.Scale, want0)
	}
	r, err = Fit("s", w[:4], 2, 2, "INT8 per-channel", FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Scale[0] != half.F16Float(half.F16(4.0/127)) || r.Scale[1] != 1 {
		t.Fatalf("int8 scales %v", r.Scale)
	}
	if _, err := Fit("big.w", w[6:], 1, 2, "INT8 per-channel", FitOptions{}); err != nil {
		t.Fatalf("70000/127 fits fp16: %v", err)
	}
	if _, err := Fit("huge.w", []float32{1e6, 1e6}, 1, 2, "LUT4 per-tensor + pcs", FitOptions{}); err == nil || !strings.Contains(err.Error(), "huge.w") || !strings.Contains(err.Error(), "overflows fp16") {
		t.Fatalf("row RMS 1e6 overflows fp16: got %v", err)
	}
}

// TestScalarLloyd: weighted 1-D Lloyd recovers well-separated clusters
// and its centroids are fp16 values.
func TestScalarLloyd(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	centres := []float64{-3, -1, 0.5, 2}
	const rows, cols = 8, 512
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(centres[r.IntN(4)] + 0.01*r.NormFloat64())
	}
	q, err := Fit("lut2", w, rows, cols, "LUT2 per-group-8", FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(q.LUT)
	slices.Sort(got)
	for i, c := range centres {
		if math.Abs(float64(got[i])-c) > 0.01 {
			t.Fatalf("centroids %v, want about %v", got, centres)
		}
		if half.F16Float(half.F16(got[i])) != got[i] {
			t.Fatalf("centroid %v is not an fp16 value", got[i])
		}
	}
	if _, err := q.Encode(w); err == nil || !strings.Contains(err.Error(), "per-group LUTs are not exported") || !strings.Contains(err.Error(), "lut2") {
		t.Fatalf("encode of a per-group LUT: %v", err)
	}
}

// TestPerGroupCodebooks: each 8-row group of LUT2 per-group-8 has its own
// codebook fitted on its own rows.
func TestPerGroupCodebooks(t *testing.T) {
	const rows, cols = 16, 64
	w := make([]float32, rows*cols)
	for i := range w {
		v := float32(i%4) - 1.5
		if i >= 8*cols {
			v *= 100
		}
		w[i] = v
	}
	r, err := Fit("g", w, rows, cols, "LUT2 per-group-8", FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Groups() != 2 || len(r.LUT) != 8 {
		t.Fatalf("groups %d, codebook values %d", r.Groups(), len(r.LUT))
	}
	q, _ := RTN(w, rows, cols, r)
	for i := range w {
		if q[i] != w[i] {
			t.Fatalf("4 distinct values per group must round exactly: %v → %v", w[i], q[i])
		}
	}
}

// TestVectorKMeans: 2-D k-means finds four separated clusters of
// consecutive-row pairs; column weights pull the codebook toward the
// weighted columns.
func TestVectorKMeans(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	centres := [][2]float64{{1, 1}, {-1, 1}, {1, -1}, {-1, -1}}
	const rows, cols = 32, 256
	w := make([]float32, rows*cols)
	for g := 0; g < rows/2; g++ {
		for j := 0; j < cols; j++ {
			c := centres[r.IntN(4)]
			w[2*g*cols+j] = float32(c[0] + 0.01*r.NormFloat64())
			w[(2*g+1)*cols+j] = float32(c[1] + 0.01*r.NormFloat64())
		}
	}
	rd, err := Fit("v", w, rows, cols, "vector 2x16", FitOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range centres {
		best := math.Inf(1)
		for e := 0; e < rd.K; e++ {
			best = math.Min(best, math.Hypot(float64(rd.LUT[2*e])-c[0], float64(rd.LUT[2*e+1])-c[1]))
		}
		if best > 0.02 {
			t.Fatalf("no centroid near %v: %v", c, rd.LUT)
		}
	}
	again, _ := Fit("v", w, rows, cols, "vector 2x16", FitOptions{Seed: 1})
	if !slices.Equal(again.LUT, rd.LUT) {
		t.Fatal("the same seed gave a different codebook")
	}

	// Weighted: columns 0..7 carry all the weight; the weighted fit must
	// have lower weighted error on them than the unweighted fit.
	w2 := randMatrix(6, rows, cols)
	cw := make([]float64, cols)
	for j := 0; j < 8; j++ {
		cw[j] = 1
	}
	plain, _ := Fit("v", w2, rows, cols, "vector 2x16", FitOptions{})
	weighted, _ := Fit("v", w2, rows, cols, "vector 2x16", FitOptions{ColumnWeights: cw})
	if ep, ew := rtnErr(t, w2, rows, cols, plain, cw), rtnErr(t, w2, rows, cols, weighted, cw); ew >= ep {
		t.Fatalf("weighted k-means error on weighted columns %g, not below unweighted %g", ew, ep)
	}
}

func rtnErr(t *testing.T, w []float32, rows, cols int, r *Rounder, cw []float64) float64 {
	q, err := RTN(w, rows, cols, r)
	if err != nil {
		t.Fatal(err)
	}
	var s float64
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			d := float64(w[i*cols+j] - q[i*cols+j])
			s += cw[j] * d * d
		}
	}
	return s
}

func TestFP8(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{1, 1}, {1.0625, 1}, {1.1875, 1.25}, {448, 448}, {500, 448}, {-3.3, -3.25},
		{math.Ldexp(1, -9), math.Ldexp(1, -9)}, {math.Ldexp(3, -11), math.Ldexp(1, -9)}, {0.01, 0.009765625},
	} {
		if got := e4m3(c.in); got != c.want {
			t.Errorf("e4m3(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// Dequantize refuses inconsistent export tensors instead of panicking.
func TestDequantizeBadInput(t *testing.T) {
	for _, c := range []struct {
		e    Encoded
		want string
	}{
		{Encoded{Format: "x", Rows: 2, Cols: 2}, "no weight, int8 or LUT tensors"},
		{Encoded{Format: "x", Rows: 0, Cols: 2}, "dimensions 0×2"},
		{Encoded{Format: "FP16", Rows: 2, Cols: 2, Weight: []uint16{1}}, "1 weights for 2×2"},
		{Encoded{Format: "LUT4", Rows: 2, Cols: 2, LUT: []uint16{1, 2}, Idx: []uint8{0, 0, 0, 0}}, "LUT shape [] does not hold 2 values"},
		{Encoded{Format: "LUT4", Rows: 2, Cols: 2, LUT: []uint16{1, 2}, LUTShape: []int{2, 1}, Idx: []uint8{0}}, "1 indices"},
		{Encoded{Format: "INT8", Rows: 2, Cols: 2, Int8: []int8{1, 2, 3, 4}}, "scale is missing"},
	} {
		if _, err := Dequantize(&c.e); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.e, err, c.want)
		}
	}
}

// sample draws distinct in-range indices, deterministically per seed, and
// covers the range (every index of a small range is drawn at some seed).
func TestSample(t *testing.T) {
	seen := map[int]bool{}
	for seed := uint64(0); seed < 50; seed++ {
		s := newRNG(seed).sample(40, 10)
		if len(s) != 10 || !slices.IsSorted(s) || s[0] < 0 || s[9] >= 40 {
			t.Fatalf("seed %d: %v", seed, s)
		}
		for i := 1; i < len(s); i++ {
			if s[i] == s[i-1] {
				t.Fatalf("seed %d: repeated index in %v", seed, s)
			}
		}
		if !slices.Equal(s, newRNG(seed).sample(40, 10)) {
			t.Fatal("sample is not deterministic")
		}
		for _, v := range s {
			seen[v] = true
		}
	}
	if len(seen) != 40 {
		t.Fatalf("only %d of 40 indices ever drawn", len(seen))
	}
	if got := newRNG(1).sample(1<<40, 3); len(got) != 3 {
		t.Fatalf("huge range: %v", got)
	}
}
