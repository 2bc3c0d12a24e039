package hadamard

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/nprand"
)

// naiveHadamard builds the Sylvester matrix by its recursive definition
// H_2n = [[H_n, H_n], [H_n, -H_n]], independently of the code under test.
func naiveHadamard(n int) [][]float64 {
	h := [][]float64{{1}}
	for len(h) < n {
		m := len(h)
		next := make([][]float64, 2*m)
		for i := range next {
			next[i] = make([]float64, 2*m)
		}
		for i := 0; i < m; i++ {
			for j := 0; j < m; j++ {
				next[i][j], next[i][j+m] = h[i][j], h[i][j]
				next[i+m][j], next[i+m][j+m] = h[i][j], -h[i][j]
			}
		}
		h = next
	}
	return h
}

// naiveR builds R = blockdiag(H_B·diag(s_b))/sqrt(B) from the definition.
func naiveR(signs []float32, b int) [][]float64 {
	n := len(signs)
	h := naiveHadamard(b)
	r := make([][]float64, n)
	for i := range r {
		r[i] = make([]float64, n)
	}
	for blk := 0; blk < n; blk += b {
		for i := 0; i < b; i++ {
			for j := 0; j < b; j++ {
				r[blk+i][blk+j] = h[i][j] * float64(signs[blk+j]) / math.Sqrt(float64(b))
			}
		}
	}
	return r
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func assertClose(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); d > tol*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("%s: element %d = %g, want %g (diff %g)", what, i, got[i], want[i], d)
		}
	}
}

func TestFWHTMatchesNaiveMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 512; n *= 2 {
		x := randVec(rng, n)
		h := naiveHadamard(n)
		want := make([]float64, n) // x·H
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				want[j] += float64(x[i]) * h[i][j]
			}
		}
		FWHT(x)
		// Unnormalised: values grow like sqrt(n), so scale the tolerance.
		assertClose(t, "FWHT", x, want, 1e-6*math.Sqrt(float64(n))*4)
	}
}

func TestFWHTTwiceIsNTimesIdentity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := randVec(rng, 1024)
	want := make([]float64, len(x))
	for i, v := range x {
		want[i] = 1024 * float64(v)
	}
	FWHT(x)
	FWHT(x)
	assertClose(t, "FWHT∘FWHT", x, want, 1e-4)
}

func TestFWHTRejectsNonPowerOfTwo(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "power of two") {
			t.Fatalf("FWHT(len 12) panic = %v, want a power-of-two message", r)
		}
	}()
	FWHT(make([]float32, 12))
}

func TestApplyEqualsXTimesRTransposed(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		n, block int
		seed     uint64
	}{{64, 64, 0}, {256, 64, 7}, {384, 128, 1000}, {512, 8, 2000}} {
		rot, err := NewBlockRotation(tc.n, tc.block, tc.seed)
		if err != nil {
			t.Fatal(err)
		}
		r := naiveR(nprand.ChoiceSigns(tc.seed, tc.n), tc.block)
		// Dense agrees with the definition entry for entry.
		d := rot.Dense()
		for i := range r {
			for j := range r[i] {
				if math.Abs(d[i][j]-r[i][j]) > 1e-12 {
					t.Fatalf("n %d block %d: Dense[%d][%d] = %g, want %g", tc.n, tc.block, i, j, d[i][j], r[i][j])
				}
			}
		}
		x := randVec(rng, tc.n)
		want := make([]float64, tc.n) // (x·Rᵀ)_i = Σ_j R[i][j] x_j
		for i := range want {
			for j := range x {
				want[i] += r[i][j] * float64(x[j])
			}
		}
		rot.Apply(x)
		assertClose(t, "Apply", x, want, 1e-5)
	}
}

// The published shapes: 5 blocks of 1024 with the layer-0 gate/up seed.
func TestApplyPublishedShape(t *testing.T) {
	const n, b = 5120, 1024
	rot, err := NewBlockRotation(n, b, 1000)
	if err != nil {
		t.Fatal(err)
	}
	x := randVec(rand.New(rand.NewPCG(8, 9)), n)
	signs := nprand.ChoiceSigns(1000, n)
	h := naiveHadamard(b)
	want := make([]float64, n) // ((x ⊙ s) reshaped (n/B, B)) · H / sqrt(B)
	for blk := 0; blk < n; blk += b {
		for j := 0; j < b; j++ {
			var acc float64
			for i := 0; i < b; i++ {
				acc += float64(x[blk+i]) * float64(signs[blk+i]) * h[i][j]
			}
			want[blk+j] = acc / 32
		}
	}
	rot.Apply(x)
	assertClose(t, "Apply(5120, 1024)", x, want, 1e-5)
}

func TestRIsOrthogonal(t *testing.T) {
	rot, err := NewBlockRotation(256, 64, 42)
	if err != nil {
		t.Fatal(err)
	}
	r := rot.Dense()
	for i := range r {
		for j := range r {
			var dot float64
			for k := range r[i] {
				dot += r[i][k] * r[j][k]
			}
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(dot-want) > 1e-12 {
				t.Fatalf("(R Rᵀ)[%d][%d] = %g, want %g", i, j, dot, want)
			}
		}
	}
}

func TestInverseUndoesApply(t *testing.T) {
	rot, err := NewBlockRotation(2048, 256, 3)
	if err != nil {
		t.Fatal(err)
	}
	x := randVec(rand.New(rand.NewPCG(10, 11)), 2048)
	orig := make([]float64, len(x))
	for i, v := range x {
		orig[i] = float64(v)
	}
	rot.Apply(x)
	rot.ApplyInverse(x)
	assertClose(t, "ApplyInverse∘Apply", x, orig, 1e-5)
}

// Rotating the weight (W' = W·Rᵀ, as the export stores it) and the
// activation (R·x, as the runtime computes it) leaves the layer unchanged:
// W·x == W'·(R·x).
func TestRotatedLinearLayerUnchanged(t *testing.T) {
	const rows, n, b = 24, 512, 128
	rng := rand.New(rand.NewPCG(12, 13))
	w := randVec(rng, rows*n)
	x := randVec(rng, n)
	want := make([]float64, rows)
	for r := 0; r < rows; r++ {
		for j := 0; j < n; j++ {
			want[r] += float64(w[r*n+j]) * float64(x[j])
		}
	}
	rot, err := NewBlockRotation(n, b, 1003)
	if err != nil {
		t.Fatal(err)
	}
	if err := rot.RotateRows(w); err != nil {
		t.Fatal(err)
	}
	rot.Apply(x)
	got := make([]float32, rows)
	for r := 0; r < rows; r++ {
		var acc float64
		for j := 0; j < n; j++ {
			acc += float64(w[r*n+j]) * float64(x[j])
		}
		got[r] = float32(acc)
	}
	assertClose(t, "W'·(R·x)", got, want, 1e-5)

	// Folding back with R (W = W'·R) restores the original weights.
	orig := randVec(rand.New(rand.NewPCG(12, 13)), rows*n)
	for r := 0; r < rows; r++ {
		rot.ApplyInverse(w[r*n : (r+1)*n])
	}
	want64 := make([]float64, len(orig))
	for i, v := range orig {
		want64[i] = float64(v)
	}
	assertClose(t, "W'·R", w, want64, 1e-5)
}

func TestNewBlockRotationErrors(t *testing.T) {
	for _, tc := range []struct {
		n, block int
		want     string
	}{
		{1024, 96, "block width 96 is not a power of two"},
		{1024, 0, "block width 0"},
		{1000, 256, "length 1000 is not a positive multiple of the block width 256"},
		{0, 64, "length 0"},
		{-64, 64, "length -64"},
	} {
		_, err := NewBlockRotation(tc.n, tc.block, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewBlockRotation(%d, %d) error = %v, want %q", tc.n, tc.block, err, tc.want)
		}
	}
	rot, _ := NewBlockRotation(128, 64, 1)
	if err := rot.RotateRows(make([]float32, 200)); err == nil || !strings.Contains(err.Error(), "rows of 128") {
		t.Errorf("RotateRows(200 elements) error = %v", err)
	}
}

func TestApplyDoesNotAllocate(t *testing.T) {
	rot, _ := NewBlockRotation(4096, 1024, 5)
	x := randVec(rand.New(rand.NewPCG(1, 1)), 4096)
	if a := testing.AllocsPerRun(20, func() { rot.Apply(x); rot.ApplyInverse(x) }); a != 0 {
		t.Fatalf("Apply allocates %v times per call", a)
	}
}

// BenchmarkBlockRotation reports the cost of Apply per block for each block
// width, and for 1024 the ratio against a dense 1024×1024 float32 matvec
// (the rotation done as a plain matrix) timed in the same process.
func BenchmarkBlockRotation(b *testing.B) {
	for _, block := range []int{64, 256, 1024} {
		b.Run("block="+strconv.Itoa(block), func(b *testing.B) {
			const blocks = 16
			rot, _ := NewBlockRotation(blocks*block, block, 1)
			x := randVec(rand.New(rand.NewPCG(2, 2)), blocks*block)
			b.SetBytes(int64(4 * len(x)))
			b.ResetTimer()
			for b.Loop() {
				rot.Apply(x)
			}
			nsPerBlock := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / blocks
			b.ReportMetric(nsPerBlock, "ns/block")
			if block == 1024 {
				b.ReportMetric(denseMatvecNs(1024)/nsPerBlock, "dense/fwht")
			}
		})
	}
}

// denseMatvecNs times y = x·M for a dense n×n float32 M (median of 5 runs).
func denseMatvecNs(n int) float64 {
	m := randVec(rand.New(rand.NewPCG(3, 3)), n*n)
	x := randVec(rand.New(rand.NewPCG(4, 4)), n)
	y := make([]float32, n)
	var times []float64
	for range 5 {
		start := time.Now()
		for range 20 {
			clear(y)
			for i, xi := range x {
				row := m[i*n : (i+1)*n]
				for j, v := range row {
					y[j] += xi * v
				}
			}
		}
		times = append(times, float64(time.Since(start).Nanoseconds())/20)
	}
	for i := range times { // tiny insertion sort for the median
		for j := i; j > 0 && times[j] < times[j-1]; j-- {
			times[j], times[j-1] = times[j-1], times[j]
		}
	}
	return times[len(times)/2]
}

// RotateHessian gives R·H·Rᵀ, computed here naively from the definition.
func TestRotateHessian(t *testing.T) {
	const n, b = 96, 32
	rot, err := NewBlockRotation(n, b, 2005)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(20, 21))
	// H = XᵀX/m for random X: symmetric positive semi-definite.
	const m = 40
	x := make([]float64, m*n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	h := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			for k := 0; k < m; k++ {
				h[i*n+j] += x[k*n+i] * x[k*n+j] / m
			}
		}
	}
	r := naiveR(nprand.ChoiceSigns(2005, n), b)
	want := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var acc float64
			for k := 0; k < n; k++ {
				for l := 0; l < n; l++ {
					acc += r[i][k] * h[k*n+l] * r[j][l]
				}
			}
			want[i*n+j] = acc
		}
	}
	if err := rot.RotateHessian(h); err != nil {
		t.Fatal(err)
	}
	for i := range h {
		if math.Abs(h[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("(R·H·Rᵀ)[%d][%d] = %g, want %g", i/n, i%n, h[i], want[i])
		}
	}
	if err := rot.RotateHessian(make([]float64, 10)); err == nil || !strings.Contains(err.Error(), "96×96") {
		t.Errorf("wrong-size Hessian error = %v", err)
	}
}

func TestFWHT64MatchesFWHT(t *testing.T) {
	x := randVec(rand.New(rand.NewPCG(30, 31)), 256)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	FWHT(x)
	FWHT64(y)
	assertClose(t, "FWHT vs FWHT64", x, y, 1e-5)
}
