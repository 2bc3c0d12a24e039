package generate

import (
	"fmt"
	"math"

	"github.com/forgedaemon/forged/ane/grammar"
)

// constraint applies a request's grammar to the output (it implements
// speculative.Constraint). With thinking on it waits for the reasoning to
// close (the </think> token) and constrains the answer after it; before
// that every token is free. Stop tokens are allowed exactly when the
// grammar is in an accepting state.
type constraint struct {
	m        *grammar.Matcher
	mask     grammar.Mask
	stops    map[int]bool
	thinkEnd int // -1: active from the start
	active   bool
	// hist: what each accepted token did, for Rollback.
	hist []step
}

type step uint8

const (
	stepFree     step = iota // before the constraint starts
	stepActivate             // the token that started it (</think>)
	stepGrammar              // accepted by the grammar
	stepStop                 // a stop token at an accepting state
)

func newConstraint(g *grammar.Grammar, v *grammar.Vocab, stops []int, thinkEnd int) *constraint {
	c := &constraint{m: grammar.NewMatcher(g, v), mask: grammar.NewMask(v.Size()), stops: map[int]bool{}, thinkEnd: thinkEnd, active: thinkEnd < 0}
	for _, s := range stops {
		c.stops[s] = true
	}
	return c
}

// Mask implements speculative.Constraint.
func (c *constraint) Mask(row []float32) {
	if !c.active {
		return
	}
	c.m.Mask(c.mask)
	accepting := c.m.Accepting()
	inf := float32(math.Inf(-1))
	for w := 0; w*64 < len(row); w++ {
		var bits uint64
		if w < len(c.mask) {
			bits = c.mask[w]
		}
		if bits == ^uint64(0) {
			continue
		}
		for i := w * 64; i < min(len(row), w*64+64); i++ {
			if bits&(1<<(uint(i)&63)) == 0 && !(accepting && c.stops[i]) {
				row[i] = inf
			}
		}
	}
}

// Accept implements speculative.Constraint.
func (c *constraint) Accept(id int) error {
	switch {
	case !c.active:
		if id == c.thinkEnd {
			c.active = true
			c.hist = append(c.hist, stepActivate)
		} else {
			c.hist = append(c.hist, stepFree)
		}
	case c.stops[id]:
		if !c.m.Accepting() {
			return fmt.Errorf("%w: stop token %d before the output is complete", grammar.ErrRejected, id)
		}
		c.hist = append(c.hist, stepStop)
	default:
		if err := c.m.Accept(id); err != nil {
			return err
		}
		c.hist = append(c.hist, stepGrammar)
	}
	return nil
}

// Rollback implements speculative.Constraint.
func (c *constraint) Rollback(n int) error {
	if n < 0 || n > len(c.hist) {
		return fmt.Errorf("generate: constraint cannot roll back %d of %d tokens", n, len(c.hist))
	}
	for ; n > 0; n-- {
		s := c.hist[len(c.hist)-1]
		c.hist = c.hist[:len(c.hist)-1]
		switch s {
		case stepActivate:
			c.active = false
		case stepGrammar:
			if err := c.m.Rollback(1); err != nil {
				return err
			}
		}
	}
	return nil
}
