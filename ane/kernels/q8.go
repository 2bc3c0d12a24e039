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
	nb := (len(x) + Q8Block - 1) / Q8Block
	if cap(q.Q) < nb*Q8Block {
		q.Q = make([]int8, nb*Q8Block)
	}
	if cap(q.Scale) < nb {
		q.Scale = make([]float32, nb)
	}
	q.Q, q.Scale = q.Q[:nb*Q8Block], q.Scale[:nb]
	for b := range nb {
		xs := x[b*Q8Block : min((b+1)*Q8Block, len(x))]
		codes := q.Q[b*Q8Block : (b+1)*Q8Block]
		var amax float32
		for _, v := range xs {
			amax = max(amax, abs32(v))
		}
		clear(codes)
		q.Scale[b] = amax / 127
		if amax == 0 {
			continue
		}
		inv := 127 / amax
		for j, v := range xs {
			codes[j] = int8(math.RoundToEven(float64(v * inv)))
		}
	}
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
