package state

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
	"github.com/forgedaemon/forged/daemon/residency"
	"github.com/forgedaemon/forged/internal/sysinfo"
)

// ResidencyOptions make the served model loadable and unloadable.
type ResidencyOptions struct {
	Bundle string // the bundle's name in events and logs (repo@revision)
	// Load loads the model; it is called on load, and by the first request
	// after an unload.
	Load func(ctx context.Context) (backend.Backend, error)
	// KeepAlive unloads after this long without a request: 0 as soon as
	// the model is idle (at the first tick after its last request),
	// negative never; residency.DefaultKeepAlive is the usual 10 minutes.
	// One meaning everywhere: the config file's keep_alive, forged run
	// --keep-alive, config.get's keep_alive_ms (docs/CONFIG.md).
	KeepAlive time.Duration
	Now       func() time.Time // nil: time.Now (tests inject a clock)
	// Budget is the memory the model and its sessions may use, in bytes
	// (residency.Budget of the machine's memory and the reserve); a request
	// that does not fit waits for memory. 0: no admission control.
	Budget int64
	// Initial is the bundle's state at start (zero: Ready, installed and
	// not loaded); Absent with InitialReason for a bundle not installed yet.
	Initial       residency.State
	InitialReason string
}

// Residency holds the served model in memory and lets it go: load, unload,
// pin, keep-alive and memory pressure, with every transition of the
// bundle's state machine published as a state event.
type Residency struct {
	host Host
	opts ResidencyOptions
	keep residency.KeepAlive
	m    *residency.Machine

	mu        sync.Mutex
	pinned    bool
	lastUsed  time.Time
	uses      map[*use]struct{} // requests running on the model
	loading   chan struct{}     // closed when the load in progress ends
	drafter   bool              // the drafter is loaded (dropped under critical pressure)
	freed     chan struct{}     // closed when memory may have been freed (admission waits on it)
	waiting   []*int            // requests waiting for memory, in arrival order
	switching bool              // a revision switch is waiting for running requests: new ones wait
	previous  *revision         // what Switch replaced, for Rollback
}

// Host is what residency needs from the daemon, passed in (it holds no
// pointer to the Server): the served backend, the published state, the
// session table and the log.
type Host struct {
	Log        *slog.Logger
	Backend    func() backend.Backend
	SetBackend func(backend.Backend)
	SetState   func(state, reason string)
	State      func() string // the published state now
	Sessions   *Sessions
}

// footprint is the served backend's memory model, or nil.
func (h Host) footprint() *residency.Footprint { return FootprintOf(h.Backend()) }

// FootprintOf is b's memory model (backend.Footprinter), or nil.
func FootprintOf(b backend.Backend) *residency.Footprint {
	if f, ok := b.(backend.Footprinter); ok {
		return f.Footprint()
	}
	return nil
}

// revision is a loadable revision of the bundle.
type revision struct {
	name string
	load func(ctx context.Context) (backend.Backend, error)
}

type use struct{ cancel context.CancelCauseFunc }

// NewResidency puts the served model under residency control: it starts
// unloaded (state "unloaded", or opts.Initial); call Load to preload it.
func NewResidency(host Host, opts ResidencyOptions) *Residency {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Residency{host: host, opts: opts, uses: map[*use]struct{}{}, drafter: true}
	r.keep.Idle = opts.KeepAlive
	if opts.Initial == "" {
		opts.Initial = residency.Ready
	}
	r.opts = opts
	r.m = residency.NewMachine(opts.Bundle, opts.Initial, opts.Now)
	r.m.OnTransition(func(t residency.Transition) {
		// Logged as subscribers see it (a bundle that is ready to load is
		// "unloaded", not "ready"), with the lifecycle state beside it.
		from, _ := WireState(t.From, "")
		state, reason := WireState(t.To, t.Reason)
		host.Log.Info("residency", "bundle", t.Bundle, "from", from, "to", state, "lifecycle", string(t.From)+"->"+string(t.To), "reason", t.Reason)
		host.SetState(state, reason)
	})
	host.SetBackend(backend.Unavailable{Reason: "the model is not loaded", Bundle: host.Backend().Model().Bundle})
	host.SetState(WireState(opts.Initial, opts.InitialReason))
	return r
}

// Machine is the bundle's state machine (the store's pulls move it).
func (r *Residency) Machine() *residency.Machine { return r.m }

// Budget is the memory budget admission decides against (0: none).
func (r *Residency) Budget() int64 { return r.opts.Budget }

// DrafterLoaded reports whether the drafter is in memory (critical
// pressure drops it).
func (r *Residency) DrafterLoaded() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drafter
}

// WireState maps a bundle state to the state subscribers see: "ready"
// means serving.
func WireState(s residency.State, reason string) (string, string) {
	switch s {
	case residency.Resident:
		return wire.StateReady, reason
	case residency.Ready:
		if reason == "" {
			reason = "not loaded; the next request loads it"
		}
		return wire.StateUnloaded, reason
	case residency.Unloading:
		return wire.StateUnloading, reason
	case residency.Loading:
		return wire.StateLoading, reason
	case residency.Downloading:
		return wire.StateDownloading, reason
	case residency.Verifying:
		return wire.StateVerifying, reason
	case residency.Absent:
		if reason == "" {
			reason = "the bundle is not installed"
		}
		return wire.StateUnavailable, reason
	}
	return wire.StateUnavailable, reason
}

// SetKeepAlive changes the keep-alive (as ResidencyOptions.KeepAlive: 0
// unloads at the first tick after the model goes idle, negative never).
func (r *Residency) SetKeepAlive(d time.Duration) {
	r.mu.Lock()
	r.keep.Idle = d
	r.mu.Unlock()
}

// KeepAlive is the keep-alive in force (0: unload as soon as idle;
// negative: never).
func (r *Residency) KeepAlive() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keep.Idle
}

// State is the bundle's residency state and reason.
func (r *Residency) State() (residency.State, string) { return r.m.State() }

// Load makes the model resident (a no-op when it is). Concurrent callers
// share one load.
func (r *Residency) Load(ctx context.Context, why string) error {
	for {
		r.mu.Lock()
		st, reason := r.m.State()
		if st == residency.Resident {
			r.mu.Unlock()
			return nil
		}
		if wait := r.loading; wait != nil {
			r.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		if st != residency.Ready {
			r.mu.Unlock()
			return wire.Errorf(wire.CodeUnavailable, "the model cannot be loaded: the bundle is %s (%s)", st, reason)
		}
		done := make(chan struct{})
		r.loading = done
		r.mu.Unlock()
		err := r.load(why)
		r.mu.Lock()
		r.loading = nil
		close(done)
		r.mu.Unlock()
		return err
	}
}

func (r *Residency) load(why string) error {
	if err := r.m.To(residency.Loading, why); err != nil {
		return err
	}
	// Loading is not tied to the request that triggered it: other
	// requests wait for the same load.
	r.mu.Lock()
	loadFn := r.opts.Load
	r.mu.Unlock()
	b, err := loadFn(context.Background())
	if err != nil {
		r.m.Fail(fmt.Sprintf("loading failed: %v", err))
		return wire.Errorf(wire.CodeUnavailable, "loading the model failed: %v", err)
	}
	r.host.SetBackend(b)
	r.mu.Lock()
	r.lastUsed = r.opts.Now()
	r.drafter = true
	r.mu.Unlock()
	return r.m.To(residency.Resident, "")
}

// Unload frees the model. It is refused (busy) while a request is running
// unless force, which cancels those requests.
func (r *Residency) Unload(force bool, why string) error {
	r.mu.Lock()
	if st, _ := r.m.State(); st != residency.Resident {
		r.mu.Unlock()
		return nil
	}
	if n := len(r.uses); n > 0 {
		if !force {
			r.mu.Unlock()
			return wire.Errorf(wire.CodeBusy, "unload: %d request(s) are generating; wait, or pass force: true to cancel them", n)
		}
		for u := range r.uses {
			u.cancel(wire.Errorf(wire.CodeCancelled, "the model was unloaded by an administrator"))
		}
	}
	if err := r.m.To(residency.Unloading, why); err != nil {
		r.mu.Unlock()
		return err
	}
	old := r.host.Backend()
	r.host.SetBackend(backend.Unavailable{Reason: "the model is not loaded", Bundle: old.Model().Bundle, Backend: backend.Info(old)})
	r.mu.Unlock()
	// Cancelled requests stop at their next step; closing the backend
	// under a step still running would pull its weights from under it.
	_ = r.waitIdle(context.Background())
	// Sessions lose their engine state; their next turn prefills again.
	r.host.Sessions.ForEach(func(_ *Owner, sess *Session) { sess.Tokens, sess.Context, sess.Parked = 0, 0, false })
	if cl, ok := old.(io.Closer); ok {
		if err := cl.Close(); err != nil {
			r.host.Log.Warn("closing the unloaded model", "err", err)
		}
	}
	r.MemoryFreed()
	return r.m.To(residency.Ready, why)
}

// Pin keeps the model loaded regardless of idle time (false: keep-alive
// applies again).
func (r *Residency) Pin(pinned bool) {
	r.mu.Lock()
	r.pinned = pinned
	r.mu.Unlock()
}

// Pinned reports whether the model is pinned.
func (r *Residency) Pinned() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pinned
}

// acquire loads the model if needed and registers a running request; the
// returned context is cancelled by a forced unload.
func (r *Residency) Acquire(ctx context.Context) (context.Context, func(), error) {
	for {
		if err := r.Load(ctx, "a request arrived"); err != nil {
			return nil, nil, err
		}
		r.mu.Lock()
		if r.switching { // wait for the new revision
			if r.freed == nil {
				r.freed = make(chan struct{})
			}
			wait := r.freed
			r.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, nil, context.Cause(ctx)
			}
			continue
		}
		if st, _ := r.m.State(); st != residency.Resident {
			r.mu.Unlock()
			continue // unloaded between the load and here: load again
		}
		ctx, cancel := context.WithCancelCause(ctx)
		u := &use{cancel: cancel}
		r.uses[u] = struct{}{}
		r.lastUsed = r.opts.Now()
		r.mu.Unlock()
		return ctx, func() {
			r.mu.Lock()
			delete(r.uses, u)
			r.lastUsed = r.opts.Now()
			r.mu.Unlock()
			cancel(nil)
			r.MemoryFreed()
		}, nil
	}
}

// waitIdle returns once no request is running on the model (requests
// release their use when their generation returns).
func (r *Residency) waitIdle(ctx context.Context) error {
	for {
		r.mu.Lock()
		if len(r.uses) == 0 {
			r.mu.Unlock()
			return nil
		}
		if r.freed == nil {
			r.freed = make(chan struct{})
		}
		wait := r.freed // taken with the count: a release after this closes it
		r.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Tick applies keep-alive: an idle, unpinned model past its keep-alive is
// unloaded. Run calls it periodically; tests call it with their clock.
func (r *Residency) Tick() {
	r.mu.Lock()
	st, _ := r.m.State()
	idle := r.opts.Now().Sub(r.lastUsed)
	expired := st == residency.Resident && r.keep.Expired(r.opts.Now(), r.lastUsed, r.pinned, len(r.uses) > 0)
	keep := r.keep.Idle
	r.mu.Unlock()
	if expired {
		_ = r.Unload(false, fmt.Sprintf("idle for %s (keep-alive %s)", idle.Round(time.Second), keep))
	}
}

// Run ticks keep-alive and polls memory pressure from src (nil: none)
// every interval until ctx ends.
func (r *Residency) Run(ctx context.Context, interval time.Duration, src sysinfo.Source) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.Tick()
		if src != nil {
			if p, err := src.Pressure(); err == nil {
				r.Pressure(p.Level)
			}
		}
	}
}

// Pressure walks the pressure ladder for level (residency.PressureSteps):
// idle sessions' engine state is dropped (their next turn prefills again),
// then on critical the drafter is dropped and the model unloaded unless a
// request is running. Each step is logged and published as a state event.
// It returns the steps taken.
func (r *Residency) Pressure(level sysinfo.Level) []residency.Step {
	f := r.host.footprint()
	if f == nil || level < sysinfo.Warning {
		return nil
	}
	r.mu.Lock()
	st, _ := r.m.State()
	l := residency.Loaded{Model: st == residency.Resident, Drafter: r.drafter && st == residency.Resident, Generating: len(r.uses) > 0}
	r.mu.Unlock()
	idle := map[string]*Owner{}
	r.host.Sessions.ForEach(func(o *Owner, sess *Session) {
		if !sess.Busy && sess.Context > 0 {
			l.Idle = append(l.Idle, residency.IdleSession{ID: sess.ID, Entry: sess.Context, Tokens: sess.Tokens, Spillable: true, LastUsed: sess.LastUsed})
			idle[sess.ID] = o
		}
	})
	steps := f.PressureSteps(level, l)
	for _, step := range steps {
		r.host.Log.Warn("memory pressure", "level", level, "step", step.String())
		switch step.Kind {
		case residency.DropSession, residency.Shrink:
			if !idle[step.Session].FreeState(step.Session, r.host.Backend(), r.host.Log) {
				continue // it started a request meanwhile: leave it
			}
			r.MemoryFreed()
		case residency.DropDrafter:
			r.mu.Lock()
			r.drafter = false
			r.mu.Unlock()
		case residency.Unload:
			if err := r.Unload(false, "memory pressure "+level.String()); err != nil {
				r.host.Log.Warn("memory pressure: unload refused", "err", err)
				continue
			}
		}
		r.host.SetState(r.host.State(), fmt.Sprintf("memory pressure %s: %s", level, step))
	}
	return steps
}

// Reverify stops serving from the bundle (cancelling running requests: its
// files changed under them), verifies it with verify, and marks it ready or
// failed with verify's error. A failed bundle is not loaded again until an
// administrator repairs it (pull, rollback).
func (r *Residency) Reverify(reason string, verify func() error) error {
	if err := r.Unload(true, reason); err != nil {
		return err
	}
	if err := r.m.To(residency.Verifying, reason); err != nil {
		return err
	}
	if err := verify(); err != nil {
		r.m.Fail(fmt.Sprintf("verification failed after %s: %v", reason, err))
		return err
	}
	return r.m.To(residency.Ready, "verified after "+reason)
}

// Switch serves another revision. verify runs first: if it fails the
// current revision keeps serving and the new one never goes live. Then new
// requests wait while the running ones finish on the current revision, the
// current one is unloaded (two copies may not fit: docs/RESIDENCY.md) and
// the new one loaded; the next request is served by it. The replaced
// revision is kept for Rollback.
func (r *Residency) Switch(ctx context.Context, name string, verify func() error, load func(context.Context) (backend.Backend, error)) error {
	if verify != nil {
		if err := verify(); err != nil {
			r.host.SetState(r.host.State(), fmt.Sprintf("update to %s refused: verification failed: %v", name, err))
			return fmt.Errorf("update to %s: verification failed, still serving the current revision: %w", name, err)
		}
	}
	r.mu.Lock()
	if r.switching {
		r.mu.Unlock()
		return wire.Errorf(wire.CodeBusy, "another revision switch is in progress")
	}
	r.switching = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.switching = false
		r.mu.Unlock()
		r.MemoryFreed()
	}()
	if err := r.waitIdle(ctx); err != nil {
		return err
	}
	r.mu.Lock()
	r.previous = &revision{name: r.opts.Bundle, load: r.opts.Load}
	r.opts.Bundle, r.opts.Load = name, load
	r.mu.Unlock()
	if err := r.Unload(false, "switching to "+name); err != nil {
		return err
	}
	r.m.Rename(name) // the old revision's unload is logged under its own name
	return r.Load(ctx, "switching to "+name)
}

// install makes a freshly installed revision the one served (the bundle
// was absent or failed): downloading → verifying → ready, not loaded yet.
func (r *Residency) Install(name string, load func(context.Context) (backend.Backend, error), verified string) error {
	r.mu.Lock()
	r.opts.Bundle, r.opts.Load = name, load
	r.mu.Unlock()
	r.m.Rename(name)
	if st, _ := r.m.State(); st != residency.Verifying {
		if err := r.m.To(residency.Verifying, verified); err != nil {
			return err
		}
	}
	return r.m.To(residency.Ready, "installed "+name)
}

// Rollback switches back to the revision the last Switch replaced.
func (r *Residency) Rollback(ctx context.Context) error {
	r.mu.Lock()
	prev := r.previous
	r.mu.Unlock()
	if prev == nil {
		return wire.Errorf(wire.CodeNotFound, "update.rollback: there is no previous revision to go back to")
	}
	return r.Switch(ctx, prev.name, nil, prev.load)
}
