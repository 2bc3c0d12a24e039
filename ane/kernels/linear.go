package kernels

import "fmt"

// Linear is y = W·x plus an optional low-rank correction A·(B·x), the
// export's rank-64 lr_a/lr_b branch.
type Linear struct {
	W    Matrix
	A, B *F32 // nil, or A: Rows×r and B: r×Cols
}

// NewLinear checks that the low-rank factors (both nil or both set) fit w.
func NewLinear(name string, w Matrix, a, b *F32) (*Linear, error) {
	if (a == nil) != (b == nil) {
		return nil, fmt.Errorf("%s: low-rank branch needs both lr_a and lr_b", name)
	}
	if a != nil && (a.Rows() != w.Rows() || b.Cols() != w.Cols() || a.Cols() != b.Rows()) {
		return nil, fmt.Errorf("%s: low-rank factors %d×%d · %d×%d do not fit the %d×%d matrix",
			name, a.Rows(), a.Cols(), b.Rows(), b.Cols(), w.Rows(), w.Cols())
	}
	return &Linear{W: w, A: a, B: b}, nil
}

func (l *Linear) Rows() int { return l.W.Rows() }
func (l *Linear) Cols() int { return l.W.Cols() }

// Bytes is what one product reads: the matrix and any low-rank factors.
func (l *Linear) Bytes() int64 {
	n := l.W.Bytes()
	if l.A != nil {
		n += l.A.Bytes() + l.B.Bytes()
	}
	return n
}

// Dense returns W + A·B as row-major float32 (tests and rebuild only).
func (l *Linear) Dense() []float32 {
	w := Densify(l.W)
	if l.A != nil {
		r, cols := l.A.Cols(), l.Cols()
		for i := 0; i < l.Rows(); i++ {
			for k := 0; k < r; k++ {
				a := l.A.w[i*r+k]
				for j, b := range l.B.w[k*cols : (k+1)*cols] {
					w[i*cols+j] += a * b
				}
			}
		}
	}
	return w
}

// Runner executes products for one session: its worker pool and the
// per-worker scratch, grown on first use and then reused.
type Runner struct {
	// MinParallel is the multiply-add count below which a product runs on
	// the calling goroutine (0: parallelThreshold); tests lower it to split
	// small models' products.
	MinParallel int
	// Integer is the fast numeric mode's integer path: a product by an
	// INT8 matrix runs against the activations quantized once to Q8
	// (q8.go; n rows: q8batch.go), and a product by a packed ≤ 16-entry
	// codebook against them quantized to Q16 (q4.go for one row,
	// q4batch.go for a few rows on AVX2, panelq.go for prefill blocks),
	// within the quantization bound of the float kernel instead of
	// bit-exact.
	Integer bool
	// IntegerCodebooks adds, with Integer, the codebook formats'
	// products of n > 1 rows where lutNibDot2x4 has no kernel (q8lut.go).
	// Off in the engine: it misses the fast mode's KL bound on the small
	// preset (docs/KERNELS.md).
	IntegerCodebooks bool

	q8       Q8       // the quantized activation rows of the current product
	q16      Q16      // the same for the codebook sides (useQ16)
	q16b     q16Batch // the same for a few rows (useQ16)
	px       panelX   // the same, transposed for the panel path (usePanels)
	pq       panelQX  // the same, quantized for the integer panel path
	pool     *Pool
	task     pairTask
	lrTask   pairTask // a low-rank branch's B·x, run while task is being set up
	scratch  [][]float32
	scr8     [][]int8                             // the integer matrix-matrix path's decoded rows (q8lut.go)
	scr16    [][]int16                            // the integer panel path's decoded code tiles (panelq.go)
	panelOut [][][panelRows * panelTokens]float32 // per worker: the panel kernel's outputs, one per token group
	lrTmp    [2][]float32
}

// NewRunner returns a runner with a pool of threads workers (≤ 0: GOMAXPROCS).
func NewRunner(threads int) *Runner {
	p := NewPool(threads)
	r := &Runner{pool: p, scratch: make([][]float32, p.Workers()), scr8: make([][]int8, p.Workers()), scr16: make([][]int16, p.Workers()),
		panelOut: make([][][panelRows * panelTokens]float32, p.Workers())}
	r.task.r = r
	return r
}

// Pool is the runner's worker pool, for other row-parallel session work.
func (r *Runner) Pool() *Pool { return r.pool }

// Close stops the workers.
func (r *Runner) Close() { r.pool.Close() }

// parallelThreshold is the multiply-add count below which a product runs on
// the calling goroutine: waking workers costs more than it saves.
const parallelThreshold = 1 << 15

// Apply sets dst[t·Rows + i] = (W·x_t)[i] (+ A·B·x_t) for the n rows x_t of
// x (x is n×Cols row-major, dst n×Rows).
func (r *Runner) Apply(l *Linear, dst, x []float32, n int) {
	r.ApplyPair(l, nil, dst, nil, x, n, nil)
}

// ApplyPair computes a·x into da and, when b is not nil, b·x into db (a and
// b have the same rows) in one Run. When then is not nil it is called as
// then.RunRange(w, lo, hi) once rows [lo, hi) of both products are done for
// all n tokens, on the worker that made them: an elementwise epilogue (an
// activation, a per-channel filter) runs in parallel and in cache, instead
// of serially after one more barrier.
func (r *Runner) ApplyPair(a, b *Linear, da, db, x []float32, n int, then Task) {
	if b != nil && b.Rows() != a.Rows() {
		panic(fmt.Sprintf("quant: ApplyPair of %d and %d rows", a.Rows(), b.Rows()))
	}
	t := &r.task
	t.x, t.n, t.then = x, n, then
	t.parts[0] = r.product(0, a, da, x, n)
	work, align := a.Rows()*a.Cols(), a.W.Group()
	if b != nil {
		t.parts[1] = r.product(1, b, db, x, n)
		work += b.Rows() * b.Cols()
		align = lcm(align, b.W.Group())
	}
	r.useQ8(t, x, n)
	r.useQ16(t, x, n)
	r.usePanels(t, x, n)
	r.pool.Run(t, a.Rows(), align, r.partsFor(work*n))
	*t = pairTask{r: r}
}

// product prepares one side of a pair. A low-rank branch's first product,
// lrT = B·x, runs here in a Run of its own: every row of A·lrT needs all of
// it.
func (r *Runner) product(side int, l *Linear, dst, x []float32, n int) product {
	if l.A == nil {
		return product{m: l.W, dst: dst}
	}
	rank := l.A.Cols()
	if cap(r.lrTmp[side]) < n*rank {
		r.lrTmp[side] = make([]float32, n*rank)
	}
	lrT := r.lrTmp[side][:n*rank]
	r.lrTask = pairTask{r: r, x: x, n: n, parts: [2]product{{m: l.B, dst: lrT}}}
	r.pool.Run(&r.lrTask, l.B.Rows(), l.B.Group(), r.partsFor(l.B.Rows()*l.B.Cols()*n))
	r.lrTask = pairTask{}
	return product{m: l.W, a: l.A, lrT: lrT, dst: dst}
}

// useQ8 quantizes the n rows of x once for the sides of t that have an
// integer product (q8Matrix) when the integer path applies.
func (r *Runner) useQ8(t *pairTask, x []float32, n int) {
	if !r.Integer {
		return
	}
	quantized := false
	for i := range t.parts {
		if m, ok := t.parts[i].m.(q8Matrix); ok && m.q8Rows(n, r.IntegerCodebooks) {
			if !quantized {
				quantizeQ8Rows(&r.q8, x, n, t.parts[i].m.Cols())
				quantized = true
			}
			t.parts[i].q8 = &r.q8
		}
	}
}

func (r *Runner) partsFor(work int) int {
	if r.MinParallel == 0 && work < parallelThreshold || work < r.MinParallel {
		return 1
	}
	return r.pool.Workers()
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// batchMatrix is a Matrix with its own matrix-matrix kernel.
type batchMatrix interface {
	mulBatch(y, x []float32, n, r0, r1 int) bool
}

// product is one matrix of a pair: dst = m·x (+ a·lrT).
type product struct {
	m    Matrix
	a    *F32
	lrT  []float32
	dst  []float32
	q8   *Q8       // set: m is a q8Matrix and x is quantized here (Runner.Integer)
	q16  *Q16      // set: m is a *LUT and x is quantized here (useQ16)
	q16b *q16Batch // set: the same for n > 1 rows (useQ16)
	px   *panelX   // set: the panel path applies, x transposed here (usePanels)
	pq   *panelQX  // set: the integer panel path applies, x quantized here (usePanels)
}

type pairTask struct {
	r     *Runner
	parts [2]product
	x     []float32
	n     int
	then  Task
}

func (t *pairTask) RunRange(w, lo, hi int) {
	for i := range t.parts {
		if p := &t.parts[i]; p.m != nil {
			t.r.mulRange(w, p, t.x, t.n, lo, hi)
		}
	}
	if t.then != nil {
		t.then.RunRange(w, lo, hi)
	}
}

// mulRange computes rows [lo, hi) of p for the n tokens of x.
func (r *Runner) mulRange(w int, p *product, x []float32, n, lo, hi int) {
	m, rows, cols := p.m, p.m.Rows(), p.m.Cols()
	if p.q8 != nil {
		m.(q8Matrix).mulQ8(p.dst, p.q8, n, lo, hi, &r.scr8[w])
	} else if n == 1 && p.q16 != nil {
		m.(*LUT).mulVecQ16(p.dst, p.q16, lo, hi)
	} else if n == 1 {
		m.mulVec(p.dst, x, lo, hi)
	} else if p.q16b != nil {
		m.(*LUT).mulBatchQ16(p.dst, p.q16b, lo, hi)
	} else if p.pq != nil {
		r.mulPanelsQ16(w, p, lo, hi)
	} else if p.px != nil {
		r.mulPanels(w, p, lo, hi)
	} else if b, ok := m.(batchMatrix); !ok || !b.mulBatch(p.dst, x, n, lo, hi) {
		// Matrix-matrix: decode each row group once and use it for every
		// token, so the stored weights are read once per block.
		cd := m.Group()
		need := cd * cols
		if cap(r.scratch[w]) < need {
			r.scratch[w] = make([]float32, need)
		}
		buf := r.scratch[w][:need]
		for g := lo / cd; g < hi/cd; g++ {
			m.decodeGroup(g, buf)
			for k := 0; k < cd; k++ {
				row := buf[k*cols : (k+1)*cols]
				i := g*cd + k
				tok := 0
				for ; tok+4 <= n; tok += 4 {
					xs := x[tok*cols : (tok+4)*cols]
					s0, s1, s2, s3 := dot4(row, xs[:cols], xs[cols:2*cols], xs[2*cols:3*cols], xs[3*cols:])
					p.dst[tok*rows+i], p.dst[(tok+1)*rows+i] = s0, s1
					p.dst[(tok+2)*rows+i], p.dst[(tok+3)*rows+i] = s2, s3
				}
				for ; tok < n; tok++ {
					p.dst[tok*rows+i] = dot(row, x[tok*cols:(tok+1)*cols])
				}
			}
		}
	}
	if p.a != nil {
		rank := p.a.cols
		for tok := 0; tok < n; tok++ {
			v := p.lrT[tok*rank : (tok+1)*rank]
			out := p.dst[tok*rows : (tok+1)*rows]
			for i := lo; i < hi; i++ {
				out[i] += dot(p.a.w[i*rank:(i+1)*rank], v)
			}
		}
	}
}
