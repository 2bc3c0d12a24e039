package ops

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
	"github.com/forgedaemon/forged/daemon/residency"
	"github.com/forgedaemon/forged/daemon/scheduler"
	"github.com/forgedaemon/forged/daemon/state"
	"github.com/forgedaemon/forged/daemon/tokens"
	"github.com/forgedaemon/forged/daemon/transport"
)

// Daemon is what the op handlers need from the daemon that assembles them.
type Daemon interface {
	Backend() backend.Backend
	// UseModel makes sure the model is loaded for one request and counts
	// the request as running on it until done.
	UseModel(ctx context.Context) (context.Context, func(), error)
	MemoryFreed()
	CurrentState() (state, reason string, changed <-chan struct{})
	SubscribeState() (state.Record, <-chan struct{})
	StatesSince(seq uint64) ([]state.Record, uint64, <-chan struct{})
	Capabilities() []string
	ConfigValues() wire.ConfigValues
	MemoryEstimate() (wire.Memory, bool)
	Shutdown()
	Residency() *state.Residency   // nil: the model is always loaded
	Store() *state.Store           // nil: no bundle store
	ConfigFile() *state.ConfigFile // nil: no config file
	Authz() Authorizer
	Connections() int
}

// Authorizer decides what a peer may call.
type Authorizer interface {
	IsAdmin(p transport.Peer) bool
	MayUseApps(p transport.Peer) bool
}

// Config is what the handlers and each connection's transport use of the
// daemon's configuration (defaults already applied).
type Config struct {
	Limits            wire.Limits
	FrameTimeout      time.Duration
	WriteTimeout      time.Duration
	SlowReaderTimeout time.Duration
	EventQueue        int
	HelloTimeout      time.Duration // the first frame must arrive within this
	IdleTimeout       time.Duration // a connection with nothing in flight is closed after this
	MaxStreams        int           // streaming requests in flight per connection
	DefaultMaxTokens  int
	Tokens            *tokens.Store // the HTTP API's bearer tokens; nil: none (the token ops are unavailable)
}

// Handlers serves the ops of the registry (wire.Ops) on each connection.
type Handlers struct {
	Daemon
	cfg      Config
	log      *slog.Logger
	sched    *scheduler.Scheduler
	gate     scheduler.Gate // one preparation (render, tokenize) per uid at a time
	sessions *state.Sessions
	started  time.Time

	mu   sync.Mutex
	gens map[*generation]struct{}
	seq  uint64 // the last generation's daemon-wide number (under mu)
}

// New builds the handlers over d.
func New(d Daemon, cfg Config, log *slog.Logger, sched *scheduler.Scheduler, sessions *state.Sessions) *Handlers {
	return &Handlers{Daemon: d, cfg: cfg, log: log, sched: sched, sessions: sessions, started: time.Now(), gens: map[*generation]struct{}{}}
}

// footprint is the served backend's memory model, or nil.
func (s *Handlers) footprint() *residency.Footprint { return state.FootprintOf(s.Backend()) }

// contextEntry is the entry a request of prompt tokens and maxTokens starts
// at: the smallest holding prompt + max_tokens + 8. Past the largest entry
// the request is refused with context_exceeded naming the limit; it is never
// truncated.
func contextEntry(op string, f *residency.Footprint, ladder []int, prompt, maxTokens int) (int, error) {
	if f == nil {
		if len(ladder) == 0 {
			return 0, nil // the backend has no ladder (fake engines): it decides
		}
		f = &residency.Footprint{Ladder: ladder}
	}
	entry, err := f.EntryFor(prompt, maxTokens)
	var ce *residency.ContextExceededError
	if errors.As(err, &ce) {
		return 0, wire.Errorf(wire.CodeContextExceeded, "%s: %d prompt tokens plus max_tokens %d plus %d reserved exceed the largest context entry (limit %d positions)",
			op, prompt, maxTokens, residency.SpeculativeReserve, ce.Limit)
	}
	return entry, err
}

// generation is a chat or generate request, tracked for status.
type generation struct {
	id        uint64 // the caller's, per connection
	seq       uint64 // daemon-wide (Handlers.seq)
	received  time.Time
	priority  string
	peer      transport.Peer
	client    string
	op        string
	session   string
	running   atomic.Bool
	generated atomic.Uint64
	entry     atomic.Int64 // context entry admitted at (0 before admission)
}

func (s *Handlers) track(g *generation) (untrack func()) {
	s.mu.Lock()
	s.seq++
	g.seq = s.seq
	s.gens[g] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.gens, g)
		s.mu.Unlock()
	}
}

// callerKey is who asks, for fairness: the kernel's uid first, then the
// app name from hello.
func callerKey(p transport.Peer, client string) scheduler.Caller {
	return scheduler.Caller{UID: p.UID, App: client}
}
