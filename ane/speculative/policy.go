package speculative

import (
	"fmt"
	"math"
)

// Mode selects when the Speculator drafts.
type Mode string

const (
	// ModeOn drafts every cycle.
	ModeOn Mode = "on"
	// ModeOff never drafts (plain decoding).
	ModeOff Mode = "off"
	// ModeAuto drafts while it pays off: it pauses drafting when the
	// accepted drafts per cycle stay low and retries now and then.
	ModeAuto Mode = "auto"
)

// ParseMode accepts "on", "off" or "auto".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeOn, ModeOff, ModeAuto:
		return m, nil
	}
	return "", fmt.Errorf("speculative mode %q: want on, off or auto", s)
}

// Config configures a Speculator.
type Config struct {
	// Mode; empty means auto with a drafter and off without one.
	Mode Mode
	Auto Auto
}

// Auto tunes ModeAuto. Drafting pauses when the mean number of accepted
// drafts over the last Window cycles is below MinAccepted, and resumes for
// another Window-cycle trial after RetryAfter plain steps. A rolling mean
// over a whole window (rather than reacting to a few bad cycles) keeps a
// drafter that is right half the time (mean ≈ 1 accepted per cycle, s.d.
// ≈ 1.4 per cycle) from being paused by chance. Decisions depend on counts
// only, never on timing, so seeded runs stay reproducible.
//
// Zero fields take defaults derived from CycleCost, the backend's cost of
// one cycle (a verify of 8 rows plus a drafter call) in plain steps.
type Auto struct {
	// CycleCost defaults to 1.18, the ANE: its verify has a fixed T = 8 shape
	// and the drafter costs about 0.18 of it (16.7 ms incl. the 3 ms gap vs
	// 91.5 ms, Anemll/anemll-forge docs/verifier_len.md). A CPU
	// backend, whose verify cost grows with rows, must say so here.
	CycleCost float64
	// MinAccepted defaults to BreakEven(CycleCost, 1) + 0.1 (0.28 on the
	// ANE): the margin covers the window mean's noise (s.d. ≈ 0.25 for a
	// half-right drafter over 32 cycles). If even 7 accepted drafts per
	// cycle could not pay for a cycle, auto never drafts.
	MinAccepted float64
	// Window defaults to 32 cycles.
	Window int
	// RetryAfter defaults to enough plain steps that a failed trial window
	// costs at most 5%: max(256, 20·Window·(CycleCost − 1)).
	RetryAfter int
}

// DefaultCycleCost is the ANE's cycle cost in plain steps.
const DefaultCycleCost = 1.18

// BreakEven is the mean accepted drafts per cycle at which speculation
// neither gains nor loses: a cycle costs cycleCost and yields 1 + accepted
// tokens; a plain step costs plainCost and yields one.
func BreakEven(cycleCost, plainCost float64) float64 { return cycleCost/plainCost - 1 }

func (a Auto) withDefaults() Auto {
	if a.CycleCost == 0 {
		a.CycleCost = DefaultCycleCost
	}
	if a.MinAccepted == 0 {
		a.MinAccepted = BreakEven(a.CycleCost, 1) + 0.1
	}
	if a.Window == 0 {
		a.Window = 32
	}
	if a.RetryAfter == 0 {
		a.RetryAfter = max(256, int(math.Ceil(20*float64(a.Window)*(a.CycleCost-1))))
	}
	return a
}

func (a Auto) validate(explicit Auto) error {
	switch {
	case !(a.CycleCost >= 1) || math.IsInf(a.CycleCost, 1):
		return fmt.Errorf("speculative auto cycle_cost %v is not a finite number ≥ 1 (plain steps per cycle)", a.CycleCost)
	case explicit.MinAccepted != 0 && !(a.MinAccepted > 0 && a.MinAccepted <= MaxDrafts):
		return fmt.Errorf("speculative auto min_accepted %v is outside (0, %d]", a.MinAccepted, MaxDrafts)
	case a.Window < 1 || a.Window > 1<<16:
		return fmt.Errorf("speculative auto window %d is outside 1..65536 cycles", a.Window)
	case a.RetryAfter < 1:
		return fmt.Errorf("speculative auto retry_after %d is below 1 step", a.RetryAfter)
	}
	return nil
}

// policy is the drafting on/off state machine.
type policy struct {
	mode   Mode
	auto   Auto
	on     bool
	recent []int // accepted drafts of the last cycles (ring of Window)
	next   int   // ring slot for the next cycle
	filled int   // cycles in the ring since drafting (re)started
	sum    int   // sum of the ring
	plains int   // plain steps since drafting paused
	pauses int
}

func newPolicy(cfg Config, haveDrafter bool) (*policy, error) {
	mode := cfg.Mode
	if mode == "" {
		mode = ModeOff
		if haveDrafter {
			mode = ModeAuto
		}
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	if mode == ModeOn && !haveDrafter {
		return nil, fmt.Errorf("speculative mode on needs a drafter")
	}
	auto := cfg.Auto.withDefaults()
	if err := auto.validate(cfg.Auto); err != nil {
		return nil, err
	}
	p := &policy{mode: mode, auto: auto}
	p.on = haveDrafter && !p.neverDrafts()
	if mode == ModeAuto {
		p.recent = make([]int, auto.Window)
	}
	return p, nil
}

func (p *policy) drafting() bool { return p.on }

// neverDrafts: mode off, or auto with a drafter that could not pay for a
// cycle even if every draft were right.
func (p *policy) neverDrafts() bool {
	return p.mode == ModeOff || (p.mode == ModeAuto && p.auto.MinAccepted > MaxDrafts)
}

// mean is the rolling mean of accepted drafts per cycle.
func (p *policy) mean() float64 { return float64(p.sum) / float64(max(p.filled, 1)) }

// cycle records a cycle that accepted k drafts.
func (p *policy) cycle(k int) {
	if p.mode != ModeAuto {
		return
	}
	p.sum += k - p.recent[p.next]
	p.recent[p.next] = k
	p.next = (p.next + 1) % len(p.recent)
	p.filled = min(p.filled+1, len(p.recent))
	if p.filled == len(p.recent) && p.mean() < p.auto.MinAccepted {
		p.on, p.plains, p.pauses = false, 0, p.pauses+1
	}
}

// plainStep records a step without drafting; in auto mode enough of them
// bring drafting back for another trial window.
func (p *policy) plainStep() {
	if p.mode != ModeAuto || p.pauses == 0 {
		return
	}
	p.plains++
	if p.plains >= p.auto.RetryAfter {
		p.on, p.filled, p.sum, p.next = true, 0, 0, 0
		clear(p.recent)
	}
}
