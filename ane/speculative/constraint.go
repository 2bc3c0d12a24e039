package speculative

import "fmt"

// Constraint restricts which tokens may be output (a grammar): every row a
// token is drawn or judged from is masked first, and every output token is
// accepted into it. Speculative decoding stays exact under it: drafts the
// constraint rejects are cut before verification, each verified row is
// masked with the state after the drafts before it, and a cut draft is
// still judged (and so rejected) against its masked row, which keeps
// sampled output distributed as masked plain decoding and greedy output
// identical to it.
type Constraint interface {
	// Mask sets the logits of the tokens not allowed next to -Inf, in place.
	Mask(row []float32)
	// Accept records that id was output; an error means id is not allowed.
	Accept(id int) error
	// Rollback forgets the last n accepted tokens.
	Rollback(n int) error
}

// SetConstraint makes every later Step obey c (nil: none). The anchor
// passed to Step must already have been accepted by c.
func (sp *Speculator) SetConstraint(c Constraint) { sp.constraint = c }

// masked returns row, masked by the constraint (in a copy: the target's
// buffer is left alone).
func (sp *Speculator) masked(row []float32) []float32 {
	if sp.constraint == nil {
		return row
	}
	sp.maskBuf = append(sp.maskBuf[:0], row...)
	sp.constraint.Mask(sp.maskBuf)
	return sp.maskBuf
}

// cutDrafts keeps the drafts the constraint allows in sequence; it leaves
// the constraint where it was.
func (sp *Speculator) cutDrafts(drafts []int) ([]int, error) {
	if sp.constraint == nil {
		return drafts, nil
	}
	n := 0
	for n < len(drafts) && sp.constraint.Accept(drafts[n]) == nil {
		n++
	}
	if err := sp.constraint.Rollback(n); err != nil {
		return nil, fmt.Errorf("constraint rollback: %w", err)
	}
	if n < len(drafts) {
		sp.stats.ConstraintCuts++
	}
	return drafts[:n], nil
}

// accept records an output token in the constraint.
func (sp *Speculator) accept(id int) error {
	if sp.constraint == nil {
		return nil
	}
	if err := sp.constraint.Accept(id); err != nil {
		return fmt.Errorf("constraint: output token %d: %w", id, err)
	}
	return nil
}
