package ref

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/kernels"
)

// Session is one conversation's state over a shared Model. It implements
// ane.Engine.
type Session struct {
	m   *Model
	run *kernels.Runner

	pos, ctx int
	hi       int      // history rows holding committed-or-verified data
	gen      uint32   // bumped by every call that writes history rows
	rowGen   []uint32 // gen that last wrote each history row (snapshot validity)

	// Per-layer state; entries for the other layer kind are nil.
	conv [][]float32 // DeltaNet conv history: (kernel−1) × convDim raw rows, oldest first
	rec  [][]float32 // DeltaNet recurrent state: valueHeads × keyDim × valueDim
	kc   [][]uint16  // keys, fp16, ctx × kvHeads × headDim
	vc   [][]uint16  // values, fp16 (KV fp16)
	v8   [][]int8    // values, int8 codes (KV v8)
	vs   [][]uint16  // v8 value scales, fp16, ctx × kvHeads

	// An un-accepted Verify: state before it and its per-row DeltaNet inputs.
	pending             int
	savedConv, savedRec [][]float32
	pRaw, pK, pV        [][]float32 // per layer, VerifyRows rows each
	pBeta, pG           [][]float32

	lastRows int // rows of the last forward call (for Features)
	block    int // prefill block (FeedRows)
	s        scratch
	attn     attnTask
	delta    deltaTask
	convT    convTask
	gates    gateTask
	glu      gluTask
}

type scratch struct {
	x, h, hr, y       []float32
	qkv, z, o, bb, ba []float32
	qg, kk, vv, att   []float32
	cos, sin          []float32
	scores            []float32
	kvmem             []float32
	gate, up          []float32
	logits            []float32
	feat              []float32
}

var _ ane.Engine = (*Session)(nil)

// NewSession opens a session at the smallest context entry.
func (m *Model) NewSession() *Session {
	c := &m.cfg
	s := &Session{m: m, run: kernels.NewRunner(m.opts.Threads)}
	s.run.Integer = m.fn.fast
	L := c.Layers
	s.conv, s.rec, s.kc, s.vc, s.v8, s.vs = make([][]float32, L), make([][]float32, L), make([][]uint16, L),
		make([][]uint16, L), make([][]int8, L), make([][]uint16, L)
	s.savedConv, s.savedRec = make([][]float32, L), make([][]float32, L)
	s.pRaw, s.pK, s.pV, s.pBeta, s.pG = make([][]float32, L), make([][]float32, L), make([][]float32, L),
		make([][]float32, L), make([][]float32, L)
	T := ane.VerifyRows
	for i, full := range c.FullAttention {
		if full {
			continue
		}
		s.conv[i] = make([]float32, (c.ConvKernel-1)*c.convDim())
		s.rec[i] = make([]float32, c.LinValueHeads*c.LinKeyDim*c.LinValueDim)
		s.savedConv[i] = make([]float32, len(s.conv[i]))
		s.savedRec[i] = make([]float32, len(s.rec[i]))
		s.pRaw[i] = make([]float32, T*c.convDim())
		s.pK[i] = make([]float32, T*c.keyDim())
		s.pV[i] = make([]float32, T*c.valueDim())
		s.pBeta[i] = make([]float32, T*c.LinValueHeads)
		s.pG[i] = make([]float32, T*c.LinValueHeads)
	}
	s.block = m.feedRows()
	M, H := s.block, c.Hidden
	sc := &s.s
	sc.x, sc.h, sc.hr, sc.y = make([]float32, M*H), make([]float32, M*H), make([]float32, M*H), make([]float32, M*H)
	sc.qkv, sc.z, sc.o = make([]float32, M*c.convDim()), make([]float32, M*c.valueDim()), make([]float32, M*c.valueDim())
	sc.bb, sc.ba = make([]float32, M*c.LinValueHeads), make([]float32, M*c.LinValueHeads)
	sc.qg, sc.kk, sc.vv = make([]float32, M*2*c.Heads*c.HeadDim), make([]float32, M*c.KVHeads*c.HeadDim), make([]float32, M*c.KVHeads*c.HeadDim)
	sc.att = make([]float32, M*c.Heads*c.HeadDim)
	sc.cos, sc.sin = make([]float32, c.RotaryDim/2), make([]float32, c.RotaryDim/2)
	sc.kvmem = make([]float32, s.run.Pool().Workers()*c.LinValueDim)
	sc.gate, sc.up = make([]float32, M*c.Intermediate), make([]float32, M*c.Intermediate)
	sc.logits = make([]float32, T*c.Vocab)
	sc.feat = make([]float32, M*len(m.opts.Taps)*H)
	s.allocHistory(m.opts.Ladder.Smallest())
	// A session dropped without Close still stops its workers once collected.
	runtime.AddCleanup(s, func(r *kernels.Runner) { r.Close() }, s.run)
	return s
}

// Close stops the session's workers.
func (s *Session) Close() error { s.run.Close(); return nil }

// allocHistory replaces the history buffers with ones of capacity ctx,
// keeping rows [0, min(hi, ctx)).
func (s *Session) allocHistory(ctx int) {
	c := &s.m.cfg
	keep := min(s.hi, ctx)
	row := c.KVHeads * c.HeadDim
	for i, full := range c.FullAttention {
		if !full {
			continue
		}
		kc := make([]uint16, ctx*row)
		copy(kc, s.kc[i][:min(len(s.kc[i]), keep*row)])
		s.kc[i] = kc
		if s.m.opts.KV == ane.KVV8 {
			v8 := make([]int8, ctx*row)
			copy(v8, s.v8[i][:min(len(s.v8[i]), keep*row)])
			vs := make([]uint16, ctx*c.KVHeads)
			copy(vs, s.vs[i][:min(len(s.vs[i]), keep*c.KVHeads)])
			s.v8[i], s.vs[i] = v8, vs
		} else {
			vc := make([]uint16, ctx*row)
			copy(vc, s.vc[i][:min(len(s.vc[i]), keep*row)])
			s.vc[i] = vc
		}
	}
	g := make([]uint32, ctx)
	copy(g, s.rowGen[:min(len(s.rowGen), keep)])
	s.rowGen = g
	s.s.scores = make([]float32, s.run.Pool().Workers()*ctx)
	s.ctx, s.hi = ctx, keep
}

// FeedRows is the session's prefill block (ane.FeedRows): Core AI's
// ane.PrefillRows in the exact mode, fastFeedRows in the fast one.
func (s *Session) FeedRows() int { return s.block }

func (s *Session) Position() int { return s.pos }
func (s *Session) Context() int  { return s.ctx }

func (s *Session) checkIDs(ids []int) error {
	if len(ids) == 0 {
		return errors.New("no token ids")
	}
	for i, id := range ids {
		if id < 0 || id >= s.m.cfg.Vocab {
			return fmt.Errorf("token id %d at index %d is out of range [0, %d)", id, i, s.m.cfg.Vocab)
		}
	}
	return nil
}

func (s *Session) checkNotPending(op string) error {
	if s.pending > 0 {
		return fmt.Errorf("%s: a Verify of %d rows awaits Accept", op, s.pending)
	}
	return nil
}

// Feed implements ane.Engine: prefill in blocks of FeedRows rows, each
// computed as one matrix-matrix pass.
func (s *Session) Feed(ids []int) ([]float32, error) {
	if err := s.checkNotPending("Feed"); err != nil {
		return nil, err
	}
	if err := s.checkIDs(ids); err != nil {
		return nil, err
	}
	if err := s.Fit(s.pos + len(ids)); err != nil {
		return nil, err
	}
	for len(ids) > 0 {
		n := min(len(ids), s.block)
		logitRows := 0
		if n == len(ids) {
			logitRows = 1
		}
		s.prefill(ids[:n], logitRows)
		ids = ids[n:]
	}
	return s.s.logits[:s.m.cfg.Vocab], nil
}

// prefill runs one block of at most FeedRows ids (the context
// fitted), keeping the logits of its last logitRows rows (the scratch
// holds a Verify's; the fast mode's benchmark asks for a whole block's).
func (s *Session) prefill(ids []int, logitRows int) {
	if need := logitRows * s.m.cfg.Vocab; len(s.s.logits) < need {
		s.s.logits = make([]float32, need)
	}
	s.forward(ids, false, logitRows)
	s.pos += len(ids)
	s.hi = max(s.hi, s.pos)
}

// Verify implements ane.Engine.
func (s *Session) Verify(tokens []int) (ane.Logits, error) {
	if err := s.checkNotPending("Verify"); err != nil {
		return ane.Logits{}, err
	}
	if len(tokens) > ane.VerifyRows {
		return ane.Logits{}, fmt.Errorf("Verify: %d tokens, at most %d", len(tokens), ane.VerifyRows)
	}
	if err := s.checkIDs(tokens); err != nil {
		return ane.Logits{}, err
	}
	if err := s.Fit(s.pos + len(tokens)); err != nil {
		return ane.Logits{}, err
	}
	n := len(tokens)
	s.forward(tokens, true, n)
	s.pending = n
	s.hi = max(s.hi, s.pos+n)
	V := s.m.cfg.Vocab
	return ane.Logits{Rows: n, Vocab: V, Data: s.s.logits[:n*V]}, nil
}

// Accept implements ane.Engine. DeltaNet state is rolled back to before the
// Verify and the first k rows are replayed from their recorded inputs, so
// rejected rows leave no trace; their history rows lie past the position.
func (s *Session) Accept(k int) error {
	if s.pending == 0 {
		return errors.New("Accept: no Verify to accept")
	}
	if k < 0 || k > s.pending {
		return fmt.Errorf("Accept: %d rows, the Verify had %d", k, s.pending)
	}
	if k < s.pending {
		c := &s.m.cfg
		for i, full := range c.FullAttention {
			if full {
				continue
			}
			copy(s.conv[i], s.savedConv[i])
			copy(s.rec[i], s.savedRec[i])
			kd, vd, nv := c.keyDim(), c.valueDim(), c.LinValueHeads
			for t := 0; t < k; t++ {
				s.convPush(i, s.pRaw[i][t*c.convDim():(t+1)*c.convDim()])
				s.delta = deltaTask{s: s, S: s.rec[i], k: s.pK[i][t*kd : (t+1)*kd], v: s.pV[i][t*vd : (t+1)*vd],
					beta: s.pBeta[i][t*nv : (t+1)*nv], g: s.pG[i][t*nv : (t+1)*nv]}
				s.deltaStep()
			}
		}
	}
	s.pos += k
	s.pending = 0
	return nil
}

// Features implements ane.Engine.
func (s *Session) Features(n int) ([]float32, error) {
	if len(s.m.opts.Taps) == 0 {
		return nil, errors.New("Features: the model has no tap layers configured")
	}
	if n <= 0 || n > s.lastRows {
		return nil, fmt.Errorf("Features: %d rows requested, the last call had %d", n, s.lastRows)
	}
	F := len(s.m.opts.Taps) * s.m.cfg.Hidden
	return s.s.feat[(s.lastRows-n)*F : s.lastRows*F], nil
}

// Fit implements ane.Engine.
func (s *Session) Fit(tokens int) error {
	if tokens <= s.ctx {
		return nil
	}
	ctx, err := s.m.opts.Ladder.Fit(tokens)
	if err != nil {
		return err
	}
	return s.Resize(ctx)
}

// Resize implements ane.Engine.
func (s *Session) Resize(ctx int) error {
	if err := s.checkNotPending("Resize"); err != nil {
		return err
	}
	if !s.m.opts.Ladder.Has(ctx) {
		return fmt.Errorf("Resize: %d is not a context ladder entry %v", ctx, s.m.opts.Ladder)
	}
	if ctx < s.pos {
		return fmt.Errorf("Resize: context %d cannot hold the %d committed positions", ctx, s.pos)
	}
	if ctx != s.ctx {
		s.allocHistory(ctx)
	}
	return nil
}

type snapshot struct {
	m         *Model
	pos, ctx  int
	gen       uint32
	conv, rec [][]float32
}

func (p *snapshot) Position() int { return p.pos }

// Snapshot implements ane.Engine: DeltaNet state is copied; attention
// history is not (it is masked by position), and Restore checks it has not
// been overwritten since.
func (s *Session) Snapshot() (ane.Snapshot, error) {
	if err := s.checkNotPending("Snapshot"); err != nil {
		return nil, err
	}
	p := &snapshot{m: s.m, pos: s.pos, ctx: s.ctx, gen: s.gen,
		conv: make([][]float32, len(s.conv)), rec: make([][]float32, len(s.rec))}
	for i := range s.conv {
		p.conv[i] = append([]float32(nil), s.conv[i]...)
		p.rec[i] = append([]float32(nil), s.rec[i]...)
	}
	return p, nil
}

// Restore implements ane.Engine.
func (s *Session) Restore(snap ane.Snapshot) error {
	p, ok := snap.(*snapshot)
	if !ok || p.m != s.m {
		return errors.New("Restore: snapshot is not from a session of this model")
	}
	if err := s.checkNotPending("Restore"); err != nil {
		return err
	}
	if p.pos > s.hi {
		return fmt.Errorf("Restore: snapshot at position %d, only %d history rows are held", p.pos, s.hi)
	}
	for _, g := range s.rowGen[:p.pos] {
		if g > p.gen {
			return fmt.Errorf("Restore: history before position %d was rewritten after the snapshot", p.pos)
		}
	}
	for i := range s.conv {
		copy(s.conv[i], p.conv[i])
		copy(s.rec[i], p.rec[i])
	}
	s.pos, s.lastRows = p.pos, 0
	return nil
}

// Reset implements ane.Engine.
func (s *Session) Reset() {
	for i := range s.conv {
		clear(s.conv[i])
		clear(s.rec[i])
	}
	s.pos, s.pending, s.lastRows = 0, 0, 0
	if small := s.m.opts.Ladder.Smallest(); s.ctx != small {
		s.allocHistory(small)
	}
}

// Memory implements ane.Engine.
func (s *Session) Memory() ane.MemoryReport {
	r := ane.MemoryReport{Weights: s.m.w.bytes, Embedding: s.m.w.embed.Bytes()}
	for i := range s.kc {
		r.KV += 2*int64(len(s.kc[i])+len(s.vc[i])+len(s.vs[i])) + int64(len(s.v8[i]))
		r.Recurrent += 4 * int64(len(s.conv[i])+len(s.rec[i]))
		r.Scratch += 4 * int64(len(s.savedConv[i])+len(s.savedRec[i])+len(s.pRaw[i])+len(s.pK[i])+
			len(s.pV[i])+len(s.pBeta[i])+len(s.pG[i]))
	}
	r.KV += 4 * int64(len(s.rowGen))
	sc := &s.s
	for _, b := range [][]float32{sc.x, sc.h, sc.hr, sc.y, sc.qkv, sc.z, sc.o, sc.bb, sc.ba, sc.qg, sc.kk, sc.vv,
		sc.att, sc.cos, sc.sin, sc.scores, sc.kvmem, sc.gate, sc.up, sc.logits, sc.feat} {
		r.Scratch += 4 * int64(len(b))
	}
	return r
}
