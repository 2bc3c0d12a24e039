package sample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// pcgStream is the fixed second PCG word: the seed alone picks the run.
const pcgStream = 0x6a09e667f3bcc908

// Sampler draws tokens from logits rows. It keeps scratch buffers between
// calls, so it allocates nothing in steady state and is not safe for
// concurrent use; use one per generation.
type Sampler struct {
	opts    Options
	rng     *rand.Rand
	breaker []bool // indexed by token id

	cands []candidate // the top-k heap, then the candidates by probability
	ids   []int
	probs []float64
	slot  []int32 // token id → candidate index+1 for the current row, else 0
	seen  []bool  // per candidate: already in the output
	match []int   // per candidate: longest repeat it would extend (DRY)
}

type candidate struct {
	id int
	z  float64
}

// New checks opts and returns a sampler seeded with opts.Seed.
func New(opts Options) (*Sampler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	s := &Sampler{opts: o, rng: rand.New(rand.NewPCG(o.Seed, pcgStream))}
	for _, t := range o.DRY.Breakers {
		for t >= len(s.breaker) {
			s.breaker = append(s.breaker, false)
		}
		s.breaker[t] = true
	}
	return s, nil
}

// Options returns the options in effect (defaults resolved).
func (s *Sampler) Options() Options { return s.opts }

// Greedy reports whether the sampler takes the argmax (temperature ≤ 0).
func (s *Sampler) Greedy() bool { return s.opts.Temperature <= 0 }

// ErrNoFiniteLogit is returned when a logits row has no usable value.
var ErrNoFiniteLogit = errors.New("logits row has no finite value (all NaN or -Inf): the engine output is corrupt")

// Dist returns the distribution the next token is drawn from, given the
// logits row and the output so far (history: the emitted tokens, for the
// presence penalty and DRY): candidate ids by descending probability and
// their probabilities, summing to 1. Greedy samplers return the argmax with
// probability 1. An empty result means the row has no finite logit.
//
// The slices belong to the sampler and are valid until its next call.
func (s *Sampler) Dist(logits []float32, history []int) (ids []int, probs []float64) {
	if s.Greedy() {
		best := argmax(logits)
		if best < 0 {
			return nil, nil
		}
		s.ids = append(s.ids[:0], best)
		s.probs = append(s.probs[:0], 1)
		return s.ids, s.probs
	}
	c := s.topK(logits, min(s.opts.TopK, len(logits)))
	if len(c) == 0 {
		return nil, nil
	}
	s.penalise(c, history, len(logits))
	for i := range c {
		c[i].z /= s.opts.Temperature
	}
	slices.SortFunc(c, func(a, b candidate) int {
		switch {
		case a.z > b.z:
			return -1
		case a.z < b.z:
			return 1
		}
		return a.id - b.id
	})
	ids, probs = s.ids[:0], s.probs[:0]
	top := c[0].z
	if math.IsInf(top, -1) {
		return nil, nil
	}
	total := 0.0
	for _, x := range c {
		var p float64
		if math.IsInf(top, 1) { // +Inf logits share all the mass
			if math.IsInf(x.z, 1) {
				p = 1
			}
		} else {
			p = math.Exp(x.z - top)
		}
		ids, probs = append(ids, x.id), append(probs, p)
		total += p
	}
	// top-p: the smallest prefix whose cumulative probability reaches TopP.
	keep, cum := len(probs), 0.0
	for i := range probs {
		probs[i] /= total
		cum += probs[i]
		if cum >= s.opts.TopP && i+1 < keep {
			keep = i + 1
			break
		}
	}
	ids, probs = ids[:keep], probs[:keep]
	kept := 0.0
	for _, p := range probs {
		kept += p
	}
	for i := range probs {
		probs[i] /= kept
	}
	s.ids, s.probs = ids, probs
	return ids, probs
}

// Sample returns the next token: the argmax when greedy, else a draw from Dist.
func (s *Sampler) Sample(logits []float32, history []int) (int, error) {
	ids, probs := s.Dist(logits, history)
	if len(ids) == 0 {
		return 0, fmt.Errorf("sample a row of %d logits: %w", len(logits), ErrNoFiniteLogit)
	}
	if s.Greedy() {
		return ids[0], nil
	}
	return s.Draw(ids, probs), nil
}

// Draw picks one of ids with probability proportional to weights, using
// the sampler's PRNG (inverse CDF of one uniform draw). The weights need not
// sum to 1: the speculative cycle draws from unnormalised residuals.
func (s *Sampler) Draw(ids []int, weights []float64) int {
	total := 0.0
	for _, w := range weights {
		if w > 0 {
			total += w
		}
	}
	u := s.rng.Float64() * total
	acc, last := 0.0, -1
	for i, w := range weights {
		if w <= 0 {
			continue
		}
		acc += w
		last = i
		if u < acc {
			return ids[i]
		}
	}
	if last < 0 { // no mass at all: callers never pass this, but stay in range
		return ids[0]
	}
	return ids[last] // rounding left u ≥ the total
}

// Uniform returns a uniform draw in [0, 1) from the sampler's PRNG (the
// speculative cycle's acceptance test uses the same stream as sampling).
func (s *Sampler) Uniform() float64 { return s.rng.Float64() }

// argmax returns the index of the first largest non-NaN value, or -1.
func argmax(row []float32) int {
	best, top := -1, float32(0)
	for i, v := range row {
		if v > top || (best < 0 && v == v) {
			best, top = i, v
		}
	}
	return best
}

// topK selects the k largest logits (NaN skipped, ties to the lower id)
// with a min-heap, one pass over the row and no full sort.
func (s *Sampler) topK(row []float32, k int) []candidate {
	if cap(s.cands) < k {
		s.cands = make([]candidate, 0, k)
	}
	h := s.cands[:0]
	if k <= 0 {
		return h
	}
	i := 0
	for ; i < len(row) && len(h) < k; i++ {
		if v := row[i]; v == v {
			h = append(h, candidate{i, float64(v)})
		}
	}
	for j := len(h)/2 - 1; j >= 0; j-- {
		siftDown(h, j)
	}
	if len(h) < k {
		s.cands = h
		return h
	}
	worst := float32(h[0].z)
	for ; i < len(row); i++ {
		// Later ids never win a tie, so strictly greater is the whole test
		// (and false for NaN).
		if v := row[i]; v > worst {
			h[0] = candidate{i, float64(v)}
			siftDown(h, 0)
			worst = float32(h[0].z)
		}
	}
	s.cands = h
	return h
}

// worse orders the heap: lower logit first, and among equal logits the
// higher id (it loses the tie).
func worse(a, b candidate) bool { return a.z < b.z || (a.z == b.z && a.id > b.id) }

func siftDown(h []candidate, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// penalise applies the presence penalty and DRY to the candidates' logits.
func (s *Sampler) penalise(c []candidate, history []int, vocab int) {
	presence, dry := s.opts.PresencePenalty != 0, s.dryActive(history)
	if !presence && !dry {
		return
	}
	if len(s.slot) < vocab {
		s.slot = make([]int32, vocab)
	}
	for i, x := range c {
		s.slot[x.id] = int32(i + 1)
	}
	if presence {
		s.seen = slices.Grow(s.seen[:0], len(c))[:len(c)]
		clear(s.seen)
		for _, t := range history {
			if t >= 0 && t < len(s.slot) && s.slot[t] > 0 {
				s.seen[s.slot[t]-1] = true
			}
		}
		for i := range c {
			if s.seen[i] {
				c[i].z -= s.opts.PresencePenalty
			}
		}
	}
	if dry {
		s.match = slices.Grow(s.match[:0], len(c))[:len(c)]
		clear(s.match)
		s.dryMatches(history)
		d := s.opts.DRY
		for i, m := range s.match {
			if m >= d.AllowedLength {
				c[i].z -= d.Multiplier * math.Pow(d.Base, float64(min(m-d.AllowedLength, dryMaxExponent)))
			}
		}
	}
	for _, x := range c {
		s.slot[x.id] = 0
	}
}

func (s *Sampler) dryActive(history []int) bool {
	return s.opts.DRY.Multiplier > 0 && len(history) > s.opts.DRY.AllowedLength
}

func (s *Sampler) isBreaker(t int) bool { return t >= 0 && t < len(s.breaker) && s.breaker[t] }

// dryMatches records, for every candidate that followed an earlier
// occurrence of the output's current suffix, the length of that repeated
// suffix (the published dry_matches): searched over the last Window tokens,
// at most MaxMatch long, never spanning a sequence breaker, and nothing
// when the last token is a breaker.
func (s *Sampler) dryMatches(history []int) {
	d := s.opts.DRY
	w := history[max(0, len(history)-d.Window):]
	n := len(w)
	if n < 2 || s.isBreaker(w[n-1]) {
		return
	}
	last := w[n-1]
	reach := 1 // how many suffix tokens a repeat may cover
	for reach < d.MaxMatch && reach < n && !s.isBreaker(w[n-1-reach]) {
		reach++
	}
	for j := 0; j < n-1; j++ {
		if w[j] != last {
			continue
		}
		next := w[j+1]
		if next < 0 || next >= len(s.slot) || s.slot[next] == 0 {
			continue
		}
		m := 1
		for m < reach && j-m >= 0 && w[j-m] == w[n-1-m] {
			m++
		}
		if c := s.slot[next] - 1; m > s.match[c] {
			s.match[c] = m
		}
	}
}
