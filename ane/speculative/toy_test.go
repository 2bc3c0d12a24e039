package speculative

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// toyTarget is a small deterministic language model: the logits of the
// next token depend on the last two tokens and the position mod 3, through
// a hash. It implements Target with the engine's contract (Verify without
// committing, then exactly one Accept) and refuses anything else, so a
// Speculator that sends an out-of-vocabulary id or commits the wrong rows
// fails the tests.
type toyTarget struct {
	vocab     int
	seed      uint64
	committed []int
	pending   []int
	rows      []float32
	feats     []float32
	ctx       []int

	// work is busy-loop iterations per Verify call (perCall) and per row
	// (perRow), so benchmarks can give the target a realistic cost shape.
	perCall, perRow int
	calls           int
}

func newToyTarget(vocab int, seed uint64) *toyTarget { return &toyTarget{vocab: vocab, seed: seed} }

func mix(h uint64, v int) uint64 {
	h ^= uint64(v) + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ (h >> 31)
}

// logitsAfter writes the toy model's logits for the token after ctx.
func toyLogits(seed uint64, vocab int, ctx []int, out []float32) {
	a, b := -1, -1
	if n := len(ctx); n >= 2 {
		a, b = ctx[n-2], ctx[n-1]
	} else if n == 1 {
		b = ctx[0]
	}
	h := mix(mix(mix(seed, a), b), len(ctx)%3)
	for v := range out[:vocab] {
		u := float32(mix(h, v)>>40) / (1 << 24)
		out[v] = 6*u - 3
	}
}

func (m *toyTarget) Vocab() int { return m.vocab }

// Feed commits a prompt and returns the logits after it.
func (m *toyTarget) Feed(prompt []int) []float32 {
	m.committed = append(m.committed, prompt...)
	row := make([]float32, m.vocab)
	toyLogits(m.seed, m.vocab, m.committed, row)
	return row
}

// promptFeatures is what a prefill hands the drafter.
func (m *toyTarget) promptFeatures() ([]float32, []int) {
	var f []float32
	var pos []int
	for i, t := range m.committed {
		f = append(f, float32(t), float32(i))
		pos = append(pos, i)
	}
	return f, pos
}

func (m *toyTarget) Verify(tokens []int) ([]float32, error) {
	if len(tokens) < 1 || len(tokens) > MaxDrafts+1 {
		return nil, fmt.Errorf("toy verify: %d tokens", len(tokens))
	}
	for _, t := range tokens {
		if t < 0 || t >= m.vocab {
			return nil, fmt.Errorf("toy verify: token %d outside the vocabulary", t)
		}
	}
	m.calls++
	burn(m.perCall + m.perRow*len(tokens))
	m.pending = append(m.pending[:0], tokens...)
	m.rows = m.rows[:0]
	m.ctx = append(m.ctx[:0], m.committed...)
	for _, t := range tokens {
		m.ctx = append(m.ctx, t)
		n := len(m.rows)
		m.rows = append(m.rows, make([]float32, m.vocab)...)
		toyLogits(m.seed, m.vocab, m.ctx, m.rows[n:])
	}
	return m.rows, nil
}

func (m *toyTarget) Features(n int) ([]float32, error) {
	if n < 1 || n > len(m.pending) {
		return nil, fmt.Errorf("toy features: %d rows of %d verified", n, len(m.pending))
	}
	m.feats = m.feats[:0]
	for i, t := range m.pending[:n] {
		m.feats = append(m.feats, float32(t), float32(len(m.committed)+i))
	}
	return m.feats, nil
}

func (m *toyTarget) Accept(n int) error {
	if n < 1 || n > len(m.pending) {
		return fmt.Errorf("toy accept: %d rows of %d verified", n, len(m.pending))
	}
	m.committed = append(m.committed, m.pending[:n]...)
	m.pending = m.pending[:0]
	return nil
}

var burnSink uint64

// burned counts every busy-loop iteration, so benchmarks can also report
// the speedup their cost model predicts, free of timing noise.
var burned int

// burn spends CPU time proportional to n without sleeping.
func burn(n int) {
	burned += n
	h := burnSink
	for i := 0; i < n; i++ {
		h = h*6364136223846793005 + 1442695040888963407
	}
	burnSink = h
}

// contextDrafter holds the token history it learns from AddContext (the
// toy features are (token, position) pairs).
type contextDrafter struct {
	ctx  []int
	work int
}

func (d *contextDrafter) AddContext(f []float32, positions []int) error {
	if len(f) != 2*len(positions) {
		return fmt.Errorf("%d feature values for %d positions", len(f), len(positions))
	}
	for i, p := range positions {
		if int(f[2*i+1]) != p {
			return fmt.Errorf("feature row %d is for position %d, given as %d", i, int(f[2*i+1]), p)
		}
		for len(d.ctx) <= p {
			d.ctx = append(d.ctx, 0)
		}
		d.ctx[p] = int(f[2*i])
	}
	return nil
}

// history is the context up to pos followed by the anchor.
func (d *contextDrafter) history(anchor, pos int) []int {
	h := make([]int, pos, pos+MaxDrafts+1)
	copy(h, d.ctx[:min(pos, len(d.ctx))])
	return append(h, anchor)
}

// oracleDrafter proposes the target's own greedy continuation, each draft
// right with probability hit and otherwise a different token.
type oracleDrafter struct {
	contextDrafter
	t   *toyTarget
	hit float64
	rng *rand.Rand
}

func (d *oracleDrafter) Propose(anchor, pos int) (Proposal, error) {
	burn(d.work)
	h := d.history(anchor, pos)
	row := make([]float32, d.t.vocab)
	var drafts []int
	for range MaxDrafts {
		toyLogits(d.t.seed, d.t.vocab, h, row)
		g := argmaxRow(row)
		if d.rng.Float64() >= d.hit {
			g = (g + 1 + d.rng.IntN(d.t.vocab-1)) % d.t.vocab
		}
		drafts = append(drafts, g)
		h = append(h, g)
	}
	return Proposal{Tokens: drafts}, nil
}

// randomDrafter proposes uniform random tokens.
type randomDrafter struct {
	contextDrafter
	vocab int
	rng   *rand.Rand
}

func (d *randomDrafter) Propose(anchor, pos int) (Proposal, error) {
	drafts := make([]int, MaxDrafts)
	for i := range drafts {
		drafts[i] = d.rng.IntN(d.vocab)
	}
	return Proposal{Tokens: drafts}, nil
}

// badIDDrafter mixes good guesses with out-of-vocabulary and negative ids
// and sometimes proposes fewer than seven tokens.
type badIDDrafter struct {
	oracleDrafter
}

func (d *badIDDrafter) Propose(anchor, pos int) (Proposal, error) {
	p, _ := d.oracleDrafter.Propose(anchor, pos)
	for i := range p.Tokens {
		switch d.rng.IntN(6) {
		case 0:
			p.Tokens[i] = d.t.vocab + d.rng.IntN(1000)
		case 1:
			p.Tokens[i] = -1 - d.rng.IntN(1000)
		}
	}
	p.Tokens = p.Tokens[:d.rng.IntN(MaxDrafts+1)]
	return p, nil
}

// qDrafter samples each draft from its own distribution q (a softened,
// shifted copy of the target's) and reports q, for the min(1, p/q) rule.
// With lie set it proposes the greedy token but claims q(d) is tiny: the
// deliberately biased variant.
type qDrafter struct {
	contextDrafter
	t   *toyTarget
	rng *rand.Rand
	lie bool
}

func (d *qDrafter) Propose(anchor, pos int) (Proposal, error) {
	h := d.history(anchor, pos)
	row := make([]float32, d.t.vocab)
	var p Proposal
	for range MaxDrafts {
		toyLogits(d.t.seed, d.t.vocab, h, row)
		q := Dist{IDs: make([]int, d.t.vocab), Probs: make([]float64, d.t.vocab)}
		total := 0.0
		for v := range row {
			q.IDs[v] = v
			q.Probs[v] = math.Exp(float64(row[(v+1)%d.t.vocab]+row[v]) / 2)
			total += q.Probs[v]
		}
		for v := range q.Probs {
			q.Probs[v] /= total
		}
		var tok int
		if d.lie {
			tok = argmaxRow(row)
			for v := range q.Probs {
				q.Probs[v] = 0.99 / float64(d.t.vocab-1)
			}
			q.Probs[tok] = 0.01
		} else {
			u, acc := d.rng.Float64(), 0.0
			tok = d.t.vocab - 1
			for v, pv := range q.Probs {
				if acc += pv; u < acc {
					tok = v
					break
				}
			}
		}
		p.Tokens = append(p.Tokens, tok)
		p.Q = append(p.Q, q)
		h = append(h, tok)
	}
	return p, nil
}

func argmaxRow(row []float32) int {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return best
}

// failingDrafter and friends exercise the error paths.
type scriptedDrafter struct {
	contextDrafter
	prop Proposal
	err  error
}

func (d *scriptedDrafter) Propose(anchor, pos int) (Proposal, error) { return d.prop, d.err }

var errScripted = errors.New("scripted failure")
