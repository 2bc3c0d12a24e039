package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// codebookCases are float codebooks of 16 entries: Gaussian, one sign
// only, a single nonzero entry, the largest magnitude negative, tiny and
// huge magnitudes, fewer stored entries (zero padding), all zero.
func codebookCases(r *rand.Rand) [][16]float32 {
	var out [][16]float32
	add := func(f func(e int) float32) {
		var c [16]float32
		for e := range c {
			c[e] = f(e)
		}
		out = append(out, c)
	}
	for range 20 {
		add(func(int) float32 { return float32(r.NormFloat64()) })
	}
	add(func(int) float32 { return float32(math.Abs(r.NormFloat64())) })
	add(func(int) float32 { return -float32(math.Abs(r.NormFloat64())) })
	add(func(e int) float32 { return float32(map[bool]float64{true: 0.3}[e == 5]) })
	add(func(e int) float32 { return float32(e) - 8.7 })
	add(func(int) float32 { return float32(r.NormFloat64() * 1e-30) })
	add(func(int) float32 { return float32(r.NormFloat64() * 1e30) })
	add(func(e int) float32 { return float32(map[bool]float64{true: r.NormFloat64()}[e < 9]) })
	add(func(int) float32 { return 0 })
	// Two outliers 100× the bulk: finer codes than 12 bits (codeLevels).
	add(func(e int) float32 {
		return float32(map[int]float64{0: -10, 15: 9}[e] + map[bool]float64{true: 0.1 * r.NormFloat64()}[e%15 != 0])
	})
	return out
}

// quantizedError is Σ_e w_e (c_e − s·code_e)² with w_e = count_e + 1.
func quantizedError(c *[16]float32, count *[16]float64, code *[16]int16, s float64) float64 {
	var err float64
	for e, v := range c {
		d := float64(v) - s*float64(code[e])
		err += (count[e] + 1) * d * d
	}
	return err
}

// TestIntCodebook: the codebook takes the level of codeLevels of least
// levelCost, with the activation bound its lanes leave; every entry is within half a step of
// its code and the codes within ±codeMax (no clamping), the step is at
// most twice the finest one that avoids clamping, the weighted error is no
// worse than the plain scale max|c|/codeMax (what "chosen to minimise the
// error" must beat or match), relErr is that error, and the byte tables
// rebuild the codes. It logs the error measured.
func TestIntCodebook(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 1))
	var worst float64
	used := map[int]int{} // codebooks per level
	for i, c := range codebookCases(r) {
		var count [16]float64
		for e := range count {
			count[e] = float64(r.IntN(1000))
		}
		var tab [4][16]float32
		tab[0] = c
		idx := make([]uint8, 0, 16000)
		for e, n := range count {
			for range int(n) {
				idx = append(idx, uint8(e))
			}
		}
		cb := newIntCodebook(&tab, 1, idx, len(idx))
		code, s, relErr, codeMax := &cb.code[0], float64(cb.scale[0]), cb.relErr[0], cb.codeMax
		used[codeMax]++
		// The level of least cost, the first of a tie, with its lanes' bound.
		pick, pickCost := -1, math.Inf(1)
		for level, lm := range codeLevels {
			var lc [4][16]int16
			_, e := quantizeCodebook(&c, &count, &lc[0], lm)
			a := actMaxFor(bruteLaneSum(&lc, 1, idx, len(idx)))
			if lm == codeMax && a != cb.actMax {
				t.Errorf("case %d: activation bound %g, its lanes leave %g", i, cb.actMax, a)
			}
			if cost := levelCost(e, a); cost < pickCost {
				pick, pickCost = level, cost
			}
		}
		if codeLevels[pick] != codeMax {
			t.Errorf("case %d: codes of ±%d, the least cost is at ±%d", i, codeMax, codeLevels[pick])
		}
		var amax, norm float64
		for e, v := range c {
			amax = max(amax, math.Abs(float64(v)))
			norm += (count[e] + 1) * float64(v) * float64(v)
			if d := math.Abs(float64(v) - s*float64(code[e])); d > s/2*(1+1e-6) || int(code[e]) > codeMax || int(code[e]) < -codeMax {
				t.Errorf("case %d entry %d: %g ≈ %g·%d, error %g > half step", i, e, v, s, code[e], d)
			}
			if k := int16(uint16(cb.lo[0][e]) | uint16(cb.hi[0][e])<<8); k != code[e] {
				t.Errorf("case %d entry %d: byte tables give %d, code %d", i, e, k, code[e])
			}
		}
		if amax == 0 {
			if s != 0 || relErr != 0 || *code != [16]int16{} {
				t.Errorf("case %d: zero codebook gave scale %g, codes %v", i, s, *code)
			}
			continue
		}
		if sMin := amax / (float64(codeMax) + 0.5); s > 2*sMin*(1+1e-6) || s < sMin {
			t.Errorf("case %d: scale %g outside [%g, 2×]", i, s, sMin)
		}
		got := quantizedError(&c, &count, code, s)
		if want := relErr * relErr * norm; math.Abs(got-want) > 1e-9*want+1e-300 {
			t.Errorf("case %d: relErr² × norm %g, recomputed error %g", i, want, got)
		}
		plain := amax / float64(codeMax)
		var pc [16]int16
		for e, v := range c {
			pc[e] = int16(math.RoundToEven(float64(v) / plain))
		}
		// The stored scale is float32: allow its rounding (2^−24 relative).
		if p := quantizedError(&c, &count, &pc, plain); got > p*(1+1e-5)+1e-13*norm {
			t.Errorf("case %d: error %g worse than scale max/%d's %g", i, got, codeMax, p)
		}
		worst = max(worst, relErr)
		if relErr > 1/float64(codeMax) {
			t.Errorf("case %d: codebook error %.3g > one step of %d levels", i, relErr, codeMax)
		}
	}
	t.Logf("worst weighted RMS codebook error %.3g of the RMS weight; codebooks per code bound %v", worst, used)
	if len(used) < 2 {
		t.Errorf("the cases exercise one code bound only: %v", used)
	}
}

// checkQuantized checks blocks of 32 codes (code j of x stored at
// pos(j)): their number, every value within scale/2 of scale·code, no
// code equal to never (the negative code outside the symmetric range),
// and the padding zero.
func checkQuantized[T int8 | int16](t *testing.T, x []float32, codes []T, scales []float32, levels T, group int, pos func(int) int) {
	t.Helper()
	n, nb := len(x), (len(x)+Q8Block-1)/Q8Block
	if len(codes) != nb*Q8Block || len(scales) != nb {
		t.Fatalf("n=%d: %d codes, %d scales; want %d, %d", n, len(codes), len(scales), nb*Q8Block, nb)
	}
	seen := make([]bool, len(codes))
	for j, v := range x {
		p, s := pos(j), scales[j/Q8Block]
		seen[p] = true
		if d := math.Abs(float64(v) - float64(s)*float64(codes[p])); d > float64(s)/2*(1+1e-6) || codes[p] < -levels {
			t.Fatalf("n=%d x[%d]=%g: code %d scale %g, error %g > scale/2", n, j, v, codes[p], s, d)
		}
	}
	for j := range codes {
		if !seen[j] && codes[j] != 0 {
			t.Fatalf("n=%d: padding code %d = %d", n, j, codes[j])
		}
	}
	// Each run of group blocks shares its scale, and its largest magnitude
	// is exactly ±levels (unless the run is all zero).
	for b0 := 0; b0 < nb; b0 += group {
		b1 := min(nb, b0+group)
		var top T
		for b := b0; b < b1; b++ {
			if scales[b] != scales[b0] {
				t.Fatalf("n=%d: block %d's scale %g, its run's %g", n, b, scales[b], scales[b0])
			}
			for _, c := range codes[b*Q8Block : (b+1)*Q8Block] {
				top = max(top, c, -c)
			}
		}
		if top != levels && scales[b0] != 0 {
			t.Fatalf("n=%d: the run at block %d peaks at |code| %d, want %d", n, b0, top, levels)
		}
	}
}

// q4Row is a random packed row of n indices (all 16 values) and its
// unpacked indices.
func q4Row(r *rand.Rand, n int) ([]uint8, []uint8) {
	idx := make([]uint8, n)
	for j := range idx {
		idx[j] = uint8(r.IntN(16))
	}
	nib, _, ok := packNibbles(idx, 1, n)
	if !ok {
		panic("indices < 16 did not pack")
	}
	return nib, idx
}

// checkQ4Dot checks one row's integer product got (codebook scale s
// applied) against (1) the quantized product Σ_b sq_b·Σ s·code·q in
// float64, within float rounding, and (2) the float product Σ c·x in
// float64, within the derived bound: per weight |c·x − s·code·sq·q| ≤
// |c − s·code|·|x| + s|code|·|x − sq·q| ≤ (s/2)|x| + s|code|·sq/2, the
// codebook's half step and the activation's.
func checkQ4Dot(t *testing.T, what string, got float32, c *[16]float32, code *[16]int16, s float32, idx []uint8, x []float32, q *Q16) {
	t.Helper()
	var quantized, qabs, exact, abs, bound float64
	for b := 0; b*Q16Block < len(idx); b++ {
		var acc, accAbs float64
		sq := float64(q.Scale[b])
		for j := b * Q16Block; j < min((b+1)*Q16Block, len(idx)); j++ {
			k := float64(code[idx[j]])
			qj := float64(q.Q[q.at(j)])
			acc += k * qj
			accAbs += math.Abs(k * qj)
			exact += float64(c[idx[j]]) * float64(x[j])
			abs += math.Abs(float64(c[idx[j]]) * float64(x[j]))
			bound += float64(s)/2*math.Abs(float64(x[j])) + float64(s)*math.Abs(k)*sq/2
		}
		quantized += float64(s) * sq * acc
		qabs += float64(s) * sq * accAbs
	}
	if d := math.Abs(float64(got) - quantized); d > 1e-5*qabs+1e-30 {
		t.Errorf("%s: integer product %g, quantized product %g (|Δ| %.3g > 1e-5 × %.3g)", what, got, quantized, d, qabs)
	}
	if d := math.Abs(float64(got) - exact); d > bound+2e-5*abs+1e-30 {
		t.Errorf("%s: integer product %g, float product %g (|Δ| %.3g > bound %.3g)", what, got, exact, d, bound)
	}
}

// TestLUTQ16Dot: at every level, on ragged lengths, lutQ16Dot and both
// rows of lutQ16Dot2 against the quantized and float products
// (checkQ4Dot).
func TestLUTQ16Dot(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 2))
		var q Q16
		for _, n := range append(raggedLens, 4096, 4096+40) {
			if n == 0 {
				continue // a product has at least one column
			}
			var tab [4][16]float32
			for i := range 2 {
				copy(tab[i][:], randVec(r, 16))
			}
			p, idx := q4Row(r, n)
			cb := newIntCodebook(&tab, 2, idx, n)
			_, x := q8Inputs(r, n)
			QuantizeQ16(&q, x, cb.actMax)
			checkQ4Dot(t, "lutQ16Dot", lutQ16Dot(cb, 0, p, &q)*cb.scale[0], &tab[0], &cb.code[0], cb.scale[0], idx, x, &q)
			s0, s1 := lutQ16Dot2(cb, 0, p, &q)
			checkQ4Dot(t, "lutQ16Dot2 row 0", s0*cb.scale[0], &tab[0], &cb.code[0], cb.scale[0], idx, x, &q)
			checkQ4Dot(t, "lutQ16Dot2 row 1", s1*cb.scale[1], &tab[1], &cb.code[1], cb.scale[1], idx, x, &q)
		}
	})
}

// extremeCols is two whole Q16 runs and a short one.
const extremeCols = (2*Q16Group + 5) * Q16Block

// extremeCodebook is component 0 all +codeMax and component 1 all
// −codeMax, and a packed row of extremeCols indices using every entry.
func extremeCodebook(codeMax int) (*intCodebook, []uint8) {
	cb := &intCodebook{codeMax: codeMax, actMax: actMaxFor(lanePicks * codeMax)}
	var pos, neg [16]int16
	for e := range 16 {
		pos[e], neg[e] = int16(codeMax), -int16(codeMax)
	}
	cb.setCodes(0, &pos)
	cb.setCodes(1, &neg)
	idx := make([]uint8, extremeCols)
	for j := range idx {
		idx[j] = uint8(j % 16)
	}
	p, _, _ := packNibbles(idx, 1, extremeCols)
	return cb, p
}

// TestLUTQ16DotExtremes: codes ±codeMax against activation codes
// ±actMax at each of codeLevels, all products of one sign (the
// largest int32 block sums the lane bound allows, < 2³¹), at every level, for both
// kernels: no overflow, the result within float rounding of the exact sum.
func TestLUTQ16DotExtremes(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		const n = extremeCols
		for _, codeMax := range codeLevels {
			cb, p := extremeCodebook(codeMax)
			x := make([]float32, n)
			for j := range x {
				x[j] = 1
			}
			var q Q16
			QuantizeQ16(&q, x, cb.actMax)
			want := float64(n) * float64(codeMax) * float64(cb.actMax) * float64(q.Scale[0])
			s0, s1 := lutQ16Dot2(cb, 0, p, &q)
			for _, got := range []float32{lutQ16Dot(cb, 0, p, &q), s0, -s1, -lutQ16Dot(cb, 1, p, &q)} {
				if math.Abs(float64(got)-want) > 1e-6*want {
					t.Fatalf("codes ±%d: %g, want %g", codeMax, got, want)
				}
			}
		}
	})
}

// TestRunnerIntegerLUT: with Runner.Integer a single-row product of every
// ≤ 16-entry codebook format (CD 1, 2, 4; with and without a per-channel
// scale; ragged column counts) gives each row within checkQ4Dot's bound of
// the float product (times the row scale); without it, the float path
// bit-identically; a two-row product is two one-row integer products where
// the batch kernels run (haveQ16Batch), the float one elsewhere; and a
// matrix with an index ≥ 16 (left unpacked) stays on the float path.
// codebookFormats16 are the packed ≤ 16-entry formats with an integer
// codebook.
var codebookFormats16 = []string{"LUT4 per-tensor", "LUT4 per-tensor + pcs", "vector 2x16", "vector 2x16 + pcs", "vector 4x16 + pcs"}

func TestRunnerIntegerLUT(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 3))
		run := NewRunner(2)
		defer run.Close()
		run.MinParallel = 1
		const rows = 24
		for _, name := range codebookFormats16 {
			for _, cols := range []int{1, 7, 33, 203} {
				for _, malformed := range []bool{false, true} {
					m, f, lut, idx, _ := randLUT(t, r, name, rows, cols, malformed)
					l := &Linear{W: m}
					_, x := q8Inputs(r, 2*cols)
					apply := func(integer bool, n int) []float32 {
						run.Integer = integer
						out := make([]float32, n*rows)
						run.Apply(l, out, x, n)
						return out
					}
					fl, in := apply(false, 1), apply(true, 1)
					want := make([]float32, rows)
					m.mulVec(want, x[:cols], 0, rows)
					if !equalBits(fl, want) {
						t.Fatalf("%s cols %d: float mode is not the float kernel", name, cols)
					}
					if malformed || !m.hasQ16() {
						if m.hasQ16() {
							t.Fatalf("%s: an index ≥ 16 left an integer codebook", name)
						}
						if !equalBits(in, fl) {
							t.Fatalf("%s cols %d malformed %v: integer mode left the float path", name, cols, malformed)
						}
						continue
					}
					var q Q16
					QuantizeQ16(&q, x[:cols], m.icb.actMax)
					for i := range rows {
						tc := i % f.CD
						var c [16]float32
						for e := range f.Entries {
							c[e] = lut[e*f.CD+tc]
						}
						rs := m.rowScale(i)
						checkQ4Dot(t, name, in[i]/rs, &c, &m.icb.code[tc], m.icb.scale[tc],
							idx[i/f.CD*cols:(i/f.CD+1)*cols], x[:cols], &q)
					}
					two := apply(false, 2)
					if haveQ16Batch() { // the batch path: each row's own one-row integer product
						second := make([]float32, rows)
						run.Integer = true
						run.Apply(l, second, x[cols:2*cols], 1)
						two = append(slices.Clone(in), second...)
					}
					if !equalBits(apply(true, 2), two) {
						t.Fatalf("%s cols %d: a two-row product is neither two one-row products nor the float one", name, cols)
					}
				}
			}
		}
	})
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// BenchmarkLUTQ16 times one 1024×4096 product of each ≤ 16-entry codebook
// format through the float kernel (mulVec) and the integer one
// (QuantizeQ16 once, then mulVecQ16), alternating inside each iteration, at
// the best level here; it reports the median ns/weight of both and the
// median ratio float / integer (medians: a busy machine's stalls hit single
// iterations).
func BenchmarkLUTQ16(b *testing.B) {
	const rows, cols = 1024, 4096
	for _, bc := range []struct {
		name string
		cd   int
	}{{"LUT4", 1}, {"vector2x16", 2}, {"vector4x16", 4}} {
		b.Run(bc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 3))
			idx := make([]uint8, rows/bc.cd*cols)
			for i := range idx {
				idx[i] = uint8(r.IntN(16))
			}
			m, err := NewLUT("bench", rows, cols, bc.cd, randVec(r, 16*bc.cd), idx, randVec(r, rows))
			if err != nil {
				b.Fatal(err)
			}
			_, x := q8Inputs(r, cols)
			y := make([]float32, rows)
			var q Q16
			var tf, ti, ratio []float64
			for b.Loop() {
				t0 := time.Now()
				m.mulVec(y, x, 0, rows)
				t1 := time.Now()
				QuantizeQ16(&q, x, m.icb.actMax)
				m.mulVecQ16(y, &q, 0, rows)
				f, i := float64(t1.Sub(t0)), float64(time.Since(t1))
				tf, ti, ratio = append(tf, f), append(ti, i), append(ratio, f/i)
			}
			med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
			b.ReportMetric(med(tf)/(rows*cols), "ns/weight_float")
			b.ReportMetric(med(ti)/(rows*cols), "ns/weight_int")
			b.ReportMetric(med(ratio), "speedup")
		})
	}
}

// gptqHead is the head codebook of a GPTQ export of the small synthetic
// preset (bench/rebuild/fastkl.sh: LUT4 per-tensor + pcs), and
// gptqHeadCounts how many of its indices select each entry: two rare
// entries at ±10 set the step for a bulk within ±1.8.
var (
	gptqHead = [16]float32{-10.6875, -5.3554688, -1.7890625, -1.2636719, -0.8935547, -0.60009766, -0.34570312, -0.11541748,
		0.10308838, 0.32592773, 0.56591797, 0.84472656, 1.2041016, 1.7265625, 4.8828125, 9.5859375}
	gptqHeadCounts = [16]int{3818, 6493, 141677, 288094, 374004, 420299, 428371, 421464, 415880, 413188, 408721, 382759, 311141, 167545, 6247, 4603}
)

// gptqHeadIndices are n indices drawn with gptqHead's frequencies.
func gptqHeadIndices(r *rand.Rand, n int) []uint8 {
	total := 0
	for _, c := range gptqHeadCounts {
		total += c
	}
	idx := make([]uint8, n)
	for i := range idx {
		k := r.IntN(total)
		for e, c := range gptqHeadCounts {
			if k -= c; k < 0 {
				idx[i] = uint8(e)
				break
			}
		}
	}
	return idx
}

// TestIntCodebookOutliers: with 12-bit codes gptqHead's weighted error was
// 1.06e-3 of the RMS weight and the fast mode missed its top-1 bound on
// that export (docs/KERNELS.md). Its level must keep it as close as the
// quick export's codebooks come (≤ 2.8e-4).
func TestIntCodebookOutliers(t *testing.T) {
	tab := [4][16]float32{gptqHead}
	var idx []uint8
	for e, n := range gptqHeadCounts {
		idx = append(idx, slices.Repeat([]uint8{uint8(e)}, n)...)
	}
	if cb := newIntCodebook(&tab, 1, idx, len(idx)); cb.relErr[0] > 2.8e-4 {
		t.Errorf("weighted RMS codebook error %.3g of the RMS weight (codes ±%d), want ≤ 2.8e-4", cb.relErr[0], cb.codeMax)
	} else {
		t.Logf("weighted RMS codebook error %.3g of the RMS weight (codes ±%d)", cb.relErr[0], cb.codeMax)
	}
}

// TestRunnerIntegerPairLevels: an ApplyPair whose sides' codebooks leave
// different activation bounds (a plain codebook; gptqHead with one run of
// outliers) quantizes the activations once, to the smaller bound, for
// both sides: one row and a
// Verify-sized block bit-identical to mulVecQ16 on that quantization, and
// a prefill-sized block (the integer panel path) within the single-row
// product's bound of the float one. A side given activations its codes
// cannot meet would panic (checkActs).
func TestRunnerIntegerPairLevels(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 11))
		const rows, cols = 16, 300
		// gptqHead's indices, except that one run selects only its two
		// outliers: that run's lanes are what bound its activations.
		outlierRun := gptqHeadIndices(r, rows*cols)
		for j := range runCols {
			outlierRun[j] = uint8(j % 2 * 15)
		}
		idxs := [2][]uint8{make([]uint8, rows*cols), outlierRun}
		for i := range idxs[0] {
			idxs[0][i] = uint8(r.IntN(16))
		}
		luts := [2][]float32{randVec(r, 16), gptqHead[:]}
		var ms [2]*LUT
		for i, lut := range luts {
			var err error
			if ms[i], err = NewLUT("LUT4 per-tensor", rows, cols, 1, lut, slices.Clone(idxs[i]), nil); err != nil {
				t.Fatal(err)
			}
		}
		if !ms[0].hasQ16() {
			t.Skip("no integer codebook kernel at this level")
		}
		if a, b := ms[0].icb, ms[1].icb; b.actMax >= a.actMax {
			t.Fatalf("code bounds %d and %d, activation bounds %g and %g: the outlier run should bound the second lower", a.codeMax, b.codeMax, a.actMax, b.actMax)
		}
		levels := ms[1].icb.actMax
		run := NewRunner(2)
		defer run.Close()
		run.MinParallel, run.Integer = 1, true
		for _, n := range []int{1, 3, panelMinTokens} {
			_, x := q8Inputs(r, n*cols)
			var out [2][]float32
			for i := range out {
				out[i] = make([]float32, n*rows)
			}
			run.ApplyPair(&Linear{W: ms[0]}, &Linear{W: ms[1]}, out[0], out[1], x, n, nil)
			var q Q16
			for tok := range n {
				xt := x[tok*cols : (tok+1)*cols]
				QuantizeQ16(&q, xt, levels)
				for side, m := range ms {
					got := out[side][tok*rows : (tok+1)*rows]
					if n < panelMinTokens && (n == 1 || haveQ16Batch()) {
						want := make([]float32, rows)
						m.mulVecQ16(want, &q, 0, rows)
						if !equalBits(got, want) {
							t.Fatalf("n %d token %d side %d: %v, single row on the shared quantization %v", n, tok, side, got, want)
						}
						continue
					}
					var c [16]float32
					copy(c[:], luts[side])
					for i := range rows {
						checkQ4Dot(t, fmt.Sprintf("n %d token %d side %d row %d", n, tok, side, i), got[i], &c, &m.icb.code[0], m.icb.scale[0], idxs[side][i*cols:(i+1)*cols], xt, &q)
					}
				}
			}
		}
	})
}

// bruteLaneSum is laneSum the slow way: each run's |codes| sorted, the
// largest lanePicks added, the largest such sum over runs and components.
func bruteLaneSum(code *[4][16]int16, cd int, idx []uint8, cols int) int {
	worst := 0
	for r0 := 0; r0 < len(idx); r0 += cols {
		for c0 := 0; c0 < cols; c0 += runCols {
			for tc := range cd {
				var abs []int
				for _, i := range idx[r0+c0 : r0+min(c0+runCols, cols)] {
					abs = append(abs, max(int(code[tc][i]), -int(code[tc][i])))
				}
				slices.Sort(abs)
				slices.Reverse(abs)
				sum := 0
				for _, a := range abs[:min(lanePicks, len(abs))] {
					sum += a
				}
				worst = max(worst, sum)
			}
		}
	}
	return worst
}

// TestLaneSum: laneSum against bruteLaneSum on random codebooks and index
// rows with ragged last runs, for every CD, and on a matrix whose runs are
// taken in parts.
func TestLaneSum(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 12))
	for _, cd := range []int{1, 2, 4} {
		for _, cols := range []int{1, 31, 256, 300, 700} {
			var code [4][16]int16
			for tc := range cd {
				for e := range code[tc] {
					code[tc][e] = int16(r.IntN(2*32767+1) - 32767)
				}
			}
			rows := 3
			idx := make([]uint8, rows*cols)
			for i := range idx {
				idx[i] = uint8(r.IntN(16))
			}
			want := bruteLaneSum(&code, cd, idx, cols)
			if got := laneSum(&code, cd, runCounts(idx, cols)); got != want {
				t.Errorf("cd %d cols %d: laneSum %d, brute force %d", cd, cols, got, want)
			}
		}
	}
	// Enough runs to be taken in parts at once, the worst one in the last
	// row (the last part): every index of its first run selects the entry
	// of largest |code|.
	const cols = 700
	rows := 2 * minSplitWork / cols
	var code [4][16]int16
	for e := range code[0] {
		code[0][e] = int16(e*100 - 700)
	}
	idx := make([]uint8, rows*cols)
	for i := range idx {
		idx[i] = uint8(r.IntN(8))
	}
	for c := range runCols {
		idx[(rows-1)*cols+c] = 15
	}
	want := bruteLaneSum(&code, 1, idx, cols)
	if got := laneSum(&code, 1, runCounts(idx, cols)); got != want || want != lanePicks*800 {
		t.Errorf("%d×%d: laneSum %d, brute force %d, want %d", rows, cols, got, want, lanePicks*800)
	}
}

// TestLaneSumBound: gptqHead's codes (finer than 12 bits) with one run whose indices
// all select its two outliers, the worst lanes its matrix has, and every
// activation at its bound with its weight's sign, so that every product is
// as large as the bound allows: one row, a Verify block and a prefill
// block through the Runner at every level give the exact sum (float64
// over the integer codes) within float rounding, no int32 lane wrapping.
// The activation bound is what that run leaves.
func TestLaneSumBound(t *testing.T) {
	withSIMD(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 13))
		const rows, cols = 8, 2*runCols + 40
		idx := gptqHeadIndices(r, rows*cols)
		for j := range runCols {
			idx[3*cols+runCols+j] = uint8(j % 2 * 15) // row 3's second run
		}
		m, err := NewLUT("LUT4 per-tensor", rows, cols, 1, gptqHead[:], slices.Clone(idx), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !m.hasQ16() {
			t.Skip("no integer codebook kernel at this level")
		}
		cb := m.icb
		if cb.codeMax == codeLevels[0] {
			t.Fatalf("codes of ±%d: the outliers should need finer ones", cb.codeMax)
		}
		worst := lanePicks * max(int(cb.code[0][0]), -int(cb.code[0][0]), int(cb.code[0][15]))
		if cb.actMax != actMaxFor(worst) {
			t.Fatalf("activation bound %g, want %g for the all-outlier run", cb.actMax, actMaxFor(worst))
		}
		run := NewRunner(2)
		defer run.Close()
		run.MinParallel, run.Integer = 1, true
		for _, n := range []int{1, 3, panelMinTokens} {
			// Token k's activations are k+1 with the sign of row 3's weight.
			x := make([]float32, n*cols)
			for k := range n {
				for j := range cols {
					x[k*cols+j] = float32(k+1) * float32(math.Copysign(1, float64(gptqHead[idx[3*cols+j]])))
				}
			}
			got := make([]float32, n*rows)
			run.Apply(&Linear{W: m}, got, x, n)
			var q Q16
			for k := range n {
				QuantizeQ16(&q, x[k*cols:(k+1)*cols], cb.actMax)
				var want float64
				for j := range cols {
					want += float64(cb.code[0][idx[3*cols+j]]) * float64(q.Q[q.at(j)]) * float64(q.Scale[j/Q16Block])
				}
				want *= float64(cb.scale[0])
				if g := float64(got[k*rows+3]); math.Abs(g-want) > 1e-5*math.Abs(want) {
					t.Fatalf("n %d token %d: row 3 is %g, want %g", n, k, g, want)
				}
			}
		}
	})
}

// TestIntCodebookFloatFallback: a codebook whose every level adds more
// than maxIntRelErr (one outlier that a whole run's lanes select, so its
// fine codes leave coarse activations, far enough out that its coarse
// codes leave the bulk coarse) has no integer form, and the fast mode's
// products by it are the float kernel's, bit for bit; with the outlier
// one step nearer it keeps one, within the bound.
func TestIntCodebookFloatFallback(t *testing.T) {
	// Enough bulk indices that its error can outweigh the outlier's share
	// of the weighted RMS.
	const rows, cols = 256, 512
	r := rand.New(rand.NewPCG(21, 12))
	idx := make([]uint8, rows*cols)
	for i := range idx {
		idx[i] = uint8(r.IntN(15))
	}
	for j := range lanePicks { // the outlier, entry 15, fills the first run's lanes
		idx[j*runCols/lanePicks] = 15
	}
	var count [16]float64
	for _, e := range idx {
		count[e]++
	}
	bulk := randVec(r, 15)
	codebook := func(outlier float64) *[4][16]float32 {
		var tab [4][16]float32
		copy(tab[0][:], bulk)
		tab[0][15] = float32(outlier)
		return &tab
	}
	// The least relative error any level adds, computed as TestIntCodebook does.
	leastErr := func(tab *[4][16]float32) float64 {
		least := math.Inf(1)
		for _, level := range codeLevels {
			var code [4][16]int16
			_, e := quantizeCodebook(&tab[0], &count, &code[0], level)
			least = min(least, levelCost(e, actMaxFor(bruteLaneSum(&code, 1, idx, cols))))
		}
		return math.Sqrt(least)
	}
	outlier := 4.0
	for leastErr(codebook(2*outlier)) <= maxIntRelErr {
		if outlier *= 2; outlier > 1e12 {
			t.Fatal("no outlier takes every level past maxIntRelErr")
		}
	}
	near, far := codebook(outlier), codebook(2*outlier)
	t.Logf("outlier %g (the bulk ~N(0,1)): least error %.3g; at %g: %.3g (bound %g)",
		outlier, leastErr(near), 2*outlier, leastErr(far), maxIntRelErr)
	if cb := newIntCodebook(near, 1, idx, cols); cb == nil || math.Sqrt(cb.cost) > maxIntRelErr {
		t.Fatalf("outlier %g: no integer form within the bound (%v)", outlier, cb)
	}
	if cb := newIntCodebook(far, 1, idx, cols); cb != nil {
		t.Fatalf("outlier %g: an integer form adding %.3g > %g", 2*outlier, math.Sqrt(cb.cost), maxIntRelErr)
	}
	var ms [2]*LUT // near, far
	for i, tab := range []*[4][16]float32{near, far} {
		var err error
		if ms[i], err = NewLUT("LUT4 per-tensor", rows, cols, 1, tab[0][:], slices.Clone(idx), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, ok := ms[1].IntegerForm(); ok {
		t.Fatal("NewLUT kept an integer form past the bound")
	}
	withSIMD(t, func(t *testing.T) {
		run := NewRunner(2)
		defer run.Close()
		run.MinParallel = 1
		for _, n := range []int{1, 3, panelMinTokens} {
			_, x := q8Inputs(r, n*cols)
			for i, m := range ms {
				var out [2][]float32
				for j, integer := range []bool{false, true} {
					run.Integer = integer
					out[j] = make([]float32, n*rows)
					run.Apply(&Linear{W: m}, out[j], x, n)
				}
				switch same := equalBits(out[1], out[0]); {
				case i == 1 && !same:
					t.Fatalf("%d rows: the fast mode left the float kernel", n)
				case i == 0 && same && n == 1 && m.hasQ16():
					t.Fatalf("%d rows: the codebook within the bound did not take the integer kernel", n)
				}
			}
		}
	})
}
