package spec

import "fmt"

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

// Auto tunes ModeAuto. Drafting pauses once the exponentially weighted
// mean of accepted drafts per cycle has stayed below MinAccepted for
// Patience cycles in a row; after RetryAfter plain steps it resumes with a
// fresh mean. Zero fields take the defaults.
type Auto struct {
	Alpha       float64 // weight of the newest cycle in the mean; default 0.25
	MinAccepted float64 // accepted drafts per cycle worth a drafter call; default 1
	Patience    int     // cycles below MinAccepted before pausing; default 8
	RetryAfter  int     // plain steps before drafting is tried again; default 256
}

// DefaultAuto is the auto policy used when Config.Auto is zero.
var DefaultAuto = Auto{Alpha: 0.25, MinAccepted: 1, Patience: 8, RetryAfter: 256}

func (a Auto) withDefaults() Auto {
	if a.Alpha == 0 {
		a.Alpha = DefaultAuto.Alpha
	}
	if a.MinAccepted == 0 {
		a.MinAccepted = DefaultAuto.MinAccepted
	}
	if a.Patience == 0 {
		a.Patience = DefaultAuto.Patience
	}
	if a.RetryAfter == 0 {
		a.RetryAfter = DefaultAuto.RetryAfter
	}
	return a
}

func (a Auto) validate() error {
	switch {
	case !(a.Alpha > 0 && a.Alpha <= 1):
		return fmt.Errorf("speculative auto alpha %v is outside (0, 1]", a.Alpha)
	case !(a.MinAccepted >= 0 && a.MinAccepted <= MaxDrafts):
		return fmt.Errorf("speculative auto min_accepted %v is outside [0, %d]", a.MinAccepted, MaxDrafts)
	case a.Patience < 1:
		return fmt.Errorf("speculative auto patience %d is below 1 cycle", a.Patience)
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
	mean   float64
	fresh  bool // no cycle since drafting (re)started
	below  int  // consecutive cycles with the mean below MinAccepted
	plains int  // plain steps since drafting paused
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
	if err := auto.validate(); err != nil {
		return nil, err
	}
	return &policy{mode: mode, auto: auto, on: mode != ModeOff && haveDrafter, fresh: true}, nil
}

func (p *policy) drafting() bool { return p.on }

// cycle records a cycle that accepted k drafts.
func (p *policy) cycle(k int) {
	if p.mode != ModeAuto {
		return
	}
	if p.fresh {
		p.mean, p.fresh = float64(k), false
	} else {
		p.mean = p.auto.Alpha*float64(k) + (1-p.auto.Alpha)*p.mean
	}
	if p.mean < p.auto.MinAccepted {
		p.below++
	} else {
		p.below = 0
	}
	if p.below >= p.auto.Patience {
		p.on, p.plains, p.pauses = false, 0, p.pauses+1
	}
}

// plainStep records a step without drafting; in auto mode enough of them
// bring drafting back for another try.
func (p *policy) plainStep() {
	if p.mode != ModeAuto || p.pauses == 0 {
		return
	}
	p.plains++
	if p.plains >= p.auto.RetryAfter {
		p.on, p.fresh, p.below = true, true, 0
	}
}
