package ref

// Product epilogues (kernels.Runner.ApplyPair): elementwise work that runs on
// the worker that just produced the rows it needs, so it is parallel and
// reads them from cache. Each computes exactly what the serial loop did.

// gluTask: g ← silu(g)·u on columns [lo, hi) of n rows of width width.
type gluTask struct {
	fn       *funcs
	g, u     []float32
	n, width int
}

func (e *gluTask) RunRange(_, lo, hi int) {
	for t := 0; t < e.n; t++ {
		g, u := e.g[t*e.width+lo:t*e.width+hi], e.u[t*e.width+lo:t*e.width+hi]
		e.fn.siluTo(g, g)
		for i := range g {
			g[i] *= u[i]
		}
	}
}

// gateTask turns the DeltaNet b and a projections of value heads [lo, hi)
// into β = sigmoid(b) and g = −exp(A_log)·softplus(a + dt_bias).
type gateTask struct {
	L        *layer
	fn       *funcs
	beta, g  []float32
	n, heads int
}

func (e *gateTask) RunRange(_, lo, hi int) {
	for t := 0; t < e.n; t++ {
		beta, g := e.beta[t*e.heads:(t+1)*e.heads], e.g[t*e.heads:(t+1)*e.heads]
		e.fn.sigmoidTo(beta[lo:hi], beta[lo:hi])
		e.fn.decayGates(g[lo:hi], e.L.aLog[lo:hi], e.L.dtBias[lo:hi])
	}
}

// convTask runs the causal depthwise conv of channels [lo, hi) over the n
// rows of qkv in order: each row's value becomes silu(conv over
// [kernel−1 history rows | row]) and the raw value enters the history.
// When raw is set (a Verify) the raw rows are kept there for Accept.
type convTask struct {
	s   *Session
	li  int
	w   []float32 // convDim × kernel
	qkv []float32
	raw []float32
	n   int
}

func (e *convTask) RunRange(_, lo, hi int) {
	c := &e.s.m.cfg
	K, cd := c.ConvKernel, c.convDim()
	st := e.s.conv[e.li]
	for t := 0; t < e.n; t++ {
		row := e.qkv[t*cd : (t+1)*cd]
		if e.raw != nil {
			copy(e.raw[t*cd+lo:t*cd+hi], row[lo:hi])
		}
		for ch := lo; ch < hi; ch++ {
			wc := e.w[ch*K : (ch+1)*K]
			acc := wc[K-1] * row[ch]
			for j := 0; j < K-1; j++ {
				acc += wc[j] * st[j*cd+ch]
			}
			// Shift this channel's history before row[ch] is overwritten.
			for j := 0; j < K-2; j++ {
				st[j*cd+ch] = st[(j+1)*cd+ch]
			}
			if K > 1 {
				st[(K-2)*cd+ch] = row[ch]
			}
			row[ch] = acc
		}
		e.s.m.fn.siluTo(row[lo:hi], row[lo:hi])
	}
}
