package coreai

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/bundle"
)

// Feed implements ane.Engine: 64-row prefill blocks while more than 8
// tokens remain and the context has a p64 entry, the rest through the
// verify entry with every row accepted.
func (e *Engine) Feed(ids []int) ([]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkNoVerify("Feed"); err != nil {
		return nil, err
	}
	if err := e.checkIDs(ids); err != nil {
		return nil, err
	}
	if err := e.ready("Feed"); err != nil {
		return nil, err
	}
	if err := e.fit(e.pos + len(ids)); err != nil {
		return nil, err
	}
	for len(ids) > ane.VerifyRows && e.m.hasPrefill(e.ctx) {
		n := min(len(ids), ane.PrefillRows)
		if err := e.prefill(ids[:n]); err != nil {
			return nil, err
		}
		if err := e.sinkFeatures(n); err != nil {
			return nil, err
		}
		ids = ids[n:]
	}
	for len(ids) > 0 {
		n := min(len(ids), ane.VerifyRows)
		if err := e.call(ids[:n]); err != nil {
			return nil, err
		}
		if err := e.sinkFeatures(n); err != nil {
			return nil, err
		}
		e.commitRows(n)
		ids = ids[n:]
	}
	return e.logits[len(e.logits)-e.m.vocab:], nil
}

// Verify implements ane.Engine.
func (e *Engine) Verify(tokens []int) (ane.Logits, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkNoVerify("Verify"); err != nil {
		return ane.Logits{}, err
	}
	if len(tokens) > ane.VerifyRows {
		return ane.Logits{}, fmt.Errorf("Verify: %d tokens, at most %d", len(tokens), ane.VerifyRows)
	}
	if err := e.checkIDs(tokens); err != nil {
		return ane.Logits{}, err
	}
	if err := e.ready("Verify"); err != nil {
		return ane.Logits{}, err
	}
	if err := e.call(tokens); err != nil {
		return ane.Logits{}, err
	}
	e.verify = len(tokens)
	return ane.Logits{Rows: len(tokens), Vocab: e.m.vocab, Data: e.logits}, nil
}

// Accept implements ane.Engine: only the accepted K/V rows are written;
// the DeltaNet rows are committed lazily by the next call.
func (e *Engine) Accept(k int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready("Accept"); err != nil {
		return err
	}
	if e.verify == 0 {
		return errors.New("Accept: no Verify to accept")
	}
	if k < 0 || k > e.verify {
		return fmt.Errorf("Accept: %d rows, the Verify had %d", k, e.verify)
	}
	e.commitRows(k)
	return nil
}

func (e *Engine) commitRows(k int) {
	e.appendRows(kindVerify, k)
	e.pending = k
	e.pos += k
	e.hi = max(e.hi, e.pos)
	e.verify = 0
}

// Features implements ane.Engine from the tap outputs of the last call
// (the tap of a chunk's last layer is that chunk's y). A park keeps them:
// Features of the call before a park works after the resume.
func (e *Engine) Features(n int) ([]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("Features: engine is closed")
	}
	if e.parked != nil {
		if err := e.resume(); err != nil {
			return nil, fmt.Errorf("Features: %w", err)
		}
	}
	return e.features(n)
}

func (e *Engine) features(n int) ([]float32, error) {
	taps := e.m.man.Taps
	if len(taps) == 0 {
		return nil, errors.New("Features: the manifest has no tap layers")
	}
	if n <= 0 || n > e.last.rows {
		return nil, fmt.Errorf("Features: %d rows requested, the last call had %d", n, e.last.rows)
	}
	kind := e.lastKind()
	H := e.m.hidden
	F := len(taps) * H
	out := make([]float32, n*F)
	for k, l := range taps {
		b := e.bufs[e.tapKey(kind, l)]
		if b == nil {
			return nil, fmt.Errorf("Features: no output holds tap layer %d", l)
		}
		first := e.last.rows - n
		for t := 0; t < n; t++ {
			for h := 0; h < H; h++ {
				out[t*F+k*H+h] = half.F16Float(b.F16(0, h, 0, first+t))
			}
		}
	}
	return out, nil
}

func (e *Engine) lastKind() string {
	if e.last.prefill {
		return kindPrefill
	}
	return kindVerify
}

// tapKey is the output buffer holding tap layer l for an entry kind ("" if
// no chunk holds it).
func (e *Engine) tapKey(kind string, l int) string {
	key := ""
	for i, c := range e.m.chunks {
		if l >= c.spec.Layers[0] && l <= c.spec.Layers[1] {
			name := "tap" + strconv.Itoa(l)
			if l == c.spec.Layers[1] {
				name = "y"
			}
			key = e.outKey(kind, i, name)
		}
	}
	return key
}

// Fit implements ane.Engine.
func (e *Engine) Fit(tokens int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready("Fit"); err != nil {
		return err
	}
	return e.fit(tokens)
}

func (e *Engine) fit(tokens int) error {
	if tokens <= e.m.kvLen(e.ctx) {
		return nil
	}
	for _, c := range e.m.ladder {
		if e.m.kvLen(c) >= tokens {
			return e.resizeTo(c)
		}
	}
	return fmt.Errorf("%d positions exceed the largest context entry (%d holds %d)", tokens, e.m.ladder.Largest(), e.m.kvLen(e.m.ladder.Largest()))
}

// Resize implements ane.Engine.
func (e *Engine) Resize(ctx int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready("Resize"); err != nil {
		return err
	}
	return e.resizeTo(ctx)
}

func (e *Engine) resizeTo(ctx int) error {
	if err := e.checkNoVerify("Resize"); err != nil {
		return err
	}
	if !e.m.ladder.Has(ctx) {
		return fmt.Errorf("Resize: %d is not a context ladder entry %v", ctx, e.m.ladder)
	}
	if e.m.kvLen(ctx) < e.pos {
		return fmt.Errorf("Resize: context %d holds %d rows, %d are committed", ctx, e.m.kvLen(ctx), e.pos)
	}
	if ctx == e.ctx {
		return nil
	}
	return e.resize(ctx)
}

// resize allocates the K/V (and scale) buffers and mask of ctx, copies the
// history prefix, and drops the cached bindings.
func (e *Engine) resize(ctx int) error {
	L := e.m.kvLen(ctx)
	keep := min(e.hi, L)
	nk := map[string]*cai.Buffer{}
	fail := func(err error) error {
		for _, b := range nk {
			e.m.release(b)
		}
		return err
	}
	entry := bundle.EntryName(kindVerify, ctx)
	var mask *cai.Buffer
	for i, c := range e.m.chunks {
		f := c.Fns[entry]
		for _, t := range f.Desc.Inputs {
			switch {
			case t.Name == "mask" && mask == nil:
				b, err := e.m.newBuffer(t)
				if err != nil {
					return fail(err)
				}
				mask = b
				nk["mask"] = b
			case kvName(t.Name):
				key := "c" + strconv.Itoa(i) + "/" + t.Name
				b, err := e.m.newBuffer(t)
				if err != nil {
					return fail(err)
				}
				nk[key] = b
				if t.Name[0] == 'v' && t.Name[1] == 's' || t.Name[0] == 'k' && t.Name[1] == 's' {
					for g := 0; g < int(t.Shape[0]); g++ {
						for p := 0; p < int(t.Shape[1]); p++ {
							b.SetF16(1, g, p) // scales start at 1
						}
					}
				}
				if old := e.kvBufs[key]; old != nil {
					copyRows(b, old, keep, e.m.keysT && t.Name[0] == 'k' && t.Name[1] != 's')
				}
			}
		}
	}
	if mask == nil {
		return fail(fmt.Errorf("coreai: %s has no mask input", entry))
	}
	delete(nk, "mask")
	for _, b := range e.kvBufs {
		e.m.release(b)
	}
	if e.mask != nil {
		e.m.release(e.mask)
	}
	for j := 0; j < int(mask.Shape[1]); j++ {
		mask.SetF16(cai.MaskOff, 0, j)
	}
	e.kvBufs, e.mask, e.maskPos = nk, mask, 0
	e.dropPlans()
	e.ctx, e.hi = ctx, keep
	rg := make([]uint32, L)
	copy(rg, e.rowGen)
	e.rowGen = rg
	return nil
}

// copyRows copies history rows [0, n) between buffers of two lengths:
// (heads, L, …) or, for transposed keys, (heads, dim, L).
func copyRows(dst, src *cai.Buffer, n int, transposed bool) {
	size := dst.DType.Size()
	heads := int(dst.Shape[0])
	if transposed {
		dim := int(dst.Shape[1])
		for g := 0; g < heads; g++ {
			for d := 0; d < dim; d++ {
				copy(dst.Bytes()[dst.Off(g, d, 0):dst.Off(g, d, 0)+n*size], src.Bytes()[src.Off(g, d, 0):])
			}
		}
		return
	}
	for g := 0; g < heads; g++ {
		for p := 0; p < n; p++ {
			if len(dst.Shape) == 2 {
				copy(dst.Bytes()[dst.Off(g, p):dst.Off(g, p)+size], src.Bytes()[src.Off(g, p):])
				continue
			}
			w := int(dst.Shape[2]) * size
			copy(dst.Bytes()[dst.Off(g, p, 0):dst.Off(g, p, 0)+w], src.Bytes()[src.Off(g, p, 0):])
		}
	}
}

type snapshot struct {
	e                 *Engine
	pos, pending, ctx int
	gen               uint32
	state             map[string][]byte
}

func (s *snapshot) Position() int { return s.pos }

// Snapshot implements ane.Engine: the DeltaNet state set in use is copied
// to host memory; K/V is not (it is masked by position). Snapshots stay
// valid across a park and resume.
func (e *Engine) Snapshot() (ane.Snapshot, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkNoVerify("Snapshot"); err != nil {
		return nil, err
	}
	if err := e.ready("Snapshot"); err != nil {
		return nil, err
	}
	s := &snapshot{e: e, pos: e.pos, pending: e.pending, ctx: e.ctx, gen: e.gen, state: map[string][]byte{}}
	for k, b := range e.state[e.par] {
		s.state[k] = append([]byte(nil), b.Bytes()...)
	}
	return s, nil
}

// Restore implements ane.Engine, shrinking the context to the smallest
// entry that holds the snapshot's position.
func (e *Engine) Restore(snap ane.Snapshot) error {
	s, ok := snap.(*snapshot)
	if !ok || s.e != e {
		return errors.New("Restore: snapshot is not from this engine")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkNoVerify("Restore"); err != nil {
		return err
	}
	if err := e.ready("Restore"); err != nil {
		return err
	}
	if s.pos > min(e.hi, e.m.kvLen(e.ctx)) {
		return fmt.Errorf("Restore: snapshot at position %d, only %d history rows are held", s.pos, min(e.hi, e.m.kvLen(e.ctx)))
	}
	for _, g := range e.rowGen[:s.pos] {
		if g > s.gen {
			return fmt.Errorf("Restore: history before position %d was rewritten after the snapshot", s.pos)
		}
	}
	for k, b := range e.state[e.par] {
		copy(b.Bytes(), s.state[k])
	}
	e.pos, e.pending, e.last = s.pos, s.pending, lastCall{}
	// Like the published runtime, move to the smallest entry that holds the
	// restored position; history past it is dropped (a later Restore of a
	// snapshot beyond it is refused). If the smaller buffers cannot be
	// allocated now, the session stays valid at its larger context.
	for _, c := range e.m.ladder {
		if c < e.ctx && e.m.kvLen(c) >= s.pos {
			_ = e.resize(c)
			break
		}
	}
	return nil
}

// Reset implements ane.Engine. A parked engine stays parked, holding an
// empty session (its spill file or host copy is dropped): the next call
// allocates fresh buffers.
func (e *Engine) Reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.reset()
}

func (e *Engine) reset() {
	if e.parked != nil {
		e.discardParked()
		e.parked = &parkRecord{}
		e.pos, e.pending, e.verify, e.hi, e.last = 0, 0, 0, 0, lastCall{}
		e.ctx = e.m.ladder.Smallest()
		e.rowGen = make([]uint32, e.m.kvLen(e.ctx))
		return
	}
	for _, set := range e.state {
		for _, b := range set {
			b.Zero()
		}
	}
	e.pos, e.pending, e.verify, e.hi, e.last = 0, 0, 0, 0, lastCall{}
	clear(e.rowGen)
	if small := e.m.ladder.Smallest(); e.ctx != small {
		// If the smaller buffers cannot be allocated now, the session stays
		// valid at its larger context.
		_ = e.resize(small)
	}
}

// Memory implements ane.Engine: the model's package sizes as weights (see
// Model.Memory: every session of a model reports the same weights and
// embedding, held once), buffer sizes for the rest; a parked session's
// KV, Recurrent and Scratch are zero (see ParkedBytes).
func (e *Engine) Memory() ane.MemoryReport {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.m.Memory()
	for _, b := range e.kvBufs {
		r.KV += int64(len(b.Bytes()))
	}
	if e.mask != nil {
		r.KV += int64(len(e.mask.Bytes()))
	}
	for _, set := range e.state {
		for _, b := range set {
			r.Recurrent += int64(len(b.Bytes()))
		}
	}
	for _, b := range e.bufs {
		r.Scratch += int64(len(b.Bytes()))
	}
	return r
}

// sinkFeatures hands the last call's n rows to FeatureSink (the drafter's
// context) with their positions, before they are committed.
func (e *Engine) sinkFeatures(n int) error {
	if e.FeatureSink == nil || len(e.m.man.Taps) == 0 {
		return nil
	}
	f, err := e.features(n)
	if err != nil {
		return err
	}
	first := e.pos
	if e.last.prefill {
		first -= n // prefill has already advanced the position
	}
	pos := make([]int, n)
	for i := range pos {
		pos[i] = first + i
	}
	return e.FeatureSink(f, pos)
}
