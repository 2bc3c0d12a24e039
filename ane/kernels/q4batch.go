package kernels

import "slices"

// Integer products of a packed ≤ 16-entry codebook matrix by a few
// activation rows (Verify blocks of 8, short prompts: fewer rows than the
// panel path takes), where they beat the float matrix-matrix kernels (AVX2
// without AVX-512, AVX-512 VNNI; haveQ16Batch): each row is quantized
// exactly as QuantizeQ16 quantizes it alone, and each 32-index block of a
// weight row is looked up once for up to q16BatchGroup tokens, its codes
// meeting every token's Q16 block in the single-row kernel's instructions.
// A token's result is bit-identical to the single-row integer product of
// its row (mulVecQ16): the int32 block sums are exact, and each token
// keeps that kernel's float lanes (8 with AVX2, 16 with VNNI), one
// multiply-add per run, and its horizontal sum (docs/KERNELS.md, "Verify
// blocks on AVX2" and "Verify blocks with AVX-512 VNNI").

// q16BatchGroup is how many tokens one kernel call takes: its int32
// accumulators, one register each, and the codes and tables fill the 16
// YMM registers of AVX2.
const q16BatchGroup = 8

// batchLanes is one token's float lanes in a batch kernel, kept between
// its calls on a row's column tiles: the first 8 with AVX2, all 16 with
// AVX-512 VNNI.
type batchLanes = [16]float32

// q16Batch is n activation rows quantized for lutQ16BatchDot: tokens in
// groups of q16BatchGroup, the last one padded with all-zero tokens to
// width 4 or 8; within a group of width G, token k's block slot b (the
// Q16Block codes its own Q16 holds at Q[b·Q16Block:], in this machine's
// layout: the AVX2 order, or pairs) at Q[base + (b·G + k)·Q16Block], and
// its run u's scale at Scale[sbase + u·G + k].
type q16Batch struct {
	Q      []int16
	Scale  []float32
	n      int     // tokens
	blocks int     // Q16 blocks per token
	levels float32 // the codes' bound, QuantizeQ16's
	pairs  bool    // the slots hold Q16's pairs layout (the VNNI kernels')
	one    Q16     // a token's own quantization, before it is interleaved
}

// runs is the number of Q16Group runs a token's blocks make.
func (q *q16Batch) runs() int { return (q.blocks + Q16Group - 1) / Q16Group }

// group returns the width of the group of tokens from t0 on and where its
// codes and scales start.
func (q *q16Batch) group(t0 int) (width, base, sbase int) {
	width = q16BatchGroup
	if rest := q.n - t0; rest <= 4 {
		width = 4
	}
	return width, t0 * q.blocks * Q16Block, t0 * q.runs()
}

// quantizeQ16Batch quantizes the n rows of x (cols values each, row t at
// x[t·cols:]) to ±levels into q, reusing its storage.
func quantizeQ16Batch(q *q16Batch, x []float32, n, cols int, levels float32) {
	q.n, q.blocks, q.levels, q.pairs = n, (cols+Q16Block-1)/Q16Block, levels, q16Pairs()
	slots := 0 // token slots, the padding included
	for t0 := 0; t0 < n; t0 += q16BatchGroup {
		w, _, _ := q.group(t0)
		slots += w
	}
	q.Q = slices.Grow(q.Q[:0], slots*q.blocks*Q16Block)[:slots*q.blocks*Q16Block]
	q.Scale = slices.Grow(q.Scale[:0], slots*q.runs())[:slots*q.runs()]
	for t0 := 0; t0 < n; t0 += q16BatchGroup {
		w, base, sbase := q.group(t0)
		if t0+w > n { // padding tokens: zero codes and scales (the others are all written below)
			clear(q.Q[base:])
			clear(q.Scale[sbase:])
		}
		for k := 0; k < w && t0+k < n; k++ {
			t := t0 + k
			QuantizeQ16(&q.one, x[t*cols:(t+1)*cols], levels)
			for b := range q.blocks {
				copy(q.Q[base+(b*w+k)*Q16Block:][:Q16Block], q.one.Q[b*Q16Block:])
			}
			for u := range q.runs() {
				q.Scale[sbase+u*w+k] = q.one.Scale[u*Q16Group]
			}
		}
	}
}

// mulBatchQ16 is rows [r0, r1) of m times each of q's tokens into y (token
// t's row r at y[t·Rows + r]), each the single-row mulVecQ16 of that token.
// The rows go q16Chunk at a time over tiles of q16BatchCols columns, so
// the tile's activations stay in L1 for all of them (8 tokens' blocks of a
// 4096-column row are 64 KiB); a tile is whole runs, so each token's
// float lanes add the runs in the single-row kernel's order.
func (m *LUT) mulBatchQ16(y []float32, q *q16Batch, r0, r1 int) {
	const tile = q16BatchCols / Q16Block // blocks
	cb := m.icb
	cb.checkActs(q.levels)
	var acc [q16Chunk][q16BatchGroup]batchLanes
	for t0 := 0; t0 < q.n; t0 += q16BatchGroup {
		w, base, sbase := q.group(t0)
		for r := r0; r < r1; r += q16Chunk {
			nr := min(q16Chunk, r1-r)
			clear(acc[:nr])
			for b0 := 0; b0 < q.blocks; b0 += tile {
				nb := min(tile, q.blocks-b0)
				qs, ss := q.Q[base+b0*w*Q16Block:], q.Scale[sbase+b0/Q16Group*w:]
				for i := range nr {
					row := r + i
					lutQ16BatchDot(cb, row%m.cd, m.nibRow(row / m.cd)[b0*16:], qs, ss, nb, w, q.pairs, &acc[i])
				}
			}
			for i := range nr {
				row := r + i
				cs, rs := cb.scale[row%m.cd], m.rowScale(row)
				out := y[t0*m.rows+row:]
				for k := range min(w, q.n-t0) {
					out[k*m.rows] = q.sum(&acc[i][k]) * cs * rs
				}
			}
		}
	}
}

// q16BatchCols is mulBatchQ16's column tile: 8 tokens' Q16 blocks of it
// are 16 KiB, half of a common L1 (32 KiB: Zen 3, Zen 4, Golden Cove has
// 48), and a multiple of Q16Group blocks.
const q16BatchCols = 1024

// sum is a token's result from its float lanes, in the order of its
// kernel's horizontal sum: HSUM512 for the VNNI kernels (the upper eight
// lanes onto the lower, then hsum8), HSUM for the AVX2 ones.
func (q *q16Batch) sum(l *batchLanes) float32 {
	if !q.pairs {
		return hsum8((*[8]float32)(l[:8]))
	}
	// hsum8 of l[i] + l[i+8], written out: the loop and its copy cost a
	// Verify block's epilogue as much as a tenth of its kernel time.
	a0, a1 := (l[0]+l[8])+(l[4]+l[12]), (l[1]+l[9])+(l[5]+l[13])
	a2, a3 := (l[2]+l[10])+(l[6]+l[14]), (l[3]+l[11])+(l[7]+l[15])
	return (a0 + a2) + (a1 + a3)
}

// hsum8 adds a kernel's eight float lanes in the order of its horizontal
// sum (HSUM, hsum_amd64.h): the upper four onto the lower, then lanes 2
// and 3 onto 0 and 1, then lane 1 onto lane 0.
func hsum8(l *[8]float32) float32 {
	a0, a1, a2, a3 := l[0]+l[4], l[1]+l[5], l[2]+l[6], l[3]+l[7]
	return (a0 + a2) + (a1 + a3)
}
