package dflash

import "fmt"

// Ring is the host-side bookkeeping of the drafter's context (CoreAIDrafter in Anemll/anemll-forge
// scripts/dflash2_coreai_drafter.py): the
// committed target rows waiting to be projected, and the position each
// ring slot holds (slot = position mod W). It stores no keys or values —
// the CPU drafter keeps them in Go slices, the Core AI driver in bridge
// buffers — so both share one set of rules.
type Ring struct {
	window  int
	width   int   // feature values per row
	slotPos []int // −1: empty; grows on demand up to window slots
	pendF   []float32
	pendPos []int
	last    int // last position added (−1: none)
}

// NewRing starts an empty ring of window slots for rows of width features.
func NewRing(window, width int) *Ring {
	return &Ring{window: window, width: width, last: -1}
}

// Add queues the features of committed rows. Positions must increase
// strictly, after every earlier row; a width mismatch, a rewind or a
// non-finite value is refused and changes nothing.
func (r *Ring) Add(features []float32, positions []int) error {
	if len(features) != len(positions)*r.width {
		return fmt.Errorf("drafter context: %d feature values for %d rows, want %d per row (taps × hidden)",
			len(features), len(positions), r.width)
	}
	last := r.last
	for i, p := range positions {
		if p <= last {
			return fmt.Errorf("drafter context: row %d is at position %d, not after position %d (Reset the drafter to rewind)", i, p, last)
		}
		last = p
	}
	for _, v := range features {
		if v-v != 0 { // NaN or ±Inf
			return fmt.Errorf("drafter context: feature value %v is not finite", v)
		}
	}
	r.pendF = append(r.pendF, features...)
	r.pendPos = append(r.pendPos, positions...)
	r.last = last
	return nil
}

// Pending is how many rows wait to be projected.
func (r *Ring) Pending() int { return len(r.pendPos) }

// Rows returns the first n pending rows' features and positions (views
// valid until the next call that changes the ring).
func (r *Ring) Rows(n int) ([]float32, []int) { return r.pendF[:n*r.width], r.pendPos[:n] }

// Commit records that the first n pending rows are now stored in their
// slots, drops them from the pending rows, and returns the slots.
func (r *Ring) Commit(n int) []int {
	slots := make([]int, n)
	for i, p := range r.pendPos[:n] {
		s := p % r.window
		for len(r.slotPos) <= s {
			r.slotPos = append(r.slotPos, -1)
		}
		r.slotPos[s], slots[i] = p, s
	}
	r.pendF = append(r.pendF[:0], r.pendF[n*r.width:]...)
	r.pendPos = append(r.pendPos[:0], r.pendPos[n:]...)
	return slots
}

// Slots is how many slots have been used so far (at most the window).
func (r *Ring) Slots() int { return len(r.slotPos) }

// Visible reports whether a query at position q sees the key at position
// k: k holds a row (k ≥ 0) within the sliding window, |q − k| < W.
func (r *Ring) Visible(q, k int) bool {
	d := q - k
	return k >= 0 && d < r.window && -d < r.window
}

// SlotVisible reports whether slot s holds a row a query at q sees.
func (r *Ring) SlotVisible(s, q int) bool { return s < len(r.slotPos) && r.Visible(q, r.slotPos[s]) }

// Last is the last position added (−1: none).
func (r *Ring) Last() int { return r.last }

// Reset empties the ring and the pending rows.
func (r *Ring) Reset() {
	r.slotPos, r.pendF, r.pendPos, r.last = r.slotPos[:0], r.pendF[:0], r.pendPos[:0], -1
}

// Rewind forgets the context at positions ≥ pos (the target was restored
// to pos). Ring slots that rows at those positions overwrote keep no trace
// of the older rows they replaced: the drafter then sees slightly less
// context, which can only cost acceptance, never correctness.
func (r *Ring) Rewind(pos int) {
	for s, p := range r.slotPos {
		if p >= pos {
			r.slotPos[s] = -1
		}
	}
	keep := 0
	for keep < len(r.pendPos) && r.pendPos[keep] < pos {
		keep++
	}
	r.pendPos, r.pendF = r.pendPos[:keep], r.pendF[:keep*r.width]
	r.last = min(r.last, pos-1)
}
