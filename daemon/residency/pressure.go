package residency

import (
	"fmt"
	"slices"
	"time"

	"github.com/forgedaemon/forged/internal/sysinfo"
	"github.com/forgedaemon/forged/internal/units"
)

// Step is one thing to do to give memory back.
type Step struct {
	Kind    StepKind
	Session string // for DropSession and Shrink
	To      int    // for Shrink: the new context entry
	Frees   int64  // estimated bytes freed
}

func (s Step) String() string {
	switch s.Kind {
	case DropSession:
		return fmt.Sprintf("drop session %s (frees %s)", s.Session, units.Bytes(s.Frees))
	case Shrink:
		return fmt.Sprintf("shrink session %s to %s (frees %s)", s.Session, entryName(s.To), units.Bytes(s.Frees))
	case DropDrafter:
		return fmt.Sprintf("drop the drafter (frees %s)", units.Bytes(s.Frees))
	case Unload:
		return fmt.Sprintf("unload the model (frees %s)", units.Bytes(s.Frees))
	}
	return fmt.Sprintf("step(%d)", int(s.Kind))
}

// StepKind orders the pressure ladder: cheapest to undo first.
type StepKind int

const (
	// DropSession frees an idle session's state. Its next turn prefills the
	// conversation again (spilling the state to disk with Snapshot, so the
	// turn resumes instead, is not implemented yet: docs/RESIDENCY.md).
	DropSession StepKind = iota
	// Shrink moves an idle session whose state must stay to the smallest
	// entry that holds its tokens.
	Shrink
	DropDrafter
	Unload
)

// IdleSession is a session holding state with no request running.
type IdleSession struct {
	ID        string
	Entry     int  // its context entry
	Tokens    int  // positions it holds
	Spillable bool // its state may be dropped; if not, it is only shrunk
	LastUsed  time.Time
}

// Loaded is what the pressure ladder may give back.
type Loaded struct {
	Model, Drafter bool
	Generating     bool // a request is running: the model must stay
	Idle           []IdleSession
}

// PressureSteps is the ladder for a pressure level, in the order to take
// it: on a warning, drop the idle sessions' state (least recently used first) and
// shrink those that cannot be spilled; on critical, also drop the drafter
// and then unload the model unless a request is running.
func (f *Footprint) PressureSteps(level sysinfo.Level, l Loaded) []Step {
	if level < sysinfo.Warning {
		return nil
	}
	idle := slices.Clone(l.Idle)
	slices.SortStableFunc(idle, func(a, b IdleSession) int { return a.LastUsed.Compare(b.LastUsed) })
	var steps []Step
	for _, s := range idle {
		if s.Spillable {
			steps = append(steps, Step{Kind: DropSession, Session: s.ID, Frees: f.Session(s.Entry)})
		}
	}
	for _, s := range idle {
		if s.Spillable {
			continue
		}
		if to, err := f.Entry(s.Tokens + SpeculativeReserve); err == nil && to < s.Entry {
			steps = append(steps, Step{Kind: Shrink, Session: s.ID, To: to, Frees: f.Session(s.Entry) - f.Session(to)})
		}
	}
	if level < sysinfo.Critical {
		return steps
	}
	if l.Drafter {
		steps = append(steps, Step{Kind: DropDrafter, Frees: f.Drafter})
	}
	if l.Model && !l.Generating {
		steps = append(steps, Step{Kind: Unload, Frees: f.Model(false)})
	}
	return steps
}

// KeepAlive decides when an idle model is unloaded.
type KeepAlive struct {
	// Idle: unload after this long without a request; 0 as soon as the
	// model is idle (at the first check after its last request ends);
	// negative never.
	Idle time.Duration
}

// DefaultKeepAlive is Ollama's default, which people already expect.
const DefaultKeepAlive = 10 * time.Minute

// Expired reports whether a model last used at lastUsed should be unloaded
// at now. A pinned model or one with a request running never is.
func (k KeepAlive) Expired(now, lastUsed time.Time, pinned, generating bool) bool {
	if pinned || generating || k.Idle < 0 {
		return false
	}
	return now.Sub(lastUsed) >= k.Idle
}
