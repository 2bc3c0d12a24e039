// Package dflash is the CPU reference of the DFlash2 block drafter
// (Anemll/anemll-forge scripts/dflash2_drafter_ref.py,
// scripts/dflash2_coreai_drafter.py): five layers that read the target's
// tap-layer features through a ring of keys and values by position, draft a
// block of anchor + 7 mask rows in one non-causal pass, score the 7 rows with
// the target's own LM head and pick the drafts with the candidate selector.
// Drafter implements speculative.Drafter; Net, Ring and Selector are its parts,
// shared with the Core AI driver. docs/DRAFTER.md records every convention.
package dflash

import (
	"fmt"

	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/speculative"
)

// Drafter is one session's drafter on the CPU: the network (weights shared
// read-only) plus its own ring of float32 keys and values. It is not safe
// for concurrent use.
type Drafter struct {
	*Net
	ring         *Ring
	ringK, ringV [][]float32 // per layer, slot-major; grown with the ring
}

// New builds a drafter from loaded weights over its target. threads is the
// matrix worker count (≤ 0: GOMAXPROCS). Drafters built from the same
// Weights share them (one LoadWeights, one New per session).
func New(w *Weights, target TargetWeights, threads int) (*Drafter, error) {
	n, err := NewNet(w, target, threads)
	if err != nil {
		return nil, err
	}
	L := n.cfg.NumHiddenLayers
	return &Drafter{Net: n, ring: NewRing(n.cfg.SlidingWindow, n.feat),
		ringK: make([][]float32, L), ringV: make([][]float32, L)}, nil
}

// Load reads the drafter in dir and builds it over target.
func Load(dir string, target TargetWeights, threads int) (*Drafter, error) {
	w, err := LoadWeights(dir)
	if err != nil {
		return nil, err
	}
	return New(w, target, threads)
}

// Reset empties the ring and the pending rows (a new session, or a target
// restored to an earlier position).
func (d *Drafter) Reset() { d.ring.Reset() }

// Rewind forgets the context at positions ≥ pos (see Ring.Rewind).
func (d *Drafter) Rewind(pos int) { d.ring.Rewind(pos) }

// AddContext queues the target's features of committed rows (positions
// strictly increasing, after every earlier row); while more than
// drafter.PendingRows wait, they are flushed into the ring in drafter.FlushRows blocks.
func (d *Drafter) AddContext(features []float32, positions []int) error {
	if err := d.ring.Add(features, positions); err != nil {
		return err
	}
	for d.ring.Pending() > drafter.PendingRows {
		d.flush(min(drafter.FlushRows, d.ring.Pending()))
	}
	return nil
}

// flush projects the first n pending rows into every layer's ring.
func (d *Drafter) flush(n int) {
	if n == 0 {
		return
	}
	f, pos := d.ring.Rows(n)
	k, v := d.ContextKV(f, n, d.RopeAt(pos))
	slots := d.ring.Commit(n)
	size := d.ring.Slots() * d.kvDim
	for l := range d.ringK {
		for len(d.ringK[l]) < size {
			d.ringK[l] = append(d.ringK[l], make([]float32, size-len(d.ringK[l]))...)
			d.ringV[l] = append(d.ringV[l], make([]float32, size-len(d.ringV[l]))...)
		}
		for t, s := range slots {
			copy(d.ringK[l][s*d.kvDim:(s+1)*d.kvDim], k[l][t*d.kvDim:])
			copy(d.ringV[l][s*d.kvDim:(s+1)*d.kvDim], v[l][t*d.kvDim:])
		}
	}
}

// Propose drafts the tokens after anchor, which sits at position pos (not
// yet in the target): the pending context rows go into the ring, the block
// [anchor, mask × (block−1)] runs through the layers, the target's head
// scores rows 1.., and the selector walk picks one token per row.
func (d *Drafter) Propose(anchor, pos int) (speculative.Proposal, error) {
	if anchor < 0 || anchor >= d.cfg.VocabSize {
		return speculative.Proposal{}, fmt.Errorf("drafter: anchor token %d is outside the vocabulary [0, %d)", anchor, d.cfg.VocabSize)
	}
	if pos <= d.ring.Last() {
		return speculative.Proposal{}, fmt.Errorf("drafter: anchor position %d is not after the last context position %d", pos, d.ring.Last())
	}
	// The draft call projects the ≤ 8 pending rows alongside the block; a
	// softmax over a set does not depend on where its keys are stored, so
	// writing them to the ring first is the same computation.
	d.flush(d.ring.Pending())
	h := d.forward(anchor, pos)
	rows := d.block - 1
	return speculative.Proposal{Tokens: d.sel.Walk(anchor, d.Logits(h), d.Project(h[d.cfg.HiddenSize:], rows), rows)}, nil
}

// forward returns the final-normed hidden rows of the block at pos.
func (d *Drafter) forward(anchor, pos int) []float32 {
	pos8 := make([]int, d.block)
	for t := range pos8 {
		pos8[t] = pos + t
	}
	keys := Keys{N: d.ring.Slots(), K: d.ringK, V: d.ringV, Bias: func(t, s int) float64 {
		if d.ring.SlotVisible(s, pos8[t]) {
			return 0
		}
		return negInf
	}}
	return d.Block(d.BlockInput(anchor), d.RopeAt(pos8), keys)
}
