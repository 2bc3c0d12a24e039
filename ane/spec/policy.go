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

// Auto tunes ModeAuto. Drafting pauses when the mean number of accepted
// drafts over the last Window cycles is below MinAccepted, and resumes for
// another Window-cycle trial after RetryAfter plain steps. Zero fields take
// the defaults. A rolling mean over a whole window (rather than reacting to
// a few bad cycles) keeps a drafter that is right half the time (mean ≈ 1
// accepted per cycle, s.d. ≈ 1.4 per cycle) from being paused by chance.
type Auto struct {
	MinAccepted float64 // accepted drafts per cycle worth a drafter call; default 0.3
	Window      int     // cycles averaged; default 32
	RetryAfter  int     // plain steps before drafting is tried again; default 256
}

// DefaultAuto is the auto policy used for zero Config.Auto fields.
// MinAccepted 0.3: on the ANE a verify costs the same for 1 or 8 rows and a
// drafter call about 0.18 of one (16.7 ms vs 91.5 ms, reference §5.3), so a
// cycle breaks even near 0.18 accepted drafts (BreakEven). A CPU backend,
// whose verify cost grows with rows, needs a higher value.
var DefaultAuto = Auto{MinAccepted: 0.3, Window: 32, RetryAfter: 256}

// BreakEven is the mean accepted drafts per cycle at which speculation
// neither gains nor loses: a cycle (verify of 8 rows + drafter) costs
// cycleCost and yields 1 + accepted tokens; a plain step costs plainCost.
func BreakEven(cycleCost, plainCost float64) float64 { return cycleCost/plainCost - 1 }

func (a Auto) withDefaults() Auto {
	if a.MinAccepted == 0 {
		a.MinAccepted = DefaultAuto.MinAccepted
	}
	if a.Window == 0 {
		a.Window = DefaultAuto.Window
	}
	if a.RetryAfter == 0 {
		a.RetryAfter = DefaultAuto.RetryAfter
	}
	return a
}

func (a Auto) validate() error {
	switch {
	case !(a.MinAccepted >= 0 && a.MinAccepted <= MaxDrafts):
		return fmt.Errorf("speculative auto min_accepted %v is outside [0, %d]", a.MinAccepted, MaxDrafts)
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
	if err := auto.validate(); err != nil {
		return nil, err
	}
	p := &policy{mode: mode, auto: auto, on: mode != ModeOff && haveDrafter}
	if mode == ModeAuto {
		p.recent = make([]int, auto.Window)
	}
	return p, nil
}

func (p *policy) drafting() bool { return p.on }

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
