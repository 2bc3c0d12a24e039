package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/access"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/daemon/ops"
	"github.com/forgedaemon/forged/daemon/scheduler"
	"github.com/forgedaemon/forged/daemon/state"
	"github.com/forgedaemon/forged/daemon/tokens"
	"github.com/forgedaemon/forged/daemon/transport"
)

// Config tunes the server. Zero values take the defaults in docs/PROTOCOL.md.
type Config struct {
	Limits            wire.Limits         // frame size and nesting bounds
	FrameTimeout      time.Duration       // a started frame must complete within this
	WriteTimeout      time.Duration       // one blocked write longer than this disconnects
	SlowReaderTimeout time.Duration       // a full event queue for this long disconnects
	EventQueue        int                 // outgoing messages buffered per connection
	HelloTimeout      time.Duration       // the first frame must be complete within this of connecting
	IdleTimeout       time.Duration       // a connection with no streaming request in flight is closed after this
	HTTPIdleTimeout   time.Duration       // the HTTP API closes a keep-alive connection idle this long (config http.idle_timeout)
	MaxConns          int                 // open connections in total (root and the daemon's uid are not refused)
	MaxConnsPerUID    int                 // open connections of one uid
	MaxStreams        int                 // streaming requests in flight on one connection
	Slots             int                 // generations run at once
	MaxQueue          int                 // generations waiting in total
	PerCaller         int                 // queued-or-running generations per caller (uid + app name)
	PerUID            int                 // queued-or-running generations per uid, over all its app names
	Sessions          state.SessionLimits // open sessions per connection and per uid
	DefaultMaxTokens  int
	AdminGroup        string   // group name or gid whose members may use admin ops
	AllowedUIDs       []uint32 // empty: every local user may use app ops
	SocketPath        string   // reported by config.get
	Credentials       CredentialSource
	Tokens            *tokens.Store // the HTTP API's bearer tokens (token.* admin ops); nil: none
	Logger            *slog.Logger
}

// connDefaults are the config file's defaults of the limits (connections,
// streams, per-uid shares), which a Config's zero values take.
var connDefaults = config.Default().Limits

func (c Config) withDefaults() Config {
	if c.Limits.MaxFrame <= 0 {
		c.Limits.MaxFrame = wire.DefaultLimits.MaxFrame
	}
	if c.Limits.MaxDepth <= 0 {
		c.Limits.MaxDepth = wire.DefaultLimits.MaxDepth
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.FrameTimeout, 10*time.Second)
	def(&c.WriteTimeout, 10*time.Second)
	def(&c.SlowReaderTimeout, 5*time.Second)
	def(&c.HelloTimeout, connDefaults.HelloTimeout.D())
	def(&c.IdleTimeout, connDefaults.IdleTimeout.D())
	defInt := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	defInt(&c.EventQueue, 1024)
	defInt(&c.MaxConns, connDefaults.MaxConns)
	defInt(&c.MaxConnsPerUID, connDefaults.ConnsPerUID)
	defInt(&c.MaxStreams, connDefaults.StreamsPerConn)
	defInt(&c.Slots, 1)
	defInt(&c.MaxQueue, 256)
	defInt(&c.PerCaller, 4)
	defInt(&c.PerUID, connDefaults.PerUID)
	defInt(&c.DefaultMaxTokens, 512)
	if c.Credentials == nil {
		c.Credentials = KernelCredentials
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

func (c Config) schedLimits() scheduler.Limits {
	return scheduler.Limits{Slots: c.Slots, MaxQueue: c.MaxQueue, PerCaller: c.PerCaller, PerUID: c.PerUID}
}

// Server serves the protocol on a listener, backed by one Backend.
type Server struct {
	cfg     Config
	backend atomic.Pointer[backendBox]
	log     *slog.Logger
	auth    access.Authorizer
	sched   *Scheduler
	ops     *ops.Handlers

	mu       sync.Mutex
	conns    *transport.Listener // accepts, caps and counts connections
	stop     context.CancelFunc
	quit     chan struct{} // closed by Shutdown: the HTTP API stops too
	quitOnce sync.Once

	pub      *state.Published // the state subscribers see
	sessions *state.Sessions
	res      *Residency // nil: the backend is always loaded

	store      *state.Store      // nil: no bundle store (pull, verify, update.*, gc are unavailable)
	configFile *state.ConfigFile // nil: no --config (config.set is unavailable)
}

// memoryFreed wakes requests waiting for memory, if residency is on.
func (s *Server) memoryFreed() {
	s.mu.Lock()
	r := s.res
	s.mu.Unlock()
	if r != nil {
		r.MemoryFreed()
	}
}

// useModel makes sure the model is loaded for one request (loading it after
// an unload) and counts the request as running on it until done.
func (s *Server) useModel(ctx context.Context) (context.Context, func(), error) {
	s.mu.Lock()
	r := s.res
	s.mu.Unlock()
	if r == nil {
		return ctx, func() {}, nil
	}
	return r.Acquire(ctx)
}

// New builds a server. The initial state is ready.
func New(b Backend, cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	gid, err := access.ResolveGroup(cfg.AdminGroup)
	if err != nil {
		return nil, err
	}
	daemonUID := uint32(os.Getuid())
	s := &Server{
		cfg: cfg, log: cfg.Logger,
		auth:     access.New(access.Rules{AdminGroup: cfg.AdminGroup, AdminGID: gid, AllowedUIDs: cfg.AllowedUIDs}),
		sched:    scheduler.NewScheduler(cfg.schedLimits()),
		sessions: state.NewSessions(cfg.Sessions),
		pub:      state.NewPublished(wire.StateReady),
		quit:     make(chan struct{}),
	}
	s.ops = ops.New(view{s}, ops.Config{Limits: cfg.Limits, FrameTimeout: cfg.FrameTimeout, WriteTimeout: cfg.WriteTimeout,
		SlowReaderTimeout: cfg.SlowReaderTimeout, EventQueue: cfg.EventQueue, HelloTimeout: cfg.HelloTimeout,
		IdleTimeout: cfg.IdleTimeout, MaxStreams: cfg.MaxStreams, DefaultMaxTokens: cfg.DefaultMaxTokens,
		Tokens: cfg.Tokens}, s.log, s.sched, s.sessions)
	s.conns = &transport.Listener{MaxConns: cfg.MaxConns, MaxConnsPerUID: cfg.MaxConnsPerUID, Credentials: cfg.Credentials,
		Privileged: func(uid uint32) bool { return uid == 0 || uid == daemonUID }}
	s.SetBackend(b)
	return s, nil
}

type backendBox struct{ Backend }

// Backend is the backend serving new requests.
func (s *Server) Backend() Backend { return s.backend.Load().Backend }

// SetBackend switches new requests to b (for example once a model has
// loaded); requests already running finish on the old one.
func (s *Server) SetBackend(b Backend) { s.backend.Store(&backendBox{b}) }

// SetState records the daemon's state and notifies subscribers.
func (s *Server) SetState(state, reason string) {
	s.pub.Set(state, reason)
	s.log.Info("state", "state", state, "reason", reason)
}

func (s *Server) currentState() (state, reason string, changed <-chan struct{}) {
	return s.pub.Current()
}

// Serve accepts connections until ctx ends or an admin sends shutdown, then
// closes every connection (cancelling its work) and returns nil.
func (s *Server) Serve(ctx context.Context, ln *net.UnixListener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.stop = cancel
	s.mu.Unlock()
	return s.conns.Serve(ctx, ln, s.log, s.ops.ServeConn)
}

// Shutdown stops Serve.
func (s *Server) Shutdown() {
	s.quitOnce.Do(func() { close(s.quit) })
	s.mu.Lock()
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}
