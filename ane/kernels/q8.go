package kernels

import "math"

// Integer products for INT8 per-channel rows (docs/KERNELS.md, #21): the
// activation vector is quantized once per product to int8 blocks of
// Q8Block values with one float scale each (Q8), and each row's dot
// product is a sum over blocks of scale × an exact int32 sum of int8
// products. Runner.Integer (the fast numeric mode) uses it for
// single-row products; otherwise the float kernel int8Dot runs.

// Q8Block is the activation block length of a Q8 vector.
const Q8Block = 32

// Q8 is a vector quantized to int8 blocks: x[j] ≈ Scale[j/Q8Block]·Q[j].
// Q is padded with zeros to a whole number of blocks.
type Q8 struct {
	Q     []int8
	Scale []float32
}

// QuantizeQ8 quantizes x into q, reusing q's storage: per block
// scale = max|x|/127 and code = round(x/scale) (an all-zero block has
// scale 0 and codes 0). Each value is reconstructed within scale/2.
func QuantizeQ8(q *Q8, x []float32) {
	quantizeBlocks(&q.Q, &q.Scale, x, 127, 1, func(j int) int { return j })
}

// quantizeBlocks is QuantizeQ8 and QuantizeQ16: blocks of 32 values, each
// run of group blocks sharing scale = max|x| over the run / levels, and
// code = round(x/scale) stored at index pos(j) of the block (both reuse
// the storage; a short last block is padded with zero codes).
func quantizeBlocks[T int8 | int16](q *[]T, scale *[]float32, x []float32, levels float32, group int, pos func(int) int) {
	const block = Q8Block // = Q16Block
	nb := (len(x) + block - 1) / block
	if cap(*q) < nb*block {
		*q = make([]T, nb*block)
	}
	if cap(*scale) < nb {
		*scale = make([]float32, nb)
	}
	*q, *scale = (*q)[:nb*block], (*scale)[:nb]
	var perm [block]int // pos, looked up once: the loop below runs per value
	for j := range perm {
		perm[j] = pos(j)
	}
	for b0 := 0; b0 < nb; b0 += group {
		b1 := min(nb, b0+group)
		s, inv := runScale(x[b0*block:min(b1*block, len(x))], levels)
		for b := b0; b < b1; b++ {
			xs := x[b*block : min((b+1)*block, len(x))]
			codes := (*q)[b*block : (b+1)*block]
			clear(codes)
			(*scale)[b] = s
			if inv == 0 {
				continue
			}
			for j, v := range xs {
				codes[perm[j&(block-1)]] = T(roundCode(v, inv))
			}
		}
	}
}

// runScale is the scale of the values x quantized to ±levels, max|x|/levels,
// and its inverse as the codes are computed (0 for an all-zero run).
func runScale(x []float32, levels float32) (s float32, inv float64) {
	amax := absMax(x)
	s = amax / levels
	if amax != 0 {
		inv = 1 / float64(s) // the stored scale: each value within half its step
	}
	return s, inv
}

// roundCode is math.RoundToEven(v·inv) for |v·inv| < 2⁵¹, by adding and
// subtracting 1.5·2⁵², which leaves the nearest integer, ties to even, in
// one addition's rounding (math.RoundToEven checks the CPU on each call
// and spills a loop's registers around it).
func roundCode(v float32, inv float64) float64 {
	const round = 1.5 * (1 << 52)
	return float64(v)*inv + round - round
}

// absMax is max |x[j]| (0 for none; NaN if any is NaN, whose bits
// compare above every number's): on the bits, as unsigned integers, which
// order the non-negative floats as their values and compile to a
// conditional move where the max of floats needs NaN and signed-zero
// branches.
func absMax(x []float32) float32 {
	var m0, m1 uint32
	for len(x) >= 2 {
		m0 = max(m0, math.Float32bits(x[0])&^(1<<31))
		m1 = max(m1, math.Float32bits(x[1])&^(1<<31))
		x = x[2:]
	}
	for _, v := range x {
		m0 = max(m0, math.Float32bits(v)&^(1<<31))
	}
	return math.Float32frombits(max(m0, m1))
}

// int8Q8Dot is Σ_j w[j]·x[j] with x as q: per block of 32, the exact
// int32 sum of products times the block's scale. len(w) ≤ len(q.Q).
func int8Q8Dot(w []int8, q *Q8) float32 { return q8Tail(w, q, q8Prefix(w, q)) }

// q8Tail adds the blocks of w past n.blocks (in Go, in order) to n.sum.
func q8Tail(w []int8, q *Q8, n q8Done) float32 {
	s := n.sum
	for b := n.blocks; b*Q8Block < len(w); b++ {
		ws := w[b*Q8Block : min((b+1)*Q8Block, len(w))]
		qs := q.Q[b*Q8Block:]
		var acc int32
		for j, v := range ws {
			acc += int32(v) * int32(qs[j])
		}
		s += float32(acc) * q.Scale[b]
	}
	return s
}

// q8Done is how many whole blocks a prefix kernel did and their sum.
type q8Done struct {
	blocks int
	sum    float32
}
