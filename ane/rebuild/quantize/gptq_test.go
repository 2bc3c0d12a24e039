package quantize

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"testing"
)

// referenceGPTQ is the published algorithm written out plainly in float64:
// H⁻¹ by Gauss–Jordan, its upper Cholesky factor by the textbook
// recurrence, and one full-width update per column (no blocks). The lazy
// block update is an exact reordering of these sums.
func referenceGPTQ(w []float32, rows, cols int, h []float64, r *Rounder) []float32 {
	h = slices.Clone(h)
	for i := 0; i < cols; i++ {
		if h[i*cols+i] == 0 {
			h[i*cols+i] = 1
		}
	}
	perm := make([]int, cols)
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(a, b int) int { return cmp.Compare(h[b*cols+b], h[a*cols+a]) })
	n := cols
	hp := make([]float64, n*n)
	var mean float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			hp[i*n+j] = h[perm[i]*cols+perm[j]]
		}
		mean += hp[i*n+i] / float64(n)
	}
	for i := 0; i < n; i++ {
		hp[i*n+i] += 0.01 * mean
	}
	inv := gaussJordanInverse(hp, n)
	// H⁻¹ = L·Lᵀ (lower Cholesky); the upper factor U with H⁻¹ = UᵀU is Lᵀ.
	l := make([]float64, n*n)
	for j := 0; j < n; j++ {
		s := inv[j*n+j]
		for k := 0; k < j; k++ {
			s -= l[j*n+k] * l[j*n+k]
		}
		l[j*n+j] = math.Sqrt(s)
		for i := j + 1; i < n; i++ {
			s := inv[i*n+j]
			for k := 0; k < j; k++ {
				s -= l[i*n+k] * l[j*n+k]
			}
			l[i*n+j] = s / l[j*n+j]
		}
	}
	u := func(i, j int) float64 { return l[j*n+i] }

	wp := make([]float64, rows*cols)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			wp[i*cols+j] = float64(w[i*cols+perm[j]])
		}
	}
	q := make([]float64, rows*cols)
	col := make([]float64, rows)
	for i := 0; i < cols; i++ {
		for row := 0; row < rows; row++ {
			col[row] = wp[row*cols+i]
		}
		r.Round64(col, i)
		for row := 0; row < rows; row++ {
			q[row*cols+i] = col[row]
			e := (wp[row*cols+i] - col[row]) / u(i, i)
			for j := i; j < cols; j++ {
				wp[row*cols+j] -= e * u(i, j)
			}
		}
	}
	out := make([]float32, rows*cols)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out[i*cols+perm[j]] = float32(q[i*cols+j])
		}
	}
	return out
}

func gaussJordanInverse(a []float64, n int) []float64 {
	m := slices.Clone(a)
	inv := make([]float64, n*n)
	for i := 0; i < n; i++ {
		inv[i*n+i] = 1
	}
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r*n+c]) > math.Abs(m[p*n+c]) {
				p = r
			}
		}
		for k := 0; k < n; k++ {
			m[c*n+k], m[p*n+k] = m[p*n+k], m[c*n+k]
			inv[c*n+k], inv[p*n+k] = inv[p*n+k], inv[c*n+k]
		}
		d := m[c*n+c]
		for k := 0; k < n; k++ {
			m[c*n+k] /= d
			inv[c*n+k] /= d
		}
		for r := 0; r < n; r++ {
			if r == c || m[r*n+c] == 0 {
				continue
			}
			f := m[r*n+c]
			for k := 0; k < n; k++ {
				m[r*n+k] -= f * m[c*n+k]
				inv[r*n+k] -= f * inv[c*n+k]
			}
		}
	}
	return inv
}

// TestGPTQMatchesReference: our blocked, parallel GPTQ equals the plain
// float64 algorithm to 1e-6, with dead inputs, several blocks and a ragged
// last block.
func TestGPTQMatchesReference(t *testing.T) {
	const rows, cols = 16, 300
	w := randMatrix(11, rows, cols)
	h, _ := correlatedHessian(12, cols, 600)
	for _, dead := range []int{5, 77, 298} { // inputs that never fire
		for j := 0; j < cols; j++ {
			h[dead*cols+j], h[j*cols+dead] = 0, 0
		}
	}
	for _, format := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "vector 4x64 + pcs", "INT8 per-channel"} {
		r, err := Fit("layers.0.mlp.up_proj", w, rows, cols, format, FitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := referenceGPTQ(w, rows, cols, h, r)
		for _, block := range []int{0, 7} {
			got, info, err := GPTQ(w, rows, cols, h, r, GPTQOptions{Block: block})
			if err != nil {
				t.Fatal(err)
			}
			if info.Dead != 3 || info.Damp != 0.01 || info.Retries != 0 {
				t.Fatalf("%s: info %+v, want 3 dead, damping 0.01", format, info)
			}
			var worst float64
			for i := range want {
				worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
			}
			if worst > 1e-6 {
				t.Fatalf("%s block %d: differs from the reference by %g", format, block, worst)
			}
		}
	}
}

// outputError is ‖(W−Q)Xᵀ‖² / N = tr(ΔW H ΔWᵀ) on held-out activations.
func outputError(w, q []float32, rows, cols int, x []float32) float64 {
	tokens := len(x) / cols
	var s float64
	for t := 0; t < tokens; t++ {
		for i := 0; i < rows; i++ {
			var y float64
			for j := 0; j < cols; j++ {
				y += float64(w[i*cols+j]-q[i*cols+j]) * float64(x[t*cols+j])
			}
			s += y * y
		}
	}
	return s / float64(tokens)
}

func TestDampingRetry(t *testing.T) {
	// Eigenvalues 2.025 and −0.025: 1% and 2% damping fail, 4% works.
	h := []float64{1, 1.025, 1.025, 1}
	w := []float32{0.3, -0.2, 0.1, 0.5}
	r, _ := Fit("m", w, 2, 2, "INT8 per-channel", FitOptions{})
	_, info, err := GPTQ(w, 2, 2, h, r, GPTQOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Damp != 0.04 || info.Retries != 2 {
		t.Fatalf("info %+v, want damping 0.04 after 2 retries", info)
	}
}

func TestBadInput(t *testing.T) {
	w := randMatrix(1, 6, 8)
	h, _ := correlatedHessian(1, 8, 40)
	ok, _ := Fit("layers.3.mlp.down_proj", w, 6, 8, "LUT4 per-tensor + pcs", FitOptions{})
	nan := slices.Clone(w)
	nan[13] = float32(math.NaN())
	for _, c := range []struct {
		name string
		run  func() error
		want string
	}{
		{"unknown format", func() error {
			_, err := Fit("layers.3.mlp.down_proj", w, 6, 8, "vector 3x16", FitOptions{})
			return err
		}, `unknown quantization format "vector 3x16"`},
		{"rows not divisible", func() error {
			_, err := Fit("layers.3.mlp.down_proj", w, 6, 8, "vector 4x16 + pcs", FitOptions{})
			return err
		}, "6 output rows are not divisible by the vector length 4"},
		{"group not divisible", func() error {
			_, err := Fit("layers.3.mlp.down_proj", w, 6, 8, "LUT2 per-group-8", FitOptions{})
			return err
		}, "not divisible by the group size 8"},
		{"NaN weight", func() error {
			_, err := Fit("layers.3.mlp.down_proj", nan, 6, 8, "INT8 per-channel", FitOptions{})
			return err
		}, "weight at row 1, column 5 is NaN"},
		{"NaN weight in GPTQ", func() error {
			_, _, err := GPTQ(nan, 6, 8, h, ok, GPTQOptions{})
			return err
		}, "weight at row 1, column 5 is NaN"},
		{"FP16 overflow", func() error {
			big := slices.Clone(w)
			big[9] = 1e5
			_, err := Fit("layers.3.mlp.down_proj", big, 6, 8, "FP16", FitOptions{})
			return err
		}, "weight at row 1, column 1 (100000) overflows FP16"},
		{"codebook overflow", func() error {
			big := slices.Clone(w)
			for i := range big {
				big[i] *= 1e6
			}
			_, err := Fit("layers.3.mlp.down_proj", big, 6, 8, "LUT4 per-tensor", FitOptions{})
			return err
		}, "overflows fp16; \"LUT4 per-tensor\" has no per-channel scale"},
		{"short matrix", func() error {
			_, err := Fit("layers.3.mlp.down_proj", w[:40], 6, 8, "INT8 per-channel", FitOptions{})
			return err
		}, "40 values for 6×8"},
		{"column weights", func() error {
			_, err := Fit("layers.3.mlp.down_proj", w, 6, 8, "LUT4 per-tensor + pcs", FitOptions{ColumnWeights: []float64{1, 2}})
			return err
		}, "2 column weights for 8 input columns"},
		{"negative column weight", func() error {
			_, err := Fit("layers.3.mlp.down_proj", w, 6, 8, "LUT4 per-tensor + pcs", FitOptions{ColumnWeights: []float64{1, 1, 1, -1, 1, 1, 1, 1}})
			return err
		}, "column weight 3 is -1"},
		{"non-PSD H", func() error {
			bad := slices.Clone(h)
			bad[0*8+1], bad[1*8+0] = 10*h[0], 10*h[0]
			_, _, err := GPTQ(w, 6, 8, bad, ok, GPTQOptions{})
			return err
		}, "Hessian is not positive definite"},
		{"negative diagonal", func() error {
			bad := slices.Clone(h)
			bad[2*8+2] = -1
			_, _, err := GPTQ(w, 6, 8, bad, ok, GPTQOptions{})
			return err
		}, "Hessian diagonal 2 is negative"},
		{"asymmetric H", func() error {
			bad := slices.Clone(h)
			bad[0*8+3] += 1
			_, _, err := GPTQ(w, 6, 8, bad, ok, GPTQOptions{})
			return err
		}, "Hessian is not symmetric at (0,3)"},
		{"NaN in H", func() error {
			bad := slices.Clone(h)
			bad[9] = math.NaN()
			_, _, err := GPTQ(w, 6, 8, bad, ok, GPTQOptions{})
			return err
		}, "Hessian entry (1,1) is NaN"},
		{"H size", func() error {
			_, _, err := GPTQ(w, 6, 8, h[:60], ok, GPTQOptions{})
			return err
		}, "Hessian has 60 values, want 8×8"},
		{"shape mismatch", func() error {
			_, err := RTN(w[:40], 5, 8, ok)
			return err
		}, "5×8 given to a rounder fitted on 6×8"},
		{"NaN in encode", func() error {
			_, err := ok.Encode(nan)
			return err
		}, "is NaN"},
	} {
		err := c.run()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "layers.3.mlp.down_proj") {
			t.Errorf("%s: got %v, want an error naming the matrix with %q", c.name, err, c.want)
		}
	}
}
