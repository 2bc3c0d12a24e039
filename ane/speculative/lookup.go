package speculative

// LookupDrafter is a prompt-lookup drafter: it proposes the tokens that
// followed the latest earlier occurrence of the last two tokens. It needs
// no model, so any backend can speculate with it (the Core AI smoke test,
// the reference backend without DFlash2 weights); it pays off on
// repetitive text (code, quoting, loops) and proposes nothing otherwise.
//
// It ignores the features it is given but uses AddContext's positions to
// learn which of its drafts were committed; tokens it cannot know (plain
// steps while auto mode pauses drafting, text the caller fed itself) are
// left unknown and never matched or proposed.
type LookupDrafter struct {
	hist   []int // token at each position; unknown = -1
	prompt int   // len of the prompt it was built from (always known)
	last   []int // the proposal not yet settled by AddContext
	pos    int   // its anchor position; -1 when settled
}

// NewLookupDrafter starts from the prompt (the tokens at positions
// 0..len(prompt)-1).
func NewLookupDrafter(prompt []int) *LookupDrafter {
	return &LookupDrafter{hist: append([]int(nil), prompt...), prompt: len(prompt), pos: -1}
}

// AddContext implements Drafter: rows committed right after a proposal are
// its anchor and accepted drafts; any other new position is unknown.
func (d *LookupDrafter) AddContext(_ []float32, positions []int) error {
	for _, p := range positions {
		if p < len(d.hist) {
			continue
		}
		t := -1
		if i := p - d.pos - 1; d.pos >= 0 && i >= 0 && i < len(d.last) {
			t = d.last[i]
		}
		d.put(p, t)
	}
	d.pos = -1
	return nil
}

// Rewind forgets positions ≥ pos, except the prompt's.
func (d *LookupDrafter) Rewind(pos int) {
	d.hist, d.pos = d.hist[:min(len(d.hist), max(pos, d.prompt))], -1
}

// Propose implements Drafter.
func (d *LookupDrafter) Propose(anchor, pos int) (Proposal, error) {
	d.put(pos, anchor)
	d.hist = d.hist[:pos+1]
	d.pos, d.last = pos, d.last[:0]
	if pos < 1 || d.hist[pos-1] < 0 {
		return Proposal{}, nil
	}
	a, b := d.hist[pos-1], d.hist[pos]
	for i := pos - 1; i >= 1; i-- {
		if d.hist[i-1] == a && d.hist[i] == b {
			for j := i + 1; j <= pos && len(d.last) < MaxDrafts && d.hist[j] >= 0; j++ {
				d.last = append(d.last, d.hist[j])
			}
			break
		}
	}
	return Proposal{Tokens: d.last}, nil
}

func (d *LookupDrafter) put(pos, id int) {
	for len(d.hist) <= pos {
		d.hist = append(d.hist, -1)
	}
	d.hist[pos] = id
}
