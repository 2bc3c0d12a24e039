package kernels

import "sync"

// The fast mode's low-rank branch (#21: the export's rank-64 lr_a/lr_b
// factors in integers). With Runner.Integer, y += A·(B·x) runs on INT8
// per-channel forms of the factors (each row to ±127 of its largest
// magnitude, made once, on the first integer product: a model served only
// in the exact mode never makes them) against activations quantized to Q8:
// B·x through the INT8 integer path (x quantized once, as for any INT8
// product), then B·x itself quantized per token and each row of A meeting
// it in int8Q8Dot. Each token's result is bit-identical however many
// tokens the product has (both steps are per-token single-row sums), so a
// Verify row's branch is a decode step's. The factors read a quarter of
// the F32 bytes; the F32 forms stay for the exact mode.

// lowRank8 is a Linear's factors in INT8 per-channel form, made once.
type lowRank8 struct {
	once sync.Once
	a, b *Int8
}

// intFactors returns l's low-rank factors as INT8 per-channel matrices,
// quantizing them on first use.
func (l *Linear) intFactors() (a, b *Int8) {
	l.lr8.once.Do(func() { l.lr8.a, l.lr8.b = int8Rows(l.A), int8Rows(l.B) })
	return l.lr8.a, l.lr8.b
}

// int8Rows quantizes each row of m to int8 codes times one scale, the
// row's largest magnitude over 127 (an all-zero row: scale 0, codes 0),
// rounding to nearest: every weight within half its row's step.
func int8Rows(m *F32) *Int8 {
	q, scale := make([]int8, len(m.w)), make([]float32, m.rows)
	for r := range m.rows {
		row := m.w[r*m.cols : (r+1)*m.cols]
		s, inv := runScale(row, 127)
		scale[r] = s
		if inv == 0 {
			continue
		}
		for j, v := range row {
			q[r*m.cols+j] = int8(roundCode(v, inv))
		}
	}
	return &Int8{m.rows, m.cols, q, scale}
}

// lowRankQ8 computes lrT = B·x for the n rows of x with l's INT8 factors
// (a Run of its own: every row of A·lrT needs all of it) and quantizes it
// per token into q; it returns the INT8 form of A.
func (r *Runner) lowRankQ8(l *Linear, lrT, x []float32, n int, q *Q8) *Int8 {
	a, b := l.intFactors()
	r.lrTask = pairTask{r: r, x: x, n: n, parts: [2]product{{m: b, dst: lrT}}}
	r.useQ8(&r.lrTask, x, n)
	r.pool.Run(&r.lrTask, b.Rows(), 1, r.partsFor(b.Rows()*b.Cols()*n))
	r.lrTask = pairTask{}
	quantizeQ8Rows(q, lrT, n, b.Rows())
	return a
}

// addLowRankQ8 adds A·lrT to rows [lo, hi) of p's n tokens from the
// quantized lrT (lowRankQ8).
func addLowRankQ8(p *product, n, lo, hi int) {
	a, rows := p.a8, p.m.Rows()
	nb := q8Blocks(a.cols)
	for tok := range n {
		v := q8Row(p.lrQ, tok, nb)
		out := p.dst[tok*rows : (tok+1)*rows]
		for i := lo; i < hi; i++ {
			out[i] += int8Q8Dot(a.q[i*a.cols:(i+1)*a.cols], &v) * a.scale[i]
		}
	}
}
