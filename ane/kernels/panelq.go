package kernels

// The integer panel path (#21): in the fast mode (Runner.Integer) a
// prefill-sized product (n ≥ panelMinTokens) by a packed ≤ 16-entry
// codebook matrix with an integer codebook runs the panel path in
// integers where its kernels measured faster than the float panel
// kernel (panelQ16Faster: AVX2, and AVX-512 VNNI). Each activation row is quantized as QuantizeQ16 does
// (the same codes and scales, stored in column order) and stored as
// column pairs, 32 tokens per group (panelQX); each worker decodes
// panelRows weight rows a column tile at a time to their int16 codes
// (decodeTileQ16, two VPSHUFB per 16 indices) and the kernel multiplies
// pairs of columns with VPMADDWD: 16 multiply-adds per instruction where
// the float panel kernel's FMA does 8 (AVX2; AVX-512 VNNI's VPDPWSSD does
// 32 and the add, where the float FMA does 16). A block of 32 columns sums exactly
// in int32 (laneSum), then one conversion and one FMA by the token's block
// scale add it to the float output; the codebook and row scales multiply
// each output once at the end. As in the float panel path, each output
// (row, token) is one chain over the blocks in order, so it does not
// depend on the worker split or on where the token falls in the block.

// panelQX is a product's activations quantized for the integer panel
// kernel: group g (tokens 32g…32g+31) holds, for column pair p, the 32
// tokens' two int16 codes (column 2p in the low half) at
// q[(g·pairs + p)·32 + t], and for block b their scales at
// s[(g·blocks + b)·32 + t]; tokens past n have zero codes and scales.
type panelQX struct {
	q              []int32
	s              []float32
	n, cols        int
	blocks, groups int
	levels         float32     // the codes' bound, QuantizeQ16's
	src            []float32   // the rows being quantized (RunRange)
	inv            [][]float64 // per worker: its tokens' inverse block scales
}

// pairs is the number of column pairs per token (whole blocks).
func (px *panelQX) pairs() int { return px.blocks * Q16Block / 2 }

// quantizePanelsQ16 quantizes the n rows of x (n×cols) to ±levels into
// px, the tokens split over the pool's workers when the product is large.
func (r *Runner) quantizePanelsQ16(px *panelQX, x []float32, n, cols int, levels float32) {
	px.n, px.cols, px.src, px.levels = n, cols, x, levels
	px.blocks = (cols + Q16Block - 1) / Q16Block
	px.groups = (n + panelTokens - 1) / panelTokens
	nq, ns := px.groups*px.pairs()*panelTokens, px.groups*px.blocks*panelTokens
	if cap(px.q) < nq {
		px.q = make([]int32, nq)
	}
	if cap(px.s) < ns {
		px.s = make([]float32, ns)
	}
	px.q, px.s = px.q[:nq], px.s[:ns]
	if n%panelTokens != 0 { // the last group's absent tokens
		g := px.groups - 1
		clear(px.q[g*px.pairs()*panelTokens:])
		clear(px.s[g*px.blocks*panelTokens:])
	}
	if len(px.inv) < r.pool.Workers() {
		px.inv = make([][]float64, r.pool.Workers())
	}
	r.pool.Run(px, n, 1, r.partsFor(n*cols*panelRows))
	px.src = nil
}

// RunRange quantizes tokens [lo, hi) as QuantizeQ16 does: first each
// token's run scales, then the codes one 32-column block at a time for
// all the tokens, so the block's 2 KiB of destination pairs stay in
// cache while the tokens fill them.
func (px *panelQX) RunRange(w, lo, hi int) {
	nb, pairs, cols := px.blocks, px.pairs(), px.cols
	if need := (hi - lo) * nb; cap(px.inv[w]) < need {
		px.inv[w] = make([]float64, need)
	}
	inv := px.inv[w][:(hi-lo)*nb]
	for t := lo; t < hi; t++ {
		row, tt := px.src[t*cols:(t+1)*cols], t%panelTokens
		s := px.s[t/panelTokens*nb*panelTokens:]
		for b0 := 0; b0 < nb; b0 += Q16Group {
			b1 := min(nb, b0+Q16Group)
			sc, iv := runScale(row[b0*Q16Block:min(b1*Q16Block, cols)], px.levels)
			for b := b0; b < b1; b++ {
				s[b*panelTokens+tt], inv[(t-lo)*nb+b] = sc, iv
			}
		}
	}
	const blockPairs = Q16Block / 2
	for b := range nb {
		for t := lo; t < hi; t++ {
			iv := inv[(t-lo)*nb+b]
			q := px.q[(t/panelTokens*pairs+b*blockPairs)*panelTokens+t%panelTokens:]
			j0 := b * Q16Block
			row := px.src[t*cols+j0 : t*cols+min(cols, j0+Q16Block)]
			if len(row) == Q16Block {
				for p := range blockPairs {
					q[p*panelTokens] = packPair(row[2*p], row[2*p+1], iv)
				}
				continue
			}
			var whole [Q16Block]float32 // a ragged last block, zero-padded
			copy(whole[:], row)
			for p := range blockPairs {
				q[p*panelTokens] = packPair(whole[2*p], whole[2*p+1], iv)
			}
		}
	}
}

// packPair is the pair of codes round(a·inv), round(b·inv), a in the low
// half.
func packPair(a, b float32, inv float64) int32 {
	ca, cb := int16(roundCode(a, inv)), int16(roundCode(b, inv))
	return int32(uint32(uint16(ca)) | uint32(uint16(cb))<<16)
}

// usePanelQ16: the integer panel path applies to m (Runner.Integer, n ≥
// panelMinTokens, an integer codebook where its kernels measured faster).
func (r *Runner) usePanelQ16(m Matrix, n int) bool {
	lut, ok := m.(*LUT)
	return ok && r.Integer && n >= panelMinTokens && lut.icb != nil && panelQ16Faster()
}

// mulPanelsQ16 is mulPanels on the integer panel path: rows [lo, hi) of
// p (a *LUT with an integer codebook) for every token of p.pq.
func (r *Runner) mulPanelsQ16(w int, p *product, lo, hi int) {
	m, px := p.m.(*LUT), p.pq
	m.icb.checkActs(px.levels)
	padded := px.blocks * Q16Block
	tile := min(padded, panelCols)
	need := panelRows * tile
	if cap(r.scr16[w]) < need {
		r.scr16[w] = make([]int16, need)
	}
	wt := r.scr16[w][:need]
	pairs := px.pairs()
	for r0 := lo; r0 < hi; r0 += panelRows {
		nr := min(panelRows, hi-r0)
		outs := r.panelOuts(w, px.groups)
		clear(wt[nr*tile:]) // padding rows: their outputs are dropped
		for c0 := 0; c0 < padded; c0 += tile {
			c1 := min(padded, c0+tile)
			for i := range nr {
				m.decodeTileQ16(r0+i, c0, c1, wt[i*tile:i*tile+c1-c0])
			}
			b0, nb := c0/Q16Block, (c1-c0)/Q16Block
			for g := range outs {
				xq := px.q[(g*pairs+c0/2)*panelTokens : (g*pairs+c1/2)*panelTokens]
				xs := px.s[(g*px.blocks+b0)*panelTokens : (g*px.blocks+b0+nb)*panelTokens]
				panelQ12x32(wt, tile, nb, xq, xs, &outs[g])
			}
		}
		var factor [panelRows]float32
		for i := range nr {
			factor[i] = m.icb.scale[(r0+i)%m.cd] * m.rowScale(r0+i)
		}
		scatterPanels(p.dst[r0:], m.rows, nr, px.n, outs, &factor)
	}
}

// decodeTileQ16 writes the int16 codes of columns [c0, c1) of row r into
// dst, whole blocks (c0 and c1 multiples of 32, c1 within the packed
// row): the padding past Cols decodes index 0, which meets zero
// activation codes.
func (m *LUT) decodeTileQ16(r, c0, c1 int, dst []int16) {
	t := r % m.cd
	p := m.nibRow(r / m.cd)[c0/2 : c1/2]
	done := decodeNibQ16Blocks(m.icb, t, p, dst)
	code := &m.icb.code[t]
	for b := done; b < len(p)/16; b++ {
		blk, out := p[16*b:16*b+16:16*b+16], dst[32*b:32*b+32:32*b+32]
		for j, v := range blk {
			out[j], out[16+j] = code[v&15], code[v>>4]
		}
	}
}

// panelQ12x32Go is the integer panel kernel's contract in Go: for each
// row i and token t, block by block, the exact int32 sum of the block's
// code products times the token's block scale is added to out[32i + t]
// (the kernel fuses that multiply-add, so its rounding differs).
func panelQ12x32Go(w []int16, stride, blocks int, xq []int32, xs []float32, out *[panelRows * panelTokens]float32) {
	for i := range panelRows {
		row := w[i*stride : i*stride+blocks*Q16Block]
		for t := range panelTokens {
			o := out[i*panelTokens+t]
			for b := range blocks {
				var acc int32
				for p := b * Q16Block / 2; p < (b+1)*Q16Block/2; p++ {
					v := xq[p*panelTokens+t]
					acc += int32(row[2*p])*int32(int16(v)) + int32(row[2*p+1])*int32(int16(v>>16))
				}
				o += float32(acc) * xs[b*panelTokens+t]
			}
			out[i*panelTokens+t] = o
		}
	}
}
