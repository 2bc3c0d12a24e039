package kernels

import "math"

// Integer products for the packed ≤ 16-entry codebook formats (LUT4,
// vector 2x16 and 4x16, each with or without a per-channel scale;
// docs/KERNELS.md, #21): each component codebook becomes 16 int8 codes
// times one float scale (q8Codebook), the packed nibbles select codes (one
// VPSHUFB per 32 weights on AVX2, as llama.cpp's IQ4_NL), and the codes
// multiply the Q8 activation blocks of QuantizeQ8 in exact int32, one
// float multiply-add per 32-weight block. Runner.Integer uses it for
// single-row products; otherwise the float kernels run.

// q8Codebook is the int8 form of a LUT's ≤ 16-entry codebook: component t
// of entry e is approximately scale[t]·code[t][e].
type q8Codebook struct {
	code  [4][16]int8
	scale [4]float32
	// relErr[t] is component t's weighted RMS error relative to its
	// weighted RMS value, each entry weighted by how many indices select it:
	// the relative error the codes add to the matrix's weights.
	relErr [4]float64
}

// newQ8Codebook quantizes the cd components of tab, weighting entry e by
// its count in idx (the unpacked indices, all < 16).
func newQ8Codebook(tab *[4][16]float32, cd int, idx []uint8) *q8Codebook {
	var count [16]float64
	for _, i := range idx {
		count[i&15]++
	}
	cb := new(q8Codebook)
	for t := range cd {
		cb.scale[t], cb.relErr[t] = quantizeCodebook(&tab[t], &count, &cb.code[t])
	}
	return cb
}

// quantizeCodebook picks the scale s that minimises Σ_e count[e]·(c[e] −
// s·code[e])² with code[e] = round(c[e]/s) in [−128, 127], searching from
// the finest step that needs no clamping (so every entry is within s/2) to
// twice that, then refitting s by least squares to the best codes.
func quantizeCodebook(c *[16]float32, count *[16]float64, code *[16]int8) (scale float32, relErr float64) {
	var pos, neg, norm float64
	for e, v := range c {
		pos, neg = max(pos, float64(v)), max(neg, -float64(v))
		norm += (count[e] + 1) * float64(v) * float64(v)
	}
	clear(code[:])
	if pos == 0 && neg == 0 {
		return 0, 0
	}
	// round(v/s) ≤ 127 needs v/s < 127.5; ≥ −128 needs −v/s ≤ 128.5.
	sMin := max(pos/127.49, neg/128.49)
	codes := func(s float64, out *[16]int8) (err float64) {
		for e, v := range c {
			k := math.Max(-128, math.Min(127, math.RoundToEven(float64(v)/s)))
			out[e] = int8(k)
			d := float64(v) - s*k
			err += (count[e] + 1) * d * d // +1: an unused entry still counts a little
		}
		return err
	}
	best, bestErr := sMin, codes(sMin, code)
	var try [16]int8
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
			best, bestErr, *code = s, err, try
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

// lutQ8DotGo is Σ_b scale_b·Σ_{j∈b} code[index j]·q[j] over the packed
// row p from block b0 on, added to s: the fallback of lutQ8Dot. The
// padding of a short last block meets zero codes in q.
func lutQ8DotGo(code *[16]int8, p []uint8, q *Q8, b0 int, s float32) float32 {
	for b := b0; b < len(q.Scale); b++ {
		blk, lo, hi := p[b*16:b*16+16:b*16+16], q.Q[b*32:b*32+16:b*32+16], q.Q[b*32+16:b*32+32:b*32+32]
		var acc int32
		for j, v := range blk {
			acc += int32(code[v&15])*int32(lo[j]) + int32(code[v>>4])*int32(hi[j])
		}
		s += float32(acc) * q.Scale[b]
	}
	return s
}

// lutQ8Dot is Σ_j code[index j]·x[j] with x as q (the row's codebook
// scale not applied); p is one packed row of len(q.Scale) blocks.
func lutQ8Dot(code *[16]int8, p []uint8, q *Q8) float32 {
	done := lutQ8Prefix(code, p, q)
	return lutQ8DotGo(code, p, q, done.blocks, done.sum)
}

// lutQ8Dot2 is lutQ8Dot for two code tables sharing the indices (two
// output rows of a vector codebook).
func lutQ8Dot2(code *[2][16]int8, p []uint8, q *Q8) (s0, s1 float32) {
	d0, d1 := lutQ8Prefix2(code, p, q)
	return lutQ8DotGo(&code[0], p, q, d0.blocks, d0.sum), lutQ8DotGo(&code[1], p, q, d1.blocks, d1.sum)
}

// q8Matrix is a matrix with an integer single-row product against Q8
// activations (Runner.Integer).
type q8Matrix interface {
	Matrix
	hasQ8() bool
	mulVecQ8(y []float32, q *Q8, r0, r1 int)
}

func (m *Int8) hasQ8() bool { return true }

// hasQ8: packed ≤ 16-entry codebooks (an index ≥ 16 leaves a matrix
// unpacked, on the float path that reads it as the zero padding), where
// the integer kernel measured faster than the float one.
func (m *LUT) hasQ8() bool { return m.q8cb != nil && q4Faster() }

// mulVecQ8 is mulVec with x quantized to q (Runner.Integer).
func (m *LUT) mulVecQ8(y []float32, q *Q8, r0, r1 int) {
	cb := m.q8cb
	if m.cd == 1 {
		for r := r0; r < r1; r++ {
			y[r] = lutQ8Dot(&cb.code[0], m.nibRow(r), q) * cb.scale[0] * m.rowScale(r)
		}
		return
	}
	for g := r0 / m.cd; g < r1/m.cd; g++ {
		for t := 0; t < m.cd; t += 2 {
			s0, s1 := lutQ8Dot2((*[2][16]int8)(cb.code[t:t+2]), m.nibRow(g), q)
			r := g*m.cd + t
			y[r] = s0 * cb.scale[t] * m.rowScale(r)
			y[r+1] = s1 * cb.scale[t+1] * m.rowScale(r+1)
		}
	}
}
