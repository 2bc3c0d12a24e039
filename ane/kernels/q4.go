package kernels

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// Integer products for the packed ≤ 16-entry codebook formats (LUT4,
// vector 2x16 and 4x16, each with or without a per-channel scale;
// docs/KERNELS.md, #21): each component codebook becomes 16 integer codes
// of 12 to 16 bits times one float scale (intCodebook), the packed nibbles select
// codes (two VPSHUFB per 32 weights on AVX2, for the low and high bytes,
// as llama.cpp's IQ4_NL looks up its int8 codebook; one VPERMW per 32 with
// AVX-512 VNNI), and the codes multiply the activations quantized once per
// product to int16 blocks (Q16) in exact int32 (VPMADDWD; VPDPWSSD with
// VNNI), one float multiply-add per run of Q16Group blocks. Q8 activations (q8.go)
// measured outside the fast mode's KL bound on these formats
// (docs/KERNELS.md); int16 ones cost a few instructions more per block.
// Runner.Integer uses it for single-row products; otherwise the float
// kernels run.

// Every kernel's int32 lane adds at most lanePicks products of a code and
// an activation code, all from one row's run of runCols columns (the
// single-row and batch kernels: 4 products a block, 8 blocks a run; the
// panel path: the 32 of one block). So activations quantized to ±A meet a
// matrix's codes exactly when A·S < 2³¹, S being the largest sum of the
// lanePicks largest |code| that any run of any row selects (laneSum): a
// bound from the matrix's own indices, where the worst case lanePicks ×
// codeMax would give codebooks with rare outlier entries (whose bulk
// codes are far below codeMax) much coarser activations.
const (
	lanePicks = 32
	runCols   = Q16Group * Q16Block
)

// codeLevels are the bounds a codebook's codes may take, coarsest first
// (12 to 16 bits). Finer codes leave coarser activations (actMaxFor), so
// a matrix takes the level of least levelCost. Measured: 12-bit codes
// kept the quick export's fast mode ~100× inside its KL bound, but a GPTQ
// export's codebooks have rare outlier entries 6–20× the bulk's magnitude
// that set the step, and the fast mode missed the top-1 bound there
// (docs/KERNELS.md, "Codebook formats").
var codeLevels = [...]int{2047, 4095, 8191, 16383, 32767}

// actErrScale is how the activations' step weighs against the codes':
// activation codes bounded by ±A cost about what a codebook error of
// actErrScale/A of the RMS weight costs. Measured on the quick export's
// medium preset, where 12-bit codes (weighted error 2.8e-4) and
// activations at ±8191 each cost the fast mode the same KL (1.8e-5 and
// 1.9e-5 nats, docs/KERNELS.md): 2.8e-4 × 8191 ≈ 2.3.
const actErrScale = 2.3

// maxIntRelErr bounds the relative error (√levelCost) a matrix's integer
// form may add; a matrix whose every level adds more stays on the float
// kernels in the fast mode too. Measured (docs/KERNELS.md, "On an export
// the rebuild made"): with every codebook matrix near 1e-3 the fast mode
// missed the top-1 bound (97.3%); the exports measured since have no
// matrix above 2.8e-4, so the bound only catches codebooks further out
// than any seen.
const maxIntRelErr = 1e-3

// levelCost is the squared relative error a level adds: its codebook's
// worst weighted error and its activations' step, as actErrScale weighs it.
func levelCost(codeErr float64, actMax float32) float64 {
	a := actErrScale / float64(actMax)
	return codeErr*codeErr + a*a
}

// actMaxFor is the activation code bound for lanes whose |code| sums are
// at most laneSum: (2³¹ − 1)/laneSum, at most int16's.
func actMaxFor(laneSum int) float32 {
	if laneSum == 0 {
		return 32767
	}
	return float32(min(32767, (1<<31-1)/laneSum))
}

// intCodebook is the integer form of a LUT's ≤ 16-entry codebook:
// component t of entry e is approximately scale[t]·code[t][e].
type intCodebook struct {
	code [4][16]int16
	// lo and hi are the codes' low and high bytes, the two tables the
	// AVX2 kernel looks the nibbles up in.
	lo, hi [4][16]uint8
	// w32 is each component's codes twice: the 32-word VPERMW table of
	// the AVX-512 VNNI kernels, which read 5-bit indices.
	w32   [4][32]int16
	scale [4]float32
	// relErr[t] is component t's weighted RMS error relative to its
	// weighted RMS value, each entry weighted by how many indices select it:
	// the relative error the codes add to the matrix's weights.
	relErr [4]float64
	// codeMax bounds every component's codes (a codeLevels level);
	// actMax bounds the activation codes they may meet (actMaxFor of the
	// matrix's laneSum).
	codeMax int
	actMax  float32
	// cost is the chosen level's levelCost.
	cost float64
}

// newIntCodebook quantizes the cd components of tab for the index rows idx
// (cols indices each, all < 16), weighting entry e by its count, at each
// of codeLevels, and keeps the level of least levelCost (the coarser of a
// tie) with the activation bound its lanes leave; nil (the float
// kernels) when that level adds more than maxIntRelErr.
func newIntCodebook(tab *[4][16]float32, cd int, idx []uint8, cols int) *intCodebook {
	runs := runCounts(idx, cols)
	var count [16]float64
	for _, n := range runs {
		for e, k := range n {
			count[e] += float64(k)
		}
	}
	var best *intCodebook
	bestCost := math.Inf(1)
	for _, level := range codeLevels {
		cb := &intCodebook{codeMax: level}
		worst := 0.0
		for t := range cd {
			var code [16]int16
			cb.scale[t], cb.relErr[t] = quantizeCodebook(&tab[t], &count, &code, level)
			cb.setCodes(t, &code)
			worst = max(worst, cb.relErr[t])
		}
		cb.actMax = actMaxFor(laneSum(&cb.code, cd, runs))
		if cb.cost = levelCost(worst, cb.actMax); cb.cost < bestCost {
			best, bestCost = cb, cb.cost
		}
	}
	if bestCost > maxIntRelErr*maxIntRelErr {
		return nil
	}
	return best
}

// IntegerForm describes m's integer codebook, the fast mode's (#21): its
// codes' and activations' bounds and the relative error they add, the
// square root of levelCost; ok is false for a matrix that stays on the
// float kernels.
func (m *LUT) IntegerForm() (codeMax int, actMax float32, relErr float64, ok bool) {
	if m.icb == nil {
		return 0, 0, 0, false
	}
	return m.icb.codeMax, m.icb.actMax, math.Sqrt(m.icb.cost), true
}

// runCounts is, for each run of runCols columns of each row of idx (cols
// indices each, all < 16), how many of its indices select each entry.
// Large matrices are counted in parts at once (splitRows).
func runCounts(idx []uint8, cols int) [][16]uint16 {
	rows, perRow := len(idx)/cols, (cols+runCols-1)/runCols
	out := make([][16]uint16, rows*perRow)
	splitRows(rows, cols, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			row := idx[r*cols : (r+1)*cols]
			for c0 := 0; c0 < cols; c0 += runCols {
				n := &out[r*perRow+c0/runCols]
				for _, i := range row[c0:min(c0+runCols, cols)] {
					n[i&15]++
				}
			}
		}
	})
	return out
}

// laneSum is the largest sum of the lanePicks largest |code[t][e]| (with
// multiplicity) that any run selects (runs: runCounts), over the cd
// components; many runs are taken in parts at once (splitRows).
func laneSum(code *[4][16]int16, cd int, runs [][16]uint16) int {
	var abs [4][16]int
	var order [4][16]uint8 // each component's entries by |code|, largest first
	for t := range cd {
		for e, c := range code[t] {
			abs[t][e], order[t][e] = max(int(c), -int(c)), uint8(e)
		}
		slices.SortFunc(order[t][:], func(a, b uint8) int { return abs[t][b] - abs[t][a] })
	}
	var mu sync.Mutex
	worst := 0
	splitRows(len(runs), runCols, func(lo, hi int) {
		part := 0
		for _, n := range runs[lo:hi] {
			for t := range cd {
				sum, left := 0, lanePicks
				for _, e := range order[t] {
					k := min(int(n[e]), left)
					sum += k * abs[t][e]
					if left -= k; left == 0 {
						break
					}
				}
				part = max(part, sum)
			}
		}
		mu.Lock()
		worst = max(worst, part)
		mu.Unlock()
	})
	return worst
}

// checkActs panics unless activations quantized to ±levels may meet cb's
// codes: a caller's mistake that would overflow the int32 lanes.
func (cb *intCodebook) checkActs(levels float32) {
	if levels > cb.actMax {
		panic(fmt.Sprintf("kernels: activation codes of ±%g against codes bounded for ±%g exceed the int32 lanes", levels, cb.actMax))
	}
}

// setCodes sets component t's codes and their byte tables.
func (cb *intCodebook) setCodes(t int, code *[16]int16) {
	cb.code[t] = *code
	for e, k := range code {
		cb.lo[t][e], cb.hi[t][e] = uint8(k), uint8(uint16(k)>>8)
		cb.w32[t][e], cb.w32[t][e+16] = k, k
	}
}

// quantizeCodebook picks the scale s that minimises Σ_e w_e·(c[e] −
// s·code[e])² (w_e = count[e] + 1, so an unused entry still counts a
// little) with code[e] = round(c[e]/s) in [−codeMax, codeMax], searching
// from the finest step that needs no clamping (so every entry is within
// s/2) to twice that, then refitting s by least squares to the best codes.
func quantizeCodebook(c *[16]float32, count *[16]float64, code *[16]int16, codeMax int) (scale float32, relErr float64) {
	var amax, norm float64
	for e, v := range c {
		amax = max(amax, math.Abs(float64(v)))
		norm += (count[e] + 1) * float64(v) * float64(v)
	}
	clear(code[:])
	if amax == 0 {
		return 0, 0
	}
	sMin := amax / (float64(codeMax) + 0.49) // round(|v|/s) ≤ codeMax
	codes := func(s float64, out *[16]int16) (err float64) {
		for e, v := range c {
			k := math.RoundToEven(float64(v) / s)
			out[e] = int16(k)
			d := float64(v) - s*k
			err += (count[e] + 1) * d * d
		}
		return err
	}
	best, bestErr := sMin, codes(sMin, code)
	var try [16]int16
	if s := amax / float64(codeMax); codes(s, &try) < bestErr { // the plain scale, between the first two steps
		best, bestErr = s, codes(s, code)
	}
	for i := 1; i <= 1000; i++ {
		if s := sMin * (1 + float64(i)/1000); codes(s, &try) < bestErr {
			best, bestErr = s, codes(s, code)
		}
	}
	// The least-squares scale for the chosen codes, kept if it is better
	// (s ≥ sMin: still no clamping, every entry within half a step).
	var num, den float64
	for e, v := range c {
		num += (count[e] + 1) * float64(v) * float64(code[e])
		den += (count[e] + 1) * float64(code[e]) * float64(code[e])
	}
	if s := num / den; s >= sMin {
		if err := codes(s, &try); err < bestErr {
			best, *code = s, try
		}
	}
	// The error of the scale as stored (float32), which the kernels use.
	scale = float32(best)
	var err float64
	for e, v := range c {
		d := float64(v) - float64(scale)*float64(code[e])
		err += (count[e] + 1) * d * d
	}
	return scale, math.Sqrt(err / norm)
}

// Q16Block is the activation block length of a Q16 vector, Q8's.
const Q16Block = Q8Block

// Q16Group is how many consecutive Q16 blocks share one scale: the AVX2
// kernels sum a run's products in int32 lanes and convert once per run.
// Each lane adds 4 products a block, so a run of 8 adds the 32 that
// laneSum bounds.
const Q16Group = 8

// Q16 is a vector quantized to int16 blocks of Q16Block values with one
// float scale each, the same for each run of Q16Group blocks (the last
// run may be shorter), padded with zeros to a whole number of blocks. The
// codes are stored in the order the kernels of this machine read them
// (at): within each block in the AVX2 kernel's order (q16Pos), or, for the
// AVX-512 VNNI kernels, by pairs of blocks (pairs).
type Q16 struct {
	Q     []int16
	Scale []float32
	// pairs: each pair of blocks b, b+1 (b even) stores b's values 0–15,
	// b+1's 0–15, b's 16–31, b+1's 16–31, the order in which one
	// VPMOVZXBW of the pair's 32 packed bytes yields the low nibbles and,
	// shifted, the high ones; a lone last block is in order.
	pairs bool
	// levels bounds the codes (QuantizeQ16's argument).
	levels float32
}

// q16Pos is where element j of a block is stored in the AVX2 order: the
// codes of a block's indices come out of that kernel's byte unpacking as
// 0–7, 16–23, 8–15, 24–31.
func q16Pos(j int) int {
	switch j / 8 {
	case 1:
		return j + 8
	case 2:
		return j - 8
	}
	return j
}

// at is the index in q.Q of element j of the quantized vector.
func (q *Q16) at(j int) int {
	b, i := j/Q16Block, j%Q16Block
	switch {
	case !q.pairs:
		return b*Q16Block + q16Pos(i)
	case b|1 >= len(q.Scale): // the lone last block
		return j
	}
	return (b&^1)*Q16Block + i/16*Q16Block + (b&1)*16 + i%16
}

// QuantizeQ16 quantizes x into q, reusing q's storage: per run of
// Q16Group blocks scale = max|x|/levels, code = round(x/scale) (an all-zero
// run has scale 0 and codes 0), in the layout of this machine's kernels
// (q16Pairs). Each value is reconstructed within scale/2. levels (at most
// 32767) must be within the actMax of every codebook q is to meet.
func QuantizeQ16(q *Q16, x []float32, levels float32) {
	q.pairs, q.levels = q16Pairs(), levels
	if !q.pairs {
		quantizeBlocks(&q.Q, &q.Scale, x, levels, Q16Group, q16Pos)
		return
	}
	quantizeBlocks(&q.Q, &q.Scale, x, levels, Q16Group, func(j int) int { return j })
	for b := 0; b+1 < len(q.Scale); b += 2 { // swap b's values 16–31 and b+1's 0–15
		pair := q.Q[b*Q16Block : (b+2)*Q16Block]
		var tmp [16]int16
		copy(tmp[:], pair[16:32])
		copy(pair[16:32], pair[32:48])
		copy(pair[32:48], tmp[:])
	}
}

// lutQ16DotGo is Σ_b scale_b·Σ_{j∈b} code[index j]·q[j] over the packed
// row p from block b0 on, added to s: the fallback of lutQ16Dot. The
// padding of a short last block meets zero codes in q.
func lutQ16DotGo(code *[16]int16, p []uint8, q *Q16, b0 int, s float32) float32 {
	for b := b0; b < len(q.Scale); b++ {
		blk := p[b*16 : b*16+16 : b*16+16]
		var acc int32
		if q.pairs { // byte j holds elements j (low nibble) and 16+j
			lo, hi := q.Q[q.at(b*32):][:16:16], q.Q[q.at(b*32+16):][:16:16]
			for j, v := range blk {
				acc += int32(code[v&15])*int32(lo[j]) + int32(code[v>>4])*int32(hi[j])
			}
			s += float32(acc) * q.Scale[b]
			continue
		}
		qs := q.Q[b*32 : b*32+32 : b*32+32]
		for h := range 2 { // bytes 8h…8h+7: q16Pos puts their low nibbles' codes at 16h, high at 16h+8
			bs, lo, hi := blk[8*h:8*h+8:8*h+8], qs[16*h:16*h+8:16*h+8], qs[16*h+8:16*h+16:16*h+16]
			for j, v := range bs {
				acc += int32(code[v&15])*int32(lo[j]) + int32(code[v>>4])*int32(hi[j])
			}
		}
		s += float32(acc) * q.Scale[b]
	}
	return s
}

// lutQ16Dot is Σ_j code[index j]·x[j] with x as q (the codebook scale
// not applied); p is one packed row of len(q.Scale) blocks.
func lutQ16Dot(cb *intCodebook, t int, p []uint8, q *Q16) float32 {
	done := lutQ16Prefix(cb, t, p, q)
	return lutQ16DotGo(&cb.code[t], p, q, done.blocks, done.sum)
}

// lutQ16Dot2 is lutQ16Dot for components t and t+1, which share the
// indices (two output rows of a vector codebook).
func lutQ16Dot2(cb *intCodebook, t int, p []uint8, q *Q16) (s0, s1 float32) {
	d0, d1 := lutQ16Prefix2(cb, t, p, q)
	return lutQ16DotGo(&cb.code[t], p, q, d0.blocks, d0.sum), lutQ16DotGo(&cb.code[t+1], p, q, d1.blocks, d1.sum)
}

// useQ16 quantizes x once for the codebook sides of t with an integer
// kernel (LUT.hasQ16) when the integer path applies: one row for
// mulVecQ16, or fewer than the panel path's rows for mulBatchQ16 where
// that kernel runs (haveQ16Batch; the side not already on the Q8 path),
// to the smaller of both sides' activation bounds (sharedLevels).
func (r *Runner) useQ16(t *pairTask, x []float32, n int) {
	batch := n > 1 && n < panelMinTokens && haveQ16Batch()
	if !r.Integer || n != 1 && !batch {
		return
	}
	side := func(p *product) bool {
		m, ok := p.m.(*LUT)
		return ok && m.hasQ16() && p.q8 == nil
	}
	levels, cols := sharedLevels(t, side)
	if levels == 0 {
		return
	}
	if n == 1 {
		QuantizeQ16(&r.q16, x[:cols], levels)
	} else {
		quantizeQ16Batch(&r.q16b, x, n, cols, levels)
	}
	for i := range t.parts {
		if p := &t.parts[i]; !side(p) {
			continue
		} else if n == 1 {
			p.q16 = &r.q16
		} else {
			p.q16b = &r.q16b
		}
	}
}

// sharedLevels is the activation code bound for the sides of t that side
// selects (*LUT products with integer codebooks), the smallest of their
// codebooks' actMax, and their column count; 0, 0 if side selects none.
// One quantization then serves both sides of an ApplyPair.
func sharedLevels(t *pairTask, side func(*product) bool) (levels float32, cols int) {
	for i := range t.parts {
		if p := &t.parts[i]; side(p) {
			m := p.m.(*LUT)
			if a := m.icb.actMax; levels == 0 || a < levels {
				levels = a
			}
			cols = m.Cols()
		}
	}
	return levels, cols
}

// hasQ16: packed ≤ 16-entry codebooks (an index ≥ 16 leaves a matrix
// unpacked, on the float path that reads it as the zero padding), where
// the integer kernel measured faster than the float one.
func (m *LUT) hasQ16() bool { return m.icb != nil && q4Faster() }

// mulVecQ16 is mulVec with x quantized to q (Runner.Integer). Where a
// multi-row kernel runs (lutQ16Rows) the rows go to it q16Chunk packed
// rows a call.
func (m *LUT) mulVecQ16(y []float32, q *Q16, r0, r1 int) {
	cb := m.icb
	cb.checkActs(q.levels)
	var sums [2 * q16Chunk]float32
	if m.cd == 1 {
		for r := r0; r < r1; r += q16Chunk {
			n := min(q16Chunk, r1-r)
			if !lutQ16Rows(cb, 0, false, m.nib, m.stride, q, r, r+n, sums[:n]) {
				for i := range n {
					sums[i] = lutQ16Dot(cb, 0, m.nibRow(r+i), q)
				}
			}
			for i := range n {
				y[r+i] = sums[i] * cb.scale[0] * m.rowScale(r+i)
			}
		}
		return
	}
	for g := r0 / m.cd; g < r1/m.cd; g += q16Chunk {
		n := min(q16Chunk, r1/m.cd-g)
		for t := 0; t < m.cd; t += 2 { // the chunk's packed rows stay in cache for t+2
			if !lutQ16Rows(cb, t, true, m.nib, m.stride, q, g, g+n, sums[:2*n]) {
				for i := range n {
					sums[2*i], sums[2*i+1] = lutQ16Dot2(cb, t, m.nibRow(g+i), q)
				}
			}
			for i := range n {
				r := (g+i)*m.cd + t
				y[r] = sums[2*i] * cb.scale[t] * m.rowScale(r)
				y[r+1] = sums[2*i+1] * cb.scale[t+1] * m.rowScale(r+1)
			}
		}
	}
}

// q16Chunk is how many packed rows a multi-row kernel call takes: 16 KiB
// of 4096-column rows, so a 4x16 group's rows are still in L1 for its
// second pair of components.
const q16Chunk = 8
