package updater

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Policy is the automatic update policy (the config file's update keys).
type Policy struct {
	Auto     bool          // false: the loop only waits (update.check/apply still work by hand)
	Interval time.Duration // between checks
	Jitter   time.Duration // a random 0..Jitter is added to each interval
	// InWindow reports whether updates may run at t (nil: any time).
	InWindow func(t time.Time) bool
	Offline  bool // FORGE_OFFLINE: no network, so no checks
}

// Source is what the loop updates: the daemon's bundle store.
type Source interface {
	// Check resolves the tracked revision: the commit it names now and
	// whether that is the one served.
	Check(ctx context.Context) (latest string, upToDate bool, err error)
	// Apply downloads the tracked revision beside the served one,
	// verifies it and switches to it once no generation is running; it
	// returns the commit now served.
	Apply(ctx context.Context) (commit string, err error)
	// GC removes revisions other than the served one and the previous.
	GC() error
}

// Clock is time for the loop; tests drive a fake one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Outcomes of one round, as events report them.
const (
	StepDisabled = "disabled"   // update.auto is false
	StepOffline  = "offline"    // FORGE_OFFLINE
	StepWindow   = "outside"    // outside update.window
	StepUpToDate = "up_to_date" // nothing to do
	StepApplied  = "applied"    // switched to a new revision (and gc ran)
	StepFailed   = "failed"     // check, download, verify or switch failed: backing off
)

// Round is the outcome of one scheduled check.
type Round struct {
	Step   string
	Commit string        // the latest commit (checked or applied)
	Err    error         // for StepFailed
	Next   time.Duration // the wait before the next round
}

// MinBackoff is the first wait after a failed round; each further failure
// doubles it, up to the policy's interval.
const MinBackoff = time.Minute

// Loop checks the tracked revision on a schedule and applies updates.
type Loop struct {
	Policy func() Policy // read every round, so config edits apply live
	Source Source
	Clock  Clock           // nil: real time
	Rand   func() float64  // in [0,1) for jitter; nil: math/rand
	Log    *slog.Logger    // nil: discard
	OnStep func(r Round)   // every round's outcome, for events
	Wake   <-chan struct{} // a receive starts a round at once (nil: none)
	// Immediate runs the first round at once instead of after an interval
	// (nothing is installed yet: install it now, not in six hours).
	Immediate bool
}

// Run runs rounds until ctx ends: the first after one interval (plus
// jitter), then after each interval, or sooner with backoff after a failure.
func (l *Loop) Run(ctx context.Context) {
	clock := l.Clock
	if clock == nil {
		clock = realClock{}
	}
	failures := 0
	wait := l.delay(l.Policy(), 0)
	for first := true; ; first = false {
		if !first || !l.Immediate {
			select {
			case <-ctx.Done():
				return
			case <-clock.After(wait):
			case <-l.Wake:
			}
		}
		r := l.round(ctx, clock.Now())
		if ctx.Err() != nil {
			return
		}
		if r.Step == StepFailed {
			failures++
		} else {
			failures = 0
		}
		wait = l.delay(l.Policy(), failures)
		r.Next = wait
		l.report(r)
	}
}

// delay is the wait before the next round: the interval plus jitter, or
// after failures an exponential backoff capped at the interval.
func (l *Loop) delay(p Policy, failures int) time.Duration {
	if failures > 0 {
		d := MinBackoff << min(failures-1, 30)
		return min(d, p.Interval)
	}
	r := l.Rand
	if r == nil {
		r = rand.Float64
	}
	return p.Interval + time.Duration(r()*float64(p.Jitter))
}

// round runs one check and, when there is a new revision, applies it.
func (l *Loop) round(ctx context.Context, now time.Time) Round {
	p := l.Policy()
	switch {
	case !p.Auto:
		return Round{Step: StepDisabled}
	case p.Offline:
		return Round{Step: StepOffline}
	case p.InWindow != nil && !p.InWindow(now):
		return Round{Step: StepWindow}
	}
	latest, upToDate, err := l.Source.Check(ctx)
	if err != nil {
		return Round{Step: StepFailed, Err: fmt.Errorf("checking for updates: %w", err)}
	}
	if upToDate {
		return Round{Step: StepUpToDate, Commit: latest}
	}
	commit, err := l.Source.Apply(ctx)
	if err != nil {
		return Round{Step: StepFailed, Commit: latest, Err: fmt.Errorf("updating to %s: %w", latest, err)}
	}
	// The switch succeeded: older revisions than the previous can go. A gc
	// failure is logged, not retried: the update itself is done.
	if err := l.Source.GC(); err != nil {
		l.logger().Warn("update: gc after the switch", "err", err)
	}
	return Round{Step: StepApplied, Commit: commit}
}

func (l *Loop) report(r Round) {
	log := l.logger()
	switch r.Step {
	case StepFailed:
		log.Warn("update", "step", r.Step, "err", r.Err, "retry_in", r.Next)
	case StepApplied:
		log.Info("update", "step", r.Step, "commit", r.Commit, "next_check_in", r.Next)
	default:
		log.Debug("update", "step", r.Step, "commit", r.Commit, "next_check_in", r.Next)
	}
	if l.OnStep != nil {
		l.OnStep(r)
	}
}

func (l *Loop) logger() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}
