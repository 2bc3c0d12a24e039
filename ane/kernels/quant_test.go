package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/qformat"
)

// dequantRef is the export's dequantization rule written from the spec:
// row cd·g+t, column j = lut[idx[g,j]][t] · scale[row].
func dequantRef(rows, cols, cd int, lut []float32, idx []uint8, scale []float32) []float64 {
	w := make([]float64, rows*cols)
	for g := 0; g < rows/cd; g++ {
		for j := 0; j < cols; j++ {
			e := int(idx[g*cols+j])
			for t := 0; t < cd; t++ {
				v := float64(lut[e*cd+t])
				if scale != nil {
					v *= float64(scale[g*cd+t])
				}
				w[(g*cd+t)*cols+j] = v
			}
		}
	}
	return w
}

func matmul64(w []float64, rows, cols int, x []float32, n int) []float64 {
	y := make([]float64, n*rows)
	for t := 0; t < n; t++ {
		for i := 0; i < rows; i++ {
			var s float64
			for j := 0; j < cols; j++ {
				s += w[i*cols+j] * float64(x[t*cols+j])
			}
			y[t*rows+i] = s
		}
	}
	return y
}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// maxRelErr is max|got−want| / max|want|.
func maxRelErr(got []float32, want []float64) float64 {
	var num, den float64
	for i := range want {
		num = math.Max(num, math.Abs(float64(got[i])-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	return num / den
}

type fixture struct {
	name string
	m    Matrix
	ref  []float64 // dense weights from the spec, independent of Densify
}

// randLUT is a random rows × cols matrix of the codebook format name:
// its codebook, indices (the last one 16, out of range, when malformed)
// and per-channel scales in [0.01, 1.01) when the format has them.
func randLUT(t *testing.T, r *rand.Rand, name string, rows, cols int, malformed bool) (m *LUT, f qformat.Format, lut []float32, idx []uint8, scale []float32) {
	t.Helper()
	f, err := qformat.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	lut = randVec(r, f.Entries*f.CD)
	idx = make([]uint8, rows/f.CD*cols)
	for i := range idx {
		idx[i] = uint8(r.IntN(f.Entries))
	}
	if malformed {
		idx[len(idx)-1] = 16
	}
	if f.Scaled {
		scale = make([]float32, rows)
		for i := range scale {
			scale[i] = 0.01 + r.Float32()
		}
	}
	if m, err = NewLUT(name, rows, cols, f.CD, lut, idx, scale); err != nil {
		t.Fatal(err)
	}
	return m, f, lut, idx, scale
}

func fixtures(t *testing.T, r *rand.Rand, rows, cols int) []fixture {
	t.Helper()
	var out []fixture
	for _, name := range []string{"LUT4 per-tensor", "LUT4 per-tensor + pcs", "vector 2x16 + pcs", "vector 2x64 + pcs",
		"vector 4x16 + pcs", "vector 4x64 + pcs", "vector 2x16"} {
		m, f, lut, idx, scale := randLUT(t, r, name, rows, cols, false)
		out = append(out, fixture{name, m, dequantRef(rows, cols, f.CD, lut, idx, scale)})
	}
	q := make([]int8, rows*cols)
	for i := range q {
		q[i] = int8(r.IntN(255) - 127)
	}
	sc := randVec(r, rows)
	i8, err := NewInt8(rows, cols, q, sc)
	if err != nil {
		t.Fatal(err)
	}
	ref := make([]float64, rows*cols)
	for i := range ref {
		ref[i] = float64(q[i]) * float64(sc[i/cols])
	}
	out = append(out, fixture{"INT8 per-channel", i8, ref})
	bw := make([]uint16, rows*cols)
	bref := make([]float64, rows*cols)
	for i := range bw {
		bits := math.Float32bits(float32(r.NormFloat64())) >> 16
		bw[i] = uint16(bits)
		bref[i] = float64(math.Float32frombits(bits << 16))
	}
	b, err := NewBF16(rows, cols, bw)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fixture{"bf16", b, bref})
	return out
}

// Every stored format, executed over its indices (one token and a batch,
// one and two workers), equals densify-then-matmul, and Densify equals the
// spec's dequantization rule.
func TestFormatsMatchDense(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 68, 200 // 68: odd-sized chunks on two workers
	for _, threads := range []int{1, 2} {
		run := NewRunner(threads)
		defer run.Close()
		for _, fx := range fixtures(t, r, rows, cols) {
			dense := Densify(fx.m)
			for i := range dense {
				if float64(dense[i]) != float64(float32(fx.ref[i])) {
					t.Fatalf("%s: Densify[%d] = %v, spec rule gives %v", fx.name, i, dense[i], fx.ref[i])
				}
			}
			for _, n := range []int{1, 5} {
				x := randVec(r, n*cols)
				want := matmul64(fx.ref, rows, cols, x, n)
				lin, err := NewLinear(fx.name, fx.m, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float32, n*rows)
				// Big enough to be split across workers.
				run.Apply(lin, got, x, n)
				if e := maxRelErr(got, want); e > 1e-5 {
					t.Errorf("%s threads=%d n=%d: relative error %.3g > 1e-5", fx.name, threads, n, e)
				}
			}
		}
	}
}

// A large product is split across workers and still equals the dense result.
func TestParallelSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const rows, cols = 516, 260 // rows not a multiple of the worker count
	run := NewRunner(2)
	defer run.Close()
	for _, fx := range fixtures(t, r, rows, cols) {
		x := randVec(r, cols)
		want := matmul64(fx.ref, rows, cols, x, 1)
		lin, _ := NewLinear(fx.name, fx.m, nil, nil)
		got := make([]float32, rows)
		run.Apply(lin, got, x, 1)
		if e := maxRelErr(got, want); e > 1e-5 {
			t.Errorf("%s: relative error %.3g", fx.name, e)
		}
	}
}

func TestLowRankBranch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols, rank = 96, 128, 8
	run := NewRunner(2)
	defer run.Close()
	for _, fx := range fixtures(t, r, rows, cols) {
		av, bv := randVec(r, rows*rank), randVec(r, rank*cols)
		a, _ := NewF32(rows, rank, av)
		b, _ := NewF32(rank, cols, bv)
		lin, err := NewLinear(fx.name, fx.m, a, b)
		if err != nil {
			t.Fatal(err)
		}
		ref := append([]float64(nil), fx.ref...)
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				for k := 0; k < rank; k++ {
					ref[i*cols+j] += float64(av[i*rank+k]) * float64(bv[k*cols+j])
				}
			}
		}
		for _, n := range []int{1, 3} {
			x := randVec(r, n*cols)
			got := make([]float32, n*rows)
			run.Apply(lin, got, x, n)
			if e := maxRelErr(got, matmul64(ref, rows, cols, x, n)); e > 1e-5 {
				t.Errorf("%s n=%d: relative error %.3g", fx.name, n, e)
			}
		}
		dense := lin.Dense()
		if e := maxRelErr(dense, ref); e > 1e-6 {
			t.Errorf("%s: Dense() off by %.3g", fx.name, e)
		}
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	run := NewRunner(2)
	defer run.Close()
	fx := fixtures(t, r, 512, 256)[2]
	a, _ := NewF32(512, 4, randVec(r, 2048))
	b, _ := NewF32(4, 256, randVec(r, 1024))
	lin, _ := NewLinear(fx.name, fx.m, a, b)
	x, y := randVec(r, 4*256), make([]float32, 4*512)
	run.Apply(lin, y, x, 4)
	if n := testing.AllocsPerRun(20, func() { run.Apply(lin, y, x, 1); run.Apply(lin, y, x, 4) }); n != 0 {
		t.Errorf("%.1f allocations per product in steady state, want 0", n)
	}
}

func TestBadShapes(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"unknown format", func() error { _, err := qformat.Lookup("LUT3 magic"); return err }(), `unknown quantization format "LUT3 magic"`},
		{"odd rows for vector", func() error {
			_, err := NewLUT("vector 2x16", 3, 4, 2, make([]float32, 32), make([]uint8, 6), nil)
			return err
		}(), "not a multiple of the vector length"},
		{"index count", func() error {
			_, err := NewLUT("LUT4 per-tensor", 4, 4, 1, make([]float32, 16), make([]uint8, 15), nil)
			return err
		}(), "15 indices"},
		{"codebook too big", func() error {
			_, err := NewLUT("LUT4 per-tensor", 4, 4, 1, make([]float32, 257), make([]uint8, 16), nil)
			return err
		}(), "codebook"},
		{"scale length", func() error {
			_, err := NewLUT("LUT4 per-tensor + pcs", 4, 4, 1, make([]float32, 16), make([]uint8, 16), make([]float32, 3))
			return err
		}(), "scale has 3 values"},
		{"int8 missing scale", func() error { _, err := NewInt8(2, 2, make([]int8, 4), nil); return err }(), "scale is missing"},
		{"bf16 size", func() error { _, err := NewBF16(2, 2, make([]uint16, 3)); return err }(), "3 values for 2×2"},
		{"lowrank misfit", func() error {
			w, _ := NewF32(4, 4, make([]float32, 16))
			a, _ := NewF32(4, 2, make([]float32, 8))
			b, _ := NewF32(2, 5, make([]float32, 10))
			_, err := NewLinear("q_proj", w, a, b)
			return err
		}(), "q_proj: low-rank factors"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, c.err, c.want)
		}
	}
}

// An index past the stored codebook entries (malformed data) reads a zero
// entry in both the product and Densify, never out of bounds.
func TestIndexPastCodebook(t *testing.T) {
	for _, cd := range []int{1, 2, 4} {
		lut := make([]float32, 4*cd)
		for i := range lut {
			lut[i] = float32(i + 1)
		}
		idx := []uint8{0, 200, 3, 255}
		m, err := NewLUT("x", cd, 4, cd, lut, idx, nil)
		if err != nil {
			t.Fatal(err)
		}
		x := []float32{1, 10, 100, 1000}
		y := make([]float32, cd)
		run := NewRunner(1)
		lin, _ := NewLinear("x", m, nil, nil)
		run.Apply(lin, y, x, 1)
		run.Close()
		dense := Densify(m)
		for tt := 0; tt < cd; tt++ {
			want := float32(tt+1) + 100*float32(3*cd+tt+1)
			if y[tt] != want {
				t.Errorf("cd=%d row %d: product %v, want %v", cd, tt, y[tt], want)
			}
			if dense[tt*4+1] != 0 || dense[tt*4+3] != 0 {
				t.Errorf("cd=%d: Densify gives %v for out-of-codebook indices", cd, dense[tt*4:tt*4+4])
			}
		}
	}
}

// A codebook of ≤ 16 entries is stored two indices a byte (half what a
// product reads); one index past 4 bits keeps the byte layout, which reads
// it as the codebook's zero padding.
func TestLUTPacksNibbles(t *testing.T) {
	const rows, cols = 4, 40 // a full 32-index block and a short one per row
	r := rand.New(rand.NewPCG(15, 16))
	lut := randVec(r, 12)
	idx := make([]uint8, rows*cols)
	for i := range idx {
		idx[i] = uint8(r.IntN(12))
	}
	x := randVec(r, cols)
	for _, bad := range []bool{false, true} {
		if bad {
			idx[cols+5] = 16
		}
		m, err := NewLUT("LUT4", rows, cols, 1, lut, idx, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(rows*32 + 12*2)
		if bad {
			want = int64(rows*cols + 12*2)
		}
		if m.Bytes() != want {
			t.Errorf("bad index %v: Bytes() = %d, want %d", bad, m.Bytes(), want)
		}
		ref := make([]float64, rows*cols)
		for i, e := range idx {
			if e < 12 {
				ref[i] = float64(lut[e])
			}
		}
		y := make([]float32, rows)
		m.mulVec(y, x, 0, rows)
		if e := maxRelErr(y, matmul64(ref, rows, cols, x, 1)); e > 1e-5 {
			t.Errorf("bad index %v: product off by %.3g", bad, e)
		}
		dense := Densify(m)
		for i := range dense {
			if float64(dense[i]) != ref[i] {
				t.Fatalf("bad index %v: Densify[%d] = %v, want %v", bad, i, dense[i], ref[i])
			}
		}
	}
}
