package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// raggedLens covers empty, single, sub-vector, exact and ragged tails
// around the 8- and 32-element steps of the kernels.
var raggedLens = []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 63, 64, 100, 257, 1029}

// kernelLevels lists the levels available here, lowest first.
func kernelLevels() []level { return machineLevels() }

// useLevel selects l and returns a function restoring the previous level.
func useLevel(l level) (restore func()) {
	prev := currentLevel()
	l.use()
	return prev.use
}

// sameAtAmd64Levels runs f at every SIMD level of an amd64 machine and
// fails unless each gives the first one's bits: for kernels whose levels
// promise the same results.
func sameAtAmd64Levels(t *testing.T, what string, f func() []float32) {
	t.Helper()
	var first []float32
	var firstLevel string
	for _, l := range kernelLevels() {
		if !l.simd || runtime.GOARCH != "amd64" {
			continue
		}
		restore := useLevel(l)
		got := f()
		restore()
		if first == nil {
			first, firstLevel = got, l.name
		} else if !slices.Equal(first, got) {
			t.Errorf("%s: %s gives %v, %s %v", what, firstLevel, first, l.name, got)
		}
	}
}

// haveLUT64 reports whether lut64Dot2 has a kernel at the selected level:
// amd64's AVX2 and AVX-512 (arm64 has no 64-entry kernel).
func haveLUT64() bool { return simd && runtime.GOARCH == "amd64" }

// withSIMD runs f once per available kernel set, restoring the setting.
func withSIMD(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	levels := kernelLevels()
	if len(levels) == 1 {
		t.Log("no SIMD kernels on this machine: fallback only")
	}
	for _, l := range levels {
		restore := useLevel(l)
		t.Run("kernels="+l.name, f)
		restore()
	}
}

// checkSum compares a float32 sum of products with its float64 value
// relative to Σ|terms| (the scale of float32 rounding in any order).
func checkSum(t *testing.T, what string, got float32, want, abs float64) {
	t.Helper()
	if d := math.Abs(float64(got) - want); d > 1e-5*abs+1e-30 {
		t.Errorf("%s: got %v, want %v (|Δ| %.3g > 1e-5 × Σ|terms| %.3g)", what, got, want, d, abs)
	}
}

// Each kernel, SIMD and fallback, against a naive float64 sum.
func TestKernelsMatchNaive(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		var tab [2][16]float32
		for i := range tab {
			copy(tab[i][:], randVec(r, 16))
		}
		for _, n := range raggedLens {
			// Slices cut at an odd offset so nothing is 32-byte aligned.
			x := randVec(r, n+1)[1:]
			a := randVec(r, n+3)[3:]
			bw := make([]uint16, n)
			q := make([]int8, n)
			idx := make([]uint8, n)
			for i := range n {
				bw[i] = uint16(math.Float32bits(float32(r.NormFloat64())) >> 16)
				q[i] = int8(r.IntN(256) - 128)
				idx[i] = uint8(r.IntN(16))
			}
			var dw, da, bf, ba, iw, ia, l0, l0a, l1, l1a float64
			for i := range n {
				xi := float64(x[i])
				dw, da = dw+float64(a[i])*xi, da+math.Abs(float64(a[i])*xi)
				b := float64(math.Float32frombits(uint32(bw[i]) << 16))
				bf, ba = bf+b*xi, ba+math.Abs(b*xi)
				iw, ia = iw+float64(q[i])*xi, ia+math.Abs(float64(q[i])*xi)
				e0, e1 := float64(tab[0][idx[i]]), float64(tab[1][idx[i]])
				l0, l0a = l0+e0*xi, l0a+math.Abs(e0*xi)
				l1, l1a = l1+e1*xi, l1a+math.Abs(e1*xi)
			}
			checkSum(t, fmt.Sprintf("dot n=%d", n), dot(a, x), dw, da)
			xs := [4][]float32{x, randVec(r, n), randVec(r, n+5)[5:], randVec(r, n)}
			var d4 [4]float32
			d4[0], d4[1], d4[2], d4[3] = dot4(a, xs[0], xs[1], xs[2], xs[3])
			for k, xk := range xs {
				var w, wa float64
				for i := range n {
					w, wa = w+float64(a[i])*float64(xk[i]), wa+math.Abs(float64(a[i])*float64(xk[i]))
				}
				checkSum(t, fmt.Sprintf("dot4[%d] n=%d", k, n), d4[k], w, wa)
			}
			checkSum(t, fmt.Sprintf("bf16Dot n=%d", n), bf16Dot(bw, x), bf, ba)
			checkSum(t, fmt.Sprintf("int8Dot n=%d", n), int8Dot(q, x), iw, ia)
			// The nibble kernels over the packed row; the pair kernel
			// reports !ok without SIMD (the caller buckets instead).
			p, _, ok := packNibbles(idx, 1, n)
			if !ok {
				t.Fatalf("packNibbles refused 4-bit indices")
			}
			checkSum(t, fmt.Sprintf("lutNibDot n=%d", n), lutNibDot(&tab[0], p, x), l0, l0a)
			s0, s1, ok := lutNibDot2(&tab, p, x)
			if !ok {
				s0, s1 = lutNibDotGo(&tab[0], p, x), lutNibDotGo(&tab[1], p, x)
			}
			checkSum(t, fmt.Sprintf("lutNibDot2[0] n=%d", n), s0, l0, l0a)
			checkSum(t, fmt.Sprintf("lutNibDot2[1] n=%d", n), s1, l1, l1a)
			if simd && n >= 32 && !ok {
				t.Errorf("lutNibDot2 n=%d: SIMD kernel declined", n)
			}
			// Two packed rows (the second with reversed indices and the
			// other table) against four activation rows n+3 apart.
			if haveNibBatch() && n > 0 {
				rev := slices.Clone(idx)
				slices.Reverse(rev)
				pB, _, _ := packNibbles(rev, 1, n)
				xs := randVec(r, 3*(n+3)+n)
				var got [8]float32
				lutNibDot2x4(&tab[0], &tab[1], p, pB, xs, n+3, n, &got)
				for k := range got {
					row, tb := idx, &tab[0]
					if k >= 4 {
						row, tb = rev, &tab[1]
					}
					var w, wa float64
					for i := range n {
						e := float64(tb[row[i]]) * float64(xs[(k%4)*(n+3)+i])
						w, wa = w+e, wa+math.Abs(e)
					}
					checkSum(t, fmt.Sprintf("lutNibDot2x4[%d] n=%d", k, n), got[k], w, wa)
				}
				// Four rows: A and B again, then a shuffled row twice (a
				// vector group's shared index row) with both tables. Each
				// output is the two-row kernel's bit for bit (a row's
				// result must not depend on the kernel the row split chose).
				shuf := slices.Clone(idx)
				r.Shuffle(len(shuf), func(i, j int) { shuf[i], shuf[j] = shuf[j], shuf[i] })
				pC, _, _ := packNibbles(shuf, 1, n)
				rows := [4][]uint8{idx, rev, shuf, shuf}
				q := nibQuad{tab: [4]*[16]float32{&tab[0], &tab[1], &tab[1], &tab[0]}}
				p4 := [4][]uint8{p, pB, pC, pC}
				var got4 [16]float32
				lutNibDot4x4(&q, &p4, xs, n+3, n, &got4)
				var pair [8]float32
				lutNibDot2x4(&tab[1], &tab[0], pC, pC, xs, n+3, n, &pair)
				for i := range 4 {
					for k := range 4 {
						var w, wa float64
						for j := range n {
							e := float64(q.tab[i][rows[i][j]]) * float64(xs[k*(n+3)+j])
							w, wa = w+e, wa+math.Abs(e)
						}
						name := fmt.Sprintf("lutNibDot4x4[%d,%d] n=%d", i, k, n)
						checkSum(t, name, got4[4*i+k], w, wa)
						if two := [4]float32{got[k], got[4+k], pair[k], pair[4+k]}[i]; haveNibBatch4() && got4[4*i+k] != two {
							t.Errorf("%s = %v, lutNibDot2x4 %v: not bit-identical", name, got4[4*i+k], two)
						}
					}
				}
			}
			// 64 entries: the 16 above plus 48 more, indices over all 64.
			var tab64 [2][64]float32
			var lut64 [2][256]float32
			for k := range tab64 {
				copy(tab64[k][:], randVec(r, 64))
				copy(lut64[k][:], tab64[k][:])
			}
			idx64 := make([]uint8, n)
			var w0, w0a, w1, w1a float64
			for i := range n {
				idx64[i] = uint8(r.IntN(64))
				e0, e1 := float64(tab64[0][idx64[i]]), float64(tab64[1][idx64[i]])
				w0, w0a = w0+e0*float64(x[i]), w0a+math.Abs(e0*float64(x[i]))
				w1, w1a = w1+e1*float64(x[i]), w1a+math.Abs(e1*float64(x[i]))
			}
			s0, s1, ok = lut64Dot2(&tab64, idx64, x)
			if !ok {
				s0, s1 = lut1DotGo(&lut64[0], idx64, x), lut1DotGo(&lut64[1], idx64, x)
			} else if n < 8 {
				t.Errorf("lut64Dot2 n=%d: accepted a row the kernel does not cover", n)
			}
			if haveLUT64() && n >= 8 && !ok {
				t.Errorf("lut64Dot2 n=%d: SIMD kernel declined valid indices", n)
			}
			checkSum(t, fmt.Sprintf("lut64Dot2[0] n=%d", n), s0, w0, w0a)
			checkSum(t, fmt.Sprintf("lut64Dot2[1] n=%d", n), s1, w1, w1a)
		}
	})
}

// Every format through Apply, SIMD and fallback, on ragged column counts,
// against the spec's dense weights; and SIMD against fallback directly.
func TestFormatsSIMDvsFallback(t *testing.T) {
	levels := kernelLevels()
	if len(levels) == 1 {
		t.Skip("no SIMD kernels on this machine")
	}
	r := rand.New(rand.NewPCG(13, 14))
	run := NewRunner(1)
	defer run.Close()
	for _, cols := range []int{1, 7, 9, 33, 203} {
		for _, fx := range fixtures(t, r, 8, cols) {
			f32 := make([]float32, len(fx.ref))
			for i, v := range fx.ref {
				f32[i] = float32(v)
			}
			dense, _ := NewF32(8, cols, f32)
			for _, m := range []Matrix{fx.m, dense} {
				lin, _ := NewLinear(fx.name, m, nil, nil)
				x := randVec(r, cols)
				want := matmul64(fx.ref, 8, cols, x, 1)
				got := make([][]float32, len(levels))
				for k, l := range levels {
					restore := useLevel(l)
					got[k] = make([]float32, 8)
					run.Apply(lin, got[k], x, 1)
					restore()
					if e := maxRelErr(got[k], want); e > 1e-5 {
						t.Errorf("%s (%s) cols=%d kernels=%s: relative error %.3g > 1e-5", fx.name, m.Format(), cols, l.name, e)
					}
				}
				want32 := make([]float64, 8)
				for i, v := range got[0] {
					want32[i] = float64(v)
				}
				for k := 1; k < len(levels); k++ {
					if e := maxRelErr(got[k], want32); e > 1e-5 {
						t.Errorf("%s (%s) cols=%d: %s vs fallback relative difference %.3g > 1e-5", fx.name, m.Format(), cols, levels[k].name, e)
					}
				}
			}
		}
	}
}

// An index past the codebook inside the SIMD-covered part of a 16- or
// 64-entry codebook row is caught and read as the zero padding, like the
// fallback does.
func TestSIMDIndexPastCodebook(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		// Each bad value alone in its row: the first index past the
		// codebook, and the largest byte.
		for _, c := range []struct{ cd, entries, bad int }{{1, 16, 16}, {2, 16, 16}, {4, 16, 16},
			{2, 64, 64}, {4, 64, 64}, {1, 16, 255}, {2, 16, 255}, {2, 64, 255}, {4, 64, 255}} {
			cd, entries := c.cd, c.entries
			const cols = 40
			lut := make([]float32, entries*cd)
			for i := range lut {
				lut[i] = float32(i + 1)
			}
			idx := make([]uint8, cols)
			for j := range idx {
				idx[j] = uint8(j * 7 % entries)
			}
			idx[21] = uint8(c.bad)
			m, err := NewLUT("x", cd, cols, cd, lut, idx, nil)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float32, cols)
			for j := range x {
				x[j] = float32(j%7) - 3
			}
			y := make([]float32, cd)
			m.mulVec(y, x, 0, cd)
			for tt := 0; tt < cd; tt++ {
				var want float32
				for j, i := range idx {
					if int(i) < entries {
						want += lut[int(i)*cd+tt] * x[j]
					}
				}
				if y[tt] != want { // small integers: exact in any order
					t.Errorf("cd=%d entries=%d bad=%d row %d: %v, want %v", cd, entries, c.bad, tt, y[tt], want)
				}
			}
		}
	})
}

// The same product twice gives bit-identical results (fixed reduction order).
func TestKernelsDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	run := NewRunner(2)
	defer run.Close()
	for _, fx := range fixtures(t, r, 64, 777) {
		lin, _ := NewLinear(fx.name, fx.m, nil, nil)
		x := randVec(r, 777)
		a, b := make([]float32, 64), make([]float32, 64)
		run.Apply(lin, a, x, 1)
		run.Apply(lin, b, x, 1)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%s: row %d differs between runs: %v vs %v", fx.name, i, a[i], b[i])
			}
		}
	}
}

// TestSetLevel: Levels starts at the pure-Go loops and ends at the level
// the machine runs by default; SetLevel selects each by name (KernelLevel
// names it, and at "go" no SIMD switch is on), and refuses a name the
// machine lacks, listing what it has, without changing the level.
func TestSetLevel(t *testing.T) {
	names := Levels()
	top := KernelLevel()
	if names[0] != "go" || names[len(names)-1] != top {
		t.Fatalf("Levels() = %v, want go first and the default %q last", names, top)
	}
	defer SetLevel(top)
	for _, n := range names {
		if err := SetLevel(n); err != nil {
			t.Fatal(err)
		}
		if got := KernelLevel(); got != n {
			t.Errorf("after SetLevel(%q) KernelLevel() = %q", n, got)
		}
		if n == "go" && (simd || simd512 || simdVNNI || simdDot || simdF16) {
			t.Errorf("SetLevel(go) left a SIMD switch on")
		}
	}
	SetLevel(top)
	err := SetLevel("avx1024")
	if err == nil || !strings.Contains(err.Error(), `"avx1024"`) || !strings.Contains(err.Error(), strings.Join(names, ", ")) {
		t.Errorf("SetLevel(avx1024) = %v, want an error naming it and the levels %v", err, names)
	}
	if got := KernelLevel(); got != top {
		t.Errorf("a refused SetLevel changed the level to %q", got)
	}
}
