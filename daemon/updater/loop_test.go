package updater

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeClock hands each requested wait to the test, which fires it.
type fakeClock struct {
	waits chan time.Duration
	fire  chan time.Time
	now   time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{waits: make(chan time.Duration, 1), fire: make(chan time.Time), now: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.waits <- d
	return c.fire
}

// scriptSource answers Check from a script and records Apply and GC calls.
type scriptSource struct {
	checks  []error // nil: a result from latest/upToDate
	latest  string
	upToDt  bool
	applied []string
	gcs     int
}

func (s *scriptSource) Check(context.Context) (string, bool, error) {
	if len(s.checks) > 0 {
		err := s.checks[0]
		s.checks = s.checks[1:]
		if err != nil {
			return "", false, err
		}
	}
	return s.latest, s.upToDt, nil
}

func (s *scriptSource) Apply(context.Context) (string, error) {
	s.applied = append(s.applied, s.latest)
	s.upToDt = true
	return s.latest, nil
}

func (s *scriptSource) GC() error { s.gcs++; return nil }

// run starts l and returns a function that fires the pending wait (after
// checking its length) and returns the round it caused.
func run(t *testing.T, l *Loop) (step func(wantWait time.Duration) Round, stop func()) {
	t.Helper()
	clock := newFakeClock()
	rounds := make(chan Round, 1)
	l.Clock, l.OnStep = clock, func(r Round) { rounds <- r }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	step = func(want time.Duration) Round {
		t.Helper()
		if got := <-clock.waits; got != want {
			t.Fatalf("the loop waits %s, want %s", got, want)
		}
		clock.fire <- clock.now
		return <-rounds
	}
	return step, func() { cancel(); <-done }
}

func policy(p Policy) func() Policy { return func() Policy { return p } }

// Checks run every interval plus jitter; failures back off exponentially
// (1m, 2m, …) up to the interval; a new revision is applied then gc runs;
// after that the revision is up to date.
func TestLoopChecksBacksOffAndApplies(t *testing.T) {
	src := &scriptSource{checks: []error{errors.New("hub 503"), errors.New("hub 503")}, latest: "c2"}
	l := &Loop{Policy: policy(Policy{Auto: true, Interval: time.Hour, Jitter: 10 * time.Minute}), Source: src, Rand: func() float64 { return 0.5 }}
	step, stop := run(t, l)
	defer stop()
	r := step(time.Hour + 5*time.Minute)
	if r.Step != StepFailed || r.Next != time.Minute || r.Err == nil {
		t.Fatalf("round 1: %+v", r)
	}
	if r = step(time.Minute); r.Step != StepFailed || r.Next != 2*time.Minute {
		t.Fatalf("round 2: %+v", r)
	}
	if len(src.applied) != 0 {
		t.Fatalf("applied after failed checks: %v", src.applied)
	}
	if r = step(2 * time.Minute); r.Step != StepApplied || r.Commit != "c2" || r.Next != time.Hour+5*time.Minute {
		t.Fatalf("round 3: %+v", r)
	}
	if len(src.applied) != 1 || src.gcs != 1 {
		t.Fatalf("apply %v, gc %d times", src.applied, src.gcs)
	}
	if r = step(time.Hour + 5*time.Minute); r.Step != StepUpToDate || len(src.applied) != 1 {
		t.Fatalf("round 4: %+v, applied %v", r, src.applied)
	}
}

// Backoff never exceeds the interval.
func TestLoopBackoffCappedAtInterval(t *testing.T) {
	l := &Loop{Rand: func() float64 { return 0 }}
	p := Policy{Interval: 10 * time.Minute}
	for failures, want := range map[int]time.Duration{1: time.Minute, 2: 2 * time.Minute, 4: 8 * time.Minute, 5: 10 * time.Minute, 40: 10 * time.Minute} {
		if got := l.delay(p, failures); got != want {
			t.Errorf("%d failures: wait %s, want %s", failures, got, want)
		}
	}
}

// Offline, disabled or outside the window: no check reaches the source,
// and the schedule keeps its interval.
func TestLoopSkipsWithoutTouchingTheSource(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{Policy{Auto: true, Offline: true}, StepOffline},
		{Policy{Auto: false}, StepDisabled},
		{Policy{Auto: true, InWindow: func(t time.Time) bool { return t.Hour() >= 22 }}, StepWindow},
	} {
		src := &scriptSource{checks: []error{errors.New("must not be called")}, latest: "c9"}
		c.p.Interval = time.Hour
		step, stop := run(t, &Loop{Policy: policy(c.p), Source: src, Rand: func() float64 { return 0 }})
		if r := step(time.Hour); r.Step != c.want || r.Next != time.Hour {
			t.Errorf("%s: round %+v", c.want, r)
		}
		stop()
		if len(src.checks) != 1 || len(src.applied) != 0 {
			t.Errorf("%s: the source was used", c.want)
		}
	}
}

// A wake starts a round at once.
func TestLoopWake(t *testing.T) {
	wake := make(chan struct{})
	src := &scriptSource{latest: "c3"}
	clock := newFakeClock()
	rounds := make(chan Round, 1)
	l := &Loop{Policy: policy(Policy{Auto: true, Interval: time.Hour}), Source: src, Clock: clock, Wake: wake,
		Rand: func() float64 { return 0 }, OnStep: func(r Round) { rounds <- r }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	<-clock.waits
	wake <- struct{}{}
	if r := <-rounds; r.Step != StepApplied || r.Commit != "c3" {
		t.Fatalf("woken round %+v", r)
	}
	cancel()
	<-clock.waits // the loop asked for its next wait before seeing the cancel
	<-done
}

// Immediate: the first round runs without waiting (nothing installed yet),
// then the interval applies.
func TestLoopImmediateFirstRound(t *testing.T) {
	src := &scriptSource{latest: "c1"}
	clock := newFakeClock()
	rounds := make(chan Round, 1)
	l := &Loop{Policy: policy(Policy{Auto: true, Interval: time.Hour}), Source: src, Clock: clock, Immediate: true,
		Rand: func() float64 { return 0 }, OnStep: func(r Round) { rounds <- r }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	var r Round
	var next time.Duration
	select {
	case r = <-rounds:
		next = <-clock.waits
	case d := <-clock.waits:
		// Both channels may be ready by now (they are buffered): a round
		// already sent came before this wait, which is then the next one.
		select {
		case r = <-rounds:
			next = d
		default:
			t.Fatalf("waited %s before the first round", d)
		}
	}
	if r.Step != StepApplied || r.Commit != "c1" || r.Next != time.Hour {
		t.Fatalf("first round %+v", r)
	}
	if next != time.Hour {
		t.Fatalf("then waits %s, want 1h", next)
	}
	select {
	case <-clock.waits:
		t.Fatal("asked for a wait before the first round")
	default:
	}
	cancel()
	<-done
}
