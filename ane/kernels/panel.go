package kernels

// The panel path of the matrix-matrix products (prefill blocks, #21): for
// n ≥ panelMinTokens activation rows the runner stores the activations
// once per product column by column in groups of panelTokens
// (transposePanels), each worker decodes panelRows weight rows at a time,
// a column tile at a time, to float32 (decodeTile, a SIMD lookup), and
// the panel kernel multiplies them out with broadcast FMAs: 24 FMAs per 14
// loads and no table lookups in the inner loop, where the row kernels
// (lutNibDot4x4) spend one lookup per two FMAs. Each output (row, token)
// is one FMA chain over the columns in order, from the same decoded
// weights, so the result does not depend on how the rows are split over
// workers or which block a row or token falls in: padded rows and tokens
// only add outputs that are dropped.

const (
	panelRows   = 12 // weight rows per kernel call (12 is a multiple of every Group)
	panelTokens = 32 // activation rows per kernel call (two ZMM of float32)
	// panelMinTokens is the smallest product the panel path takes: a
	// Verify block of 8 would fill a quarter of each call, and its rows
	// read the weights once either way.
	panelMinTokens = 16
)

// panelOn lets the benchmark compare the panel path with the row
// kernels on the same product.
var panelOn = true

// panelX is a product's activations column by column: group g's column c
// is panelTokens floats at x[(g·cols + c)·panelTokens], tokens past n zero.
type panelX struct {
	x       []float32
	n, cols int
	groups  int
	src     []float32 // the rows being transposed (RunRange)
}

// transposeBlock is the column block of one transposition step: the
// block's destination lines (16 columns × 32 tokens, 2 KiB) stay in L1
// while each token's 16 values are read.
const transposeBlock = 16

// transposePanels stores the n rows of x (n×cols, row-major) into px, the
// columns split over the pool's workers when the product is large.
func (r *Runner) transposePanels(px *panelX, x []float32, n, cols int) {
	groups := (n + panelTokens - 1) / panelTokens
	need := groups * cols * panelTokens
	if cap(px.x) < need {
		px.x = make([]float32, need)
	}
	px.x, px.n, px.cols, px.groups, px.src = px.x[:need], n, cols, groups, x
	r.pool.Run(px, cols, transposeBlock, r.partsFor(n*cols*panelRows))
	px.src = nil
}

// RunRange transposes columns [lo, hi) of every group.
func (px *panelX) RunRange(_, lo, hi int) {
	cols := px.cols
	for g := range px.groups {
		dst := px.x[g*cols*panelTokens : (g+1)*cols*panelTokens]
		t0, t1 := g*panelTokens, min(px.n, (g+1)*panelTokens)
		if t1-t0 < panelTokens {
			clear(dst[lo*panelTokens : hi*panelTokens])
		}
		for c0 := lo; c0 < hi; c0 += transposeBlock {
			c1 := min(hi, c0+transposeBlock)
			for t := t0; t < t1; t++ {
				for c, v := range px.src[t*cols+c0 : t*cols+c1] {
					dst[(c0+c)*panelTokens+t-t0] = v
				}
			}
		}
	}
}

// usePanels prepares the panel path for the sides of t it applies to: n
// ≥ panelMinTokens, a panel kernel on this machine, and a matrix that
// decodes by tiles (the packed codebook formats). The float formats keep
// the row path (dot4), whose results do not depend on the machine's
// vector width: the rebuild's calibration forward runs them, and its
// golden export (ane/rebuild) must not depend on the CPU. One
// transposition serves both sides.
func (r *Runner) usePanels(t *pairTask, x []float32, n int) {
	if n < panelMinTokens || !havePanel() {
		return
	}
	integer := func(p *product) bool { return p.m != nil && p.q8 == nil && r.usePanelQ16(p.m, n) }
	if levels, cols := sharedLevels(t, integer); levels != 0 {
		r.quantizePanelsQ16(&r.pq, x, n, cols, levels)
	}
	done := false
	for i := range t.parts {
		if p := &t.parts[i]; p.m != nil && p.q8 == nil {
			if integer(p) {
				p.pq = &r.pq
				continue
			}
			if td, ok := p.m.(tileDecoder); !ok || !td.tiled() {
				continue
			}
			if !done {
				r.transposePanels(&r.px, x, n, p.m.Cols())
				done = true
			}
			p.px = &r.px
		}
	}
}

// panelCols is the column tile of the panel path: panelRows decoded rows
// of it (12 KiB) stay in L1 while every token group passes over them.
const panelCols = 256

// tileDecoder is a Matrix that can decode a column range of one row
// (when tiled): the matrices the panel path takes.
type tileDecoder interface {
	tiled() bool
	decodeTile(row, c0, c1 int, dst []float32)
}

// mulPanels computes rows [lo, hi) of p (a tileDecoder) for every token,
// panelRows rows at a time.
func (r *Runner) mulPanels(w int, p *product, lo, hi int) {
	m, px := p.m, p.px
	td := m.(tileDecoder)
	rows, cols := m.Rows(), m.Cols()
	tile := min(cols, panelCols)
	need := panelRows * tile
	if cap(r.scratch[w]) < need {
		r.scratch[w] = make([]float32, need)
	}
	wt := r.scratch[w][:need]
	for r0 := lo; r0 < hi; r0 += panelRows {
		nr := min(panelRows, hi-r0)
		outs := r.panelOuts(w, px.groups)
		clear(wt[nr*tile:]) // padding rows: their outputs are dropped
		for c0 := 0; c0 < cols; c0 += tile {
			c1 := min(cols, c0+tile)
			for i := range nr {
				td.decodeTile(r0+i, c0, c1, wt[i*tile:(i+1)*tile])
			}
			for g := range outs {
				xt := px.x[(g*cols+c0)*panelTokens : (g*cols+c1)*panelTokens]
				panel12x32(wt, tile, c1-c0, xt, &outs[g])
			}
		}
		scatterPanels(p.dst[r0:], rows, nr, px.n, outs, nil)
	}
}

// panelOuts is worker w's zeroed output blocks for groups token groups.
func (r *Runner) panelOuts(w, groups int) [][panelRows * panelTokens]float32 {
	if len(r.panelOut[w]) < groups {
		r.panelOut[w] = make([][panelRows * panelTokens]float32, groups)
	}
	outs := r.panelOut[w][:groups]
	clear(outs)
	return outs
}

// scatterPanels stores the first nr rows of the output blocks outs (one
// per 32-token group) for tokens [0, n) into dst (token t's row i at
// dst[t·rows + i]), times factor[i] when factor is not nil.
func scatterPanels(dst []float32, rows, nr, n int, outs [][panelRows * panelTokens]float32, factor *[panelRows]float32) {
	for g := range outs {
		t0 := g * panelTokens
		for t := t0; t < min(n, t0+panelTokens); t++ {
			y, o := dst[t*rows:t*rows+nr], outs[g][t-t0:]
			if factor == nil {
				for i := range y {
					y[i] = o[i*panelTokens]
				}
				continue
			}
			for i := range y {
				y[i] = o[i*panelTokens] * factor[i]
			}
		}
	}
}

// panel12x32Go is the panel kernel's contract in Go: out[32i + t] +=
// Σ_c w[i·stride + c]·xt[c·32 + t] over cols columns (rounding differs
// from the kernel's FMAs).
func panel12x32Go(w []float32, stride, cols int, xt []float32, out *[panelRows * panelTokens]float32) {
	for i := range panelRows {
		acc := out[i*panelTokens : (i+1)*panelTokens]
		for c, wv := range w[i*stride : i*stride+cols] {
			col := xt[c*panelTokens : (c+1)*panelTokens]
			for t := range acc {
				acc[t] += wv * col[t]
			}
		}
	}
}
