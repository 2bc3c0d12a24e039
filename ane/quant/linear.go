package quant

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
	pool    *Pool
	task    mulTask
	scratch [][]float32
	lrTmp   []float32
}

// NewRunner returns a runner with a pool of threads workers (≤ 0: GOMAXPROCS).
func NewRunner(threads int) *Runner {
	p := NewPool(threads)
	r := &Runner{pool: p, scratch: make([][]float32, p.Workers())}
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
	if l.A != nil {
		rank := l.A.Cols()
		if cap(r.lrTmp) < n*rank {
			r.lrTmp = make([]float32, n*rank)
		}
		t := r.lrTmp[:n*rank]
		r.run(l.B, nil, nil, t, x, n)
		r.run(l.W, l.A, t, dst, x, n)
		return
	}
	r.run(l.W, nil, nil, dst, x, n)
}

func (r *Runner) run(m Matrix, a *F32, lrT, dst, x []float32, n int) {
	r.task.m, r.task.a, r.task.lrT, r.task.dst, r.task.x, r.task.n = m, a, lrT, dst, x, n
	parts := r.pool.Workers()
	if m.Rows()*m.Cols()*n < parallelThreshold {
		parts = 1
	}
	r.pool.Run(&r.task, m.Rows(), m.Group(), parts)
	r.task.m, r.task.a, r.task.lrT, r.task.dst, r.task.x = nil, nil, nil, nil, nil
}

type mulTask struct {
	r      *Runner
	m      Matrix
	a      *F32
	lrT    []float32
	dst, x []float32
	n      int
}

func (t *mulTask) RunRange(w, lo, hi int) {
	m, rows, cols := t.m, t.m.Rows(), t.m.Cols()
	if t.n == 1 {
		m.mulVec(t.dst, t.x, lo, hi)
	} else {
		// Matrix-matrix: decode each row group once and use it for every
		// token, so the stored weights are read once per block.
		cd := m.Group()
		need := cd * cols
		if cap(t.r.scratch[w]) < need {
			t.r.scratch[w] = make([]float32, need)
		}
		buf := t.r.scratch[w][:need]
		for g := lo / cd; g < hi/cd; g++ {
			m.decodeGroup(g, buf)
			for k := 0; k < cd; k++ {
				row := buf[k*cols : (k+1)*cols]
				r := g*cd + k
				tok := 0
				for ; tok+4 <= t.n; tok += 4 {
					x := t.x[tok*cols : (tok+4)*cols]
					s0, s1, s2, s3 := dot4(row, x[:cols], x[cols:2*cols], x[2*cols:3*cols], x[3*cols:])
					t.dst[tok*rows+r], t.dst[(tok+1)*rows+r] = s0, s1
					t.dst[(tok+2)*rows+r], t.dst[(tok+3)*rows+r] = s2, s3
				}
				for ; tok < t.n; tok++ {
					t.dst[tok*rows+r] = dot(row, t.x[tok*cols:(tok+1)*cols])
				}
			}
		}
	}
	if t.a != nil {
		rank := t.a.cols
		for tok := 0; tok < t.n; tok++ {
			v := t.lrT[tok*rank : (tok+1)*rank]
			out := t.dst[tok*rows : (tok+1)*rows]
			for i := lo; i < hi; i++ {
				out[i] += dot(t.a.w[i*rank:(i+1)*rank], v)
			}
		}
	}
}
