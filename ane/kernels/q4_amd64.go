//go:build amd64 && !purego

package kernels

// The AVX2 kernels of q4_amd64.s take whole 32-index blocks of a packed
// row and the Q16 blocks they meet; lo and hi are a component's code
// bytes (intCodebook).

//go:noescape
func lutQ16DotAVX2(lo, hi *[16]uint8, p *uint8, q *int16, scale *float32, blocks int) float32

//go:noescape
func lutQ16Dot2AVX2(lo0, hi0, lo1, hi1 *[16]uint8, p *uint8, q *int16, scale *float32, blocks int) (s0, s1 float32)

//go:noescape
func lutQ16DotVNNI(tab *[32]int16, p *uint8, stride int, q *int16, scale *float32, blocks, rows int, out *float32)

//go:noescape
func lutQ16Dot2VNNI(tab0, tab1 *[32]int16, p *uint8, stride int, q *int16, scale *float32, blocks, rows int, out *float32)

// q16Pairs reports whether QuantizeQ16 lays blocks out in pairs, for the
// VNNI kernels.
func q16Pairs() bool { return simdVNNI }

// q16Kernel reports which kernel reads q here: the VNNI one for the pair
// layout, the AVX2 one for the other (a layout the selected level does
// not read is left to the Go loop).
func q16Kernel(q *Q16) (vnni, avx2 bool) {
	if len(q.Scale) == 0 {
		return false, false
	}
	return q.pairs && simdVNNI, !q.pairs && simd
}

// lutQ16Prefix runs the SIMD kernel over every block of the row.
func lutQ16Prefix(cb *intCodebook, t int, p []uint8, q *Q16) q8Done {
	nb := len(q.Scale)
	switch vnni, avx2 := q16Kernel(q); {
	case vnni:
		var s [1]float32
		lutQ16Rows(cb, t, false, p, 0, q, 0, 1, s[:])
		return q8Done{nb, s[0]}
	case avx2:
		_ = p[nb*16-1]
		return q8Done{nb, lutQ16DotAVX2(&cb.lo[t], &cb.hi[t], &p[0], &q.Q[0], &q.Scale[0], nb)}
	}
	return q8Done{}
}

func lutQ16Prefix2(cb *intCodebook, t int, p []uint8, q *Q16) (q8Done, q8Done) {
	nb := len(q.Scale)
	var s0, s1 float32
	switch vnni, avx2 := q16Kernel(q); {
	case vnni:
		var out [2]float32
		lutQ16Rows(cb, t, true, p, 0, q, 0, 1, out[:])
		s0, s1 = out[0], out[1]
	case avx2:
		_ = p[nb*16-1]
		s0, s1 = lutQ16Dot2AVX2(&cb.lo[t], &cb.hi[t], &cb.lo[t+1], &cb.hi[t+1], &p[0], &q.Q[0], &q.Scale[0], nb)
	default:
		return q8Done{}, q8Done{}
	}
	return q8Done{nb, s0}, q8Done{nb, s1}
}

// lutQ16Rows writes the sums of packed rows [g0, g1) of nib (stride
// bytes apart) for component t into out, or, with two, those of t and
// t+1 (out[2i], out[2i+1]), in one kernel call; false where no such
// kernel runs (the caller takes the rows one at a time).
func lutQ16Rows(cb *intCodebook, t int, two bool, nib []uint8, stride int, q *Q16, g0, g1 int, out []float32) bool {
	nb, rows := len(q.Scale), g1-g0
	if vnni, _ := q16Kernel(q); !vnni || rows <= 0 {
		return false
	}
	_ = nib[(g1-1)*stride+nb*16-1]
	p := &nib[g0*stride]
	if two {
		_ = out[2*rows-1]
		lutQ16Dot2VNNI(&cb.w32[t], &cb.w32[t+1], p, stride, &q.Q[0], &q.Scale[0], nb, rows, &out[0])
	} else {
		_ = out[rows-1]
		lutQ16DotVNNI(&cb.w32[t], p, stride, &q.Q[0], &q.Scale[0], nb, rows, &out[0])
	}
	return true
}

// q4Faster reports whether the integer codebook kernel is the faster one
// here (BenchmarkLUTQ16): with AVX2 it is, and with AVX-512 VNNI;
// with AVX-512 alone the float kernels (dot512_amd64.s) run 16 lanes and
// are; without SIMD the Go loops (lutQ16DotGo) measured slower than the
// float ones.
func q4Faster() bool { return simd && (!simd512 || simdVNNI) }

// panelQ16Faster reports whether the integer panel path (panelq.go) is the
// faster prefill here (BenchmarkPanelQ16): with AVX2, and with AVX-512
// VNNI (VPDPWSSD); with AVX-512 alone the float panel kernel's 16 lanes
// run instead.
func panelQ16Faster() bool { return simd && (!simd512 || simdVNNI) }

// The batch kernels (q4batch.go) take whole 32-index blocks of a packed
// row against 8 or 4 tokens' Q16 blocks, interleaved by block (q16Batch),
// and add each token's run products to its float lanes in acc: 8 lanes
// with AVX2 (the Q16 blocks in its order), 16 with AVX-512 VNNI (in
// pairs).

//go:noescape
func lutQ16Dot8AVX2(lo, hi *[16]uint8, p *uint8, q *int16, scale *float32, blocks int, acc *[q16BatchGroup]batchLanes)

//go:noescape
func lutQ16Dot4AVX2(lo, hi *[16]uint8, p *uint8, q *int16, scale *float32, blocks int, acc *[q16BatchGroup]batchLanes)

//go:noescape
func lutQ16Dot8VNNI(tab *[32]int16, p *uint8, q *int16, scale *float32, blocks int, acc *[q16BatchGroup]batchLanes)

//go:noescape
func lutQ16Dot4VNNI(tab *[32]int16, p *uint8, q *int16, scale *float32, blocks int, acc *[q16BatchGroup]batchLanes)

// haveQ16Batch reports whether a product of a few rows by a packed
// codebook matrix runs the batch kernels in the fast mode: with AVX2 and
// no AVX-512, where the float path decodes each row to float32 for dot4,
// and with AVX-512 VNNI, where they measured faster than the float
// lutNibDot2x4 / lutNibDot4x4 (BenchmarkQ16Batch, docs/KERNELS.md).
func haveQ16Batch() bool { return simd && (!simd512 || simdVNNI) }

// lutQ16BatchDot runs the width-token kernel (8 or 4) of component t over
// the packed row p, the VNNI one for Q16 blocks in pairs.
func lutQ16BatchDot(cb *intCodebook, t int, p []uint8, q []int16, scale []float32, blocks, width int, pairs bool, acc *[q16BatchGroup]batchLanes) {
	_ = p[blocks*16-1]
	_ = q[blocks*width*Q16Block-1]
	_ = scale[(blocks+Q16Group-1)/Q16Group*width-1]
	switch {
	case pairs && width == 8:
		lutQ16Dot8VNNI(&cb.w32[t], &p[0], &q[0], &scale[0], blocks, acc)
	case pairs:
		lutQ16Dot4VNNI(&cb.w32[t], &p[0], &q[0], &scale[0], blocks, acc)
	case width == 8:
		lutQ16Dot8AVX2(&cb.lo[t], &cb.hi[t], &p[0], &q[0], &scale[0], blocks, acc)
	default:
		lutQ16Dot4AVX2(&cb.lo[t], &cb.hi[t], &p[0], &q[0], &scale[0], blocks, acc)
	}
}
