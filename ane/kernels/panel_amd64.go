//go:build amd64 && !purego

package kernels

//go:noescape
func panel12x32AVX512(w *float32, wstride int, xt *float32, cols int, out *[panelRows * panelTokens]float32)

//go:noescape
func panel6x16AVX2(w *float32, wstride int, xt *float32, cols int, out *float32)

//go:noescape
func decodeNibAVX512(tab *[16]float32, p *uint8, s float32, out *float32, blocks int)

//go:noescape
func decodeNibAVX2(tab *[16]float32, p *uint8, s float32, out *float32, blocks int)

// havePanel reports whether the panel kernel exists at the selected level.
func havePanel() bool { return simd && panelOn }

// panel12x32 is the panel kernel over cols columns of 12 rows (w, row i
// at i·stride) and one transposed group of 32 activation rows (xt),
// added to out. Only with havePanel. With AVX2 it is four 6-row ×
// 16-token blocks, the same chains as the AVX-512 kernel's.
func panel12x32(w []float32, stride, cols int, xt []float32, out *[panelRows * panelTokens]float32) {
	if cols == 0 {
		return
	}
	_, _ = w[(panelRows-1)*stride+cols-1], xt[cols*panelTokens-1]
	if simd512 {
		panel12x32AVX512(&w[0], 4*stride, &xt[0], cols, out)
		return
	}
	const half = panelTokens / 2
	for h := 0; h < panelTokens; h += half {
		for r0 := 0; r0 < panelRows; r0 += panelRows / 2 {
			panel6x16AVX2(&w[r0*stride], 4*stride, &xt[h], cols, &out[r0*panelTokens+h])
		}
	}
}

// decodeNibBlocks writes tab[index j]·s for the whole 32-index blocks of
// the packed row p into out and returns how many values it wrote (the
// rest is decodeNib's, in Go): the same single rounding as the Go loop.
func decodeNibBlocks(p []uint8, tab *[16]float32, s float32, out []float32) int {
	blocks := len(out) / 32
	if !simd || blocks == 0 {
		return 0
	}
	_, _ = p[blocks*16-1], out[blocks*32-1]
	if simd512 {
		decodeNibAVX512(tab, &p[0], s, &out[0], blocks)
	} else {
		decodeNibAVX2(tab, &p[0], s, &out[0], blocks)
	}
	return blocks * 32
}

//go:noescape
func panelQ6x16AVX2(w *int16, wstride int, xq *int32, xs *float32, blocks int, out *float32)

//go:noescape
func panelQ12x32VNNI(w *int16, wstride int, xq *int32, xs *float32, blocks int, out *[panelRows * panelTokens]float32)

//go:noescape
func decodeNibQ16AVX2(lo, hi *[16]uint8, p *uint8, out *int16, blocks int)

// decodeNibQ16VNNI is decodeNibQ16AVX2 on the AVX-512 VNNI level: two
// blocks a step, looked up with VPERMW in the doubled table (w32).
//
//go:noescape
func decodeNibQ16VNNI(tab *[32]int16, p *uint8, out *int16, blocks int)

// panelQ12x32 is the integer panel kernel over blocks 32-column blocks of
// 12 rows of codes (w, row i at i·stride) and one 32-token group of
// column pairs (xq) and block scales (xs), added to out: one call with
// AVX-512 VNNI, four 6-row × 16-token calls with AVX2 (the same bits).
func panelQ12x32(w []int16, stride, blocks int, xq []int32, xs []float32, out *[panelRows * panelTokens]float32) {
	if blocks == 0 {
		return
	}
	_, _, _ = w[(panelRows-1)*stride+blocks*Q16Block-1], xq[blocks*Q16Block/2*panelTokens-1], xs[blocks*panelTokens-1]
	if !simd {
		panelQ12x32Go(w, stride, blocks, xq, xs, out)
		return
	}
	if simdVNNI {
		panelQ12x32VNNI(&w[0], 2*stride, &xq[0], &xs[0], blocks, out)
		return
	}
	const half = panelTokens / 2
	for h := 0; h < panelTokens; h += half {
		for r0 := 0; r0 < panelRows; r0 += panelRows / 2 {
			panelQ6x16AVX2(&w[r0*stride], 2*stride, &xq[h], &xs[h], blocks, &out[r0*panelTokens+h])
		}
	}
}

// decodeNibQ16Blocks writes the codes of the whole blocks of the packed
// row p (component t of cb's codes) into out and returns how many
// blocks it wrote (the rest is decodeTileQ16's, in Go).
func decodeNibQ16Blocks(cb *intCodebook, t int, p []uint8, out []int16) int {
	blocks := min(len(p)/16, len(out)/32)
	if !simd || blocks == 0 {
		return 0
	}
	if simdVNNI {
		decodeNibQ16VNNI(&cb.w32[t], &p[0], &out[0], blocks)
		return blocks
	}
	decodeNibQ16AVX2(&cb.lo[t], &cb.hi[t], &p[0], &out[0], blocks)
	return blocks
}
