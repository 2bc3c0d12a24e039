// Package speculative runs the speculative decoding cycle of the published ANEMLL
// Forge runtime (draft_cycle in Anemll/anemll-forge scripts/qwen38_server.py)
// over small interfaces: a drafter proposes seven tokens after the anchor, the
// target verifies anchor + drafts in one call, the longest acceptable prefix is
// kept and one more token is taken from the target, so every cycle yields 1..8
// tokens for one target call.
//
// Greedy acceptance keeps the output identical to greedy plain decoding;
// sampled acceptance is rejection sampling that keeps the output
// distribution identical to sampling the target alone (docs/SAMPLING.md
// has the proof).
package speculative

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/forgedaemon/forged/ane/sample"
)

// MaxDrafts is the number of tokens a drafter proposes per cycle: with the
// anchor they fill the target's T = 8 verify call.
const MaxDrafts = 7

// Target is the model being decoded, as the speculative cycle sees it.
type Target interface {
	// Vocab is the width of a logits row.
	Vocab() int
	// Verify runs tokens (the anchor, then drafts) from the current position
	// without committing them and returns len(tokens) rows of Vocab logits,
	// row-major; row i predicts the token after tokens[i]. The slice may be
	// reused by the next call.
	Verify(tokens []int) ([]float32, error)
	// Features returns the drafter's input features for the first n rows of
	// the last Verify (n rows of equal width, concatenated).
	Features(n int) ([]float32, error)
	// Accept commits the first n rows of the last Verify.
	Accept(n int) error
}

// Drafter proposes continuations.
type Drafter interface {
	// Propose returns up to MaxDrafts tokens to follow anchor, which sits at
	// position pos (the anchor is not yet in the target).
	Propose(anchor, pos int) (Proposal, error)
	// AddContext gives the drafter the target's features of committed
	// tokens at the given positions.
	AddContext(features []float32, positions []int) error
}

// Proposal is one cycle's drafts.
type Proposal struct {
	Tokens []int
	// Q optionally holds, for each draft, the distribution the drafter
	// sampled it from (Q[i] conditioned on Tokens[:i]). With it a draft is
	// accepted with probability min(1, p/q); without it, with probability p.
	Q []Dist
}

// Dist is a sparse probability distribution over token ids.
type Dist struct {
	IDs   []int
	Probs []float64
}

// Speculator drives generation over one Target, one optional Drafter and
// one Sampler. It is not safe for concurrent use.
type Speculator struct {
	target  Target
	drafter Drafter
	sampler *sample.Sampler
	stops   map[int]bool
	policy  *policy
	stats   Stats

	vocab     int
	tokens    []int // anchor + drafts sent to Verify
	hist      []int // output + accepted drafts: the history row k is sampled with
	out       []int // the tokens a Step returns
	positions []int
	slot      []int32   // token id → index+1 in the target's candidate list
	qAt       []float64 // drafter probability at each target candidate
	resid     []float64

	constraint Constraint
	maskBuf    []float32
}

// New returns a Speculator. drafter may be nil (plain decoding); stop
// tokens come from the sampler's options (a drafted stop token ends a cycle).
func New(target Target, drafter Drafter, sampler *sample.Sampler, cfg Config) (*Speculator, error) {
	if target == nil || sampler == nil {
		return nil, errors.New("speculative decoder: target and sampler are required")
	}
	if v := target.Vocab(); v <= 0 {
		return nil, fmt.Errorf("speculative decoder: target vocabulary size %d is not positive", v)
	}
	pol, err := newPolicy(cfg, drafter != nil)
	if err != nil {
		return nil, err
	}
	if pol.neverDrafts() {
		drafter = nil // do not spend Features/AddContext on it
	}
	sp := &Speculator{target: target, drafter: drafter, sampler: sampler, policy: pol,
		vocab: target.Vocab(), stops: map[int]bool{}}
	for _, t := range sampler.Options().StopTokens {
		sp.stops[t] = true
	}
	return sp, nil
}

// Stats returns the counters so far.
func (sp *Speculator) Stats() Stats {
	s := sp.stats
	s.AutoPauses = sp.policy.pauses
	return s
}

// Drafting reports whether the next Step will draft.
func (sp *Speculator) Drafting() bool { return sp.policy.drafting() }

// Step advances by one target call from anchor, the last output token (not
// yet in the target), at position pos; history is the output so far,
// ending with anchor. It returns the new tokens, the last of which is the
// next anchor; the target has committed anchor and all but that last token,
// so the next position is pos+len(result). The slice is reused by the next Step.
func (sp *Speculator) Step(anchor, pos int, history []int) ([]int, error) {
	if anchor < 0 || anchor >= sp.vocab {
		return nil, fmt.Errorf("anchor token %d is outside the vocabulary [0, %d)", anchor, sp.vocab)
	}
	if sp.policy.drafting() {
		return sp.cycle(anchor, pos, history)
	}
	return sp.plain(anchor, pos, history)
}

// plain is one token of ordinary decoding; with a drafter present (auto
// mode, drafting paused) its context is still kept current, so a retry
// drafts from the whole history.
func (sp *Speculator) plain(anchor, pos int, history []int) ([]int, error) {
	sp.tokens = append(sp.tokens[:0], anchor)
	rows, err := sp.verify()
	if err != nil {
		return nil, err
	}
	next, err := sp.sampler.Sample(sp.masked(rows[:sp.vocab]), history)
	if err != nil {
		return nil, err
	}
	if err := sp.accept(next); err != nil {
		return nil, err
	}
	if err := sp.commit(pos, 1); err != nil {
		return nil, err
	}
	sp.policy.plainStep()
	sp.stats.PlainSteps++
	sp.stats.Tokens++
	sp.out = append(sp.out[:0], next)
	return sp.out, nil
}

// cycle is one speculative cycle (draft_cycle, scripts/qwen38_server.py).
func (sp *Speculator) cycle(anchor, pos int, history []int) ([]int, error) {
	prop, err := sp.drafter.Propose(anchor, pos)
	if err != nil {
		return nil, fmt.Errorf("drafter propose at position %d: %w", pos, err)
	}
	if len(prop.Tokens) > MaxDrafts {
		return nil, fmt.Errorf("drafter proposed %d tokens, at most %d fit a verify call", len(prop.Tokens), MaxDrafts)
	}
	if prop.Q != nil && len(prop.Q) != len(prop.Tokens) {
		return nil, fmt.Errorf("drafter gave %d draft distributions for %d drafts", len(prop.Q), len(prop.Tokens))
	}
	// A draft outside the vocabulary can never be accepted, so neither can
	// anything after it: verify only the drafts before it.
	drafts := prop.Tokens
	for i, d := range drafts {
		if d < 0 || d >= sp.vocab {
			drafts = drafts[:i]
			sp.stats.InvalidDrafts++
			break
		}
	}
	// Drafts the constraint rejects are cut; the first of them is still
	// judged against its (masked) row below, which rejects it.
	valid, err := sp.cutDrafts(drafts)
	if err != nil {
		return nil, err
	}
	cut := -1
	if len(valid) < len(drafts) {
		cut = drafts[len(valid)]
	}
	drafts = valid
	sp.tokens = append(append(sp.tokens[:0], anchor), drafts...)
	rows, err := sp.verify()
	if err != nil {
		return nil, err
	}
	sp.hist = append(sp.hist[:0], history...)
	k, next, decided := 0, 0, false
	for k < len(drafts) {
		d := drafts[k]
		var q *Dist
		if prop.Q != nil {
			q = &prop.Q[k]
		}
		ok, resample, err := sp.judge(sp.masked(rows[k*sp.vocab:(k+1)*sp.vocab]), d, q)
		if err != nil {
			return nil, err
		}
		if !ok {
			next, decided = resample, true
			break
		}
		if sp.stops[d] { // an accepted stop token ends the cycle, uncommitted
			next, decided = d, true
			break
		}
		if err := sp.accept(d); err != nil {
			return nil, err
		}
		sp.hist = append(sp.hist, d)
		k++
	}
	if !decided && cut >= 0 {
		// The draft the constraint cut, judged against its masked row: it is
		// rejected (its probability there is 0), and the replacement is drawn
		// as if it had been verified.
		var q *Dist
		if prop.Q != nil {
			q = &prop.Q[k]
		}
		ok, resample, err := sp.judge(sp.masked(rows[k*sp.vocab:(k+1)*sp.vocab]), cut, q)
		if err != nil {
			return nil, err
		}
		if ok {
			return nil, fmt.Errorf("speculative: the constraint rejected draft %d but its masked row accepted it", cut)
		}
		next, decided = resample, true
	}
	if !decided { // every verified draft accepted: the bonus token
		next, err = sp.sampler.Sample(sp.masked(rows[k*sp.vocab:(k+1)*sp.vocab]), sp.hist)
		if err != nil {
			return nil, err
		}
	}
	if err := sp.accept(next); err != nil {
		return nil, err
	}
	if err := sp.commit(pos, k+1); err != nil {
		return nil, err
	}
	sp.policy.cycle(k)
	sp.stats.record(k, len(prop.Tokens))
	sp.out = append(append(sp.out[:0], drafts[:k]...), next)
	return sp.out, nil
}

// verify calls the target on sp.tokens and checks the shape of its answer.
func (sp *Speculator) verify() ([]float32, error) {
	rows, err := sp.target.Verify(sp.tokens)
	if err != nil {
		return nil, fmt.Errorf("target verify of %d tokens: %w", len(sp.tokens), err)
	}
	if want := len(sp.tokens) * sp.vocab; len(rows) != want {
		return nil, fmt.Errorf("target verify of %d tokens returned %d logits, want %d", len(sp.tokens), len(rows), want)
	}
	return rows, nil
}

// commit feeds the drafter the features of the first n verified rows (when
// there is a drafter) and commits them in the target.
func (sp *Speculator) commit(pos, n int) error {
	if sp.drafter != nil {
		f, err := sp.target.Features(n)
		if err != nil {
			return fmt.Errorf("target features of %d rows: %w", n, err)
		}
		sp.positions = sp.positions[:0]
		for i := range n {
			sp.positions = append(sp.positions, pos+i)
		}
		if err := sp.drafter.AddContext(f, sp.positions); err != nil {
			return fmt.Errorf("drafter add_context at positions %d..%d: %w", pos, pos+n-1, err)
		}
	}
	if err := sp.target.Accept(n); err != nil {
		return fmt.Errorf("target accept %d rows: %w", n, err)
	}
	return nil
}

// judge decides draft d against one verified row. When it rejects d it
// also returns the replacement token: the argmax (greedy) or a draw from
// the residual distribution.
func (sp *Speculator) judge(row []float32, d int, q *Dist) (ok bool, next int, err error) {
	ids, probs := sp.sampler.Dist(row, sp.hist)
	if len(ids) == 0 {
		return false, 0, fmt.Errorf("verify row: %w", sample.ErrNoFiniteLogit)
	}
	if sp.sampler.Greedy() {
		return ids[0] == d, ids[0], nil
	}
	at := -1 // d's index among the target's candidates
	for i, id := range ids {
		if id == d {
			at = i
			break
		}
	}
	if qd, qAt := sp.draftProbs(ids, d, q); qd > 0 {
		// Speculative sampling: accept with min(1, p/q); on rejection draw
		// from max(0, p − q), renormalised.
		p := 0.0
		if at >= 0 {
			p = probs[at]
		}
		if sp.sampler.Uniform() < math.Min(1, p/qd) {
			return true, 0, nil
		}
		sp.resid = sp.resid[:0]
		total := 0.0
		for i, pi := range probs {
			r := max(0, pi-qAt[i])
			sp.resid = append(sp.resid, r)
			total += r
		}
		if total > 0 {
			return false, sp.sampler.Draw(ids, sp.resid), nil
		}
		// p ≤ q everywhere yet d was rejected: only rounding gets here.
		return false, sp.sampler.Draw(ids, probs), nil
	}
	// The published rule: accept with probability p(d); on rejection draw
	// from p with d's mass removed. No uniform is spent on a draft p excludes.
	if at < 0 {
		return false, sp.sampler.Draw(ids, probs), nil
	}
	if sp.sampler.Uniform() < probs[at] {
		return true, 0, nil
	}
	sp.resid = append(sp.resid[:0], probs...)
	sp.resid[at] = 0
	return false, sp.sampler.Draw(ids, sp.resid), nil
}

// draftProbs looks up the drafter's q(d) and q at each target candidate.
// qd is 0 when there is no usable q (absent, not a distribution summing to
// 1, or q(d) = 0), which selects the token-only rule: that rule is exact for
// drafts chosen any way at all, so a drafter with a broken q cannot bias
// the output through this path.
func (sp *Speculator) draftProbs(ids []int, d int, q *Dist) (qd float64, qAt []float64) {
	if q == nil || len(q.IDs) != len(q.Probs) {
		return 0, nil
	}
	if len(sp.slot) < sp.vocab {
		sp.slot = make([]int32, sp.vocab)
	}
	for i, id := range ids {
		sp.slot[id] = int32(i + 1)
	}
	sp.qAt = slices.Grow(sp.qAt[:0], len(ids))[:len(ids)]
	clear(sp.qAt)
	valid, total := true, 0.0
	for i, id := range q.IDs {
		p := q.Probs[i]
		if math.IsNaN(p) || p < 0 || p > 1 {
			valid = false
			break
		}
		total += p
		if id == d {
			qd += p
		}
		if id >= 0 && id < sp.vocab && sp.slot[id] > 0 {
			sp.qAt[sp.slot[id]-1] += p
		}
	}
	for _, id := range ids {
		sp.slot[id] = 0
	}
	if !valid || math.Abs(total-1) > 1e-6 || !(qd > 0 && qd <= 1) {
		return 0, nil
	}
	return qd, sp.qAt
}
