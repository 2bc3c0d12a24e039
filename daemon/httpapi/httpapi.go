// Package httpapi is the daemon's OpenAI-compatible HTTP API (docs/HTTP.md):
// HTTP/1.1 on a Unix socket (the caller is who the kernel says, as on the
// msgpack socket) and optionally on loopback TCP (the caller is the app its
// bearer token names). Requests run through daemon/ops — the same
// authorisation, admission, scheduler, per-caller limits and generation as
// the msgpack ops; no admin op is reachable here.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/daemon/ops"
	"github.com/forgedaemon/forged/daemon/tokens"
	"github.com/forgedaemon/forged/daemon/transport"
)

// Options bound and identify the API's connections. Zero durations and
// sizes take the defaults in docs/HTTP.md.
type Options struct {
	Credentials   transport.CredentialSource // the kernel's peer credentials on the Unix socket
	Tokens        *tokens.Store              // bearer tokens for TCP; nil: every TCP request is 401
	MaxBody       int64                      // request body bytes (default 1 MiB, max_frame)
	HeaderTimeout time.Duration              // request line, headers and body must arrive within this (default 10 s)
	WriteTimeout  time.Duration              // one write blocked longer than this drops the connection (default 10 s)
	IdleTimeout   time.Duration              // a keep-alive connection idle this long is closed (default the config's http.idle_timeout, 60 s)
	Logger        *slog.Logger
}

// MaxHeaderBytes bounds the request line and headers.
const MaxHeaderBytes = 64 << 10

// DefaultClient is the app name of a Unix-socket caller that sends no
// X-Forge-App header.
const DefaultClient = "http"

// API serves the OpenAI-compatible endpoints over the op handlers.
type API struct {
	h    *ops.Handlers
	opts Options
	log  *slog.Logger
	ids  atomic.Uint64 // request ids shown in status
	mux  *http.ServeMux
}

// New builds the API over h.
func New(h *ops.Handlers, opts Options) *API {
	if opts.Credentials == nil {
		opts.Credentials = transport.KernelCredentials
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 1 << 20
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.HeaderTimeout, 10*time.Second)
	def(&opts.WriteTimeout, 10*time.Second)
	def(&opts.IdleTimeout, config.Default().HTTP.IdleTimeout.D())
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a := &API{h: h, opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	a.mux.HandleFunc("POST /v1/chat/completions", a.chatCompletions)
	a.mux.HandleFunc("POST /v1/completions", a.completions)
	a.mux.HandleFunc("GET /v1/models", a.models)
	a.mux.HandleFunc("GET /v1/models/{id...}", a.model)
	a.mux.HandleFunc("GET /health", a.health)
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, Type: "invalid_request_error", Code: strp("unknown_url"),
			Message: fmt.Sprintf("no endpoint %s %s (docs/HTTP.md lists them; admin operations are served only on the msgpack socket)", r.Method, r.URL.Path)})
	})
	return a
}

// Serve serves HTTP on ln (a Unix socket from transport.Listen or a
// loopback TCP listener from ListenTCP) until ctx ends, then closes every
// connection, cancelling its requests, and returns nil.
func (a *API) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           a,
		ReadHeaderTimeout: a.opts.HeaderTimeout,
		IdleTimeout:       a.opts.IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ConnContext:       a.connContext,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// conn is what a connection says about its caller, read once at accept.
type conn struct {
	unix bool
	peer transport.Peer
	err  error // the peer credentials could not be read, or TCP from off the machine
}

type connKey struct{}

func (a *API) connContext(ctx context.Context, c net.Conn) context.Context {
	ci := &conn{}
	if cc, ok := c.(*transport.Counted); ok { // the daemon's caps read the peer already
		if _, unix := cc.Conn.(*net.UnixConn); unix {
			ci.unix, ci.peer = true, cc.Peer
			return context.WithValue(ctx, connKey{}, ci)
		}
		c = cc.Conn
	}
	switch nc := c.(type) {
	case *net.UnixConn:
		ci.unix = true
		ci.peer, ci.err = a.opts.Credentials(nc)
	case *net.TCPConn:
		if ap, ok := nc.RemoteAddr().(*net.TCPAddr); !ok || !ap.IP.IsLoopback() {
			ci.err = fmt.Errorf("connection from %v, which is not loopback", nc.RemoteAddr())
		}
	default:
		ci.err = fmt.Errorf("unsupported connection type %T", c)
	}
	return context.WithValue(ctx, connKey{}, ci)
}

// who is the caller of a request: authorised, with the identity the
// scheduler's fairness and status use.
type who struct {
	peer   transport.Peer
	client string
}

type whoKey struct{}

// ServeHTTP authenticates every request, then routes it.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, _ := r.Context().Value(connKey{}).(*conn)
	if c == nil {
		c = &conn{err: errors.New("no connection record")}
	}
	id, e := a.identify(c, r)
	if e != nil {
		writeError(w, e)
		return
	}
	tw := &timedWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: a.opts.WriteTimeout}
	a.mux.ServeHTTP(tw, r.WithContext(context.WithValue(r.Context(), whoKey{}, id)))
}

// timedWriter gives every write of a response its own deadline: a client
// that stops reading for WriteTimeout is dropped (and its request
// cancelled), however long the generation before the write took.
type timedWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (t *timedWriter) Write(p []byte) (int, error) {
	t.rc.SetWriteDeadline(time.Now().Add(t.timeout))
	return t.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (Flush, deadlines).
func (t *timedWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

func (a *API) identify(c *conn, r *http.Request) (who, *apiError) {
	unauthorized := func(msg string) *apiError {
		return &apiError{status: http.StatusUnauthorized, Type: "invalid_request_error", Code: strp("invalid_api_key"), Message: msg}
	}
	if c.err != nil {
		return who{}, unauthorized("cannot identify the caller: " + c.err.Error())
	}
	if c.unix {
		if !a.h.Authz().MayUseApps(c.peer) {
			return who{}, &apiError{status: http.StatusForbidden, Type: "permission_error", Code: strp("unauthorized"),
				Message: fmt.Sprintf("uid %d is not allowed to use this daemon", c.peer.UID)}
		}
		client := DefaultClient
		if app := r.Header.Get("X-Forge-App"); app != "" {
			if err := tokens.ValidApp(app); err != nil {
				return who{}, badField("X-Forge-App", "%v", err)
			}
			client = app
		}
		return who{peer: c.peer, client: client}, nil
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return who{}, unauthorized("missing Authorization: Bearer <token> (loopback TCP needs a token: forgectl token create --app NAME)")
	}
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return who{}, unauthorized("the Authorization header must be \"Bearer <token>\"")
	}
	if a.opts.Tokens == nil {
		return who{}, unauthorized("this daemon keeps no tokens")
	}
	t, ok := a.opts.Tokens.Lookup(strings.TrimSpace(tok))
	if !ok {
		return who{}, unauthorized("the token is not valid (wrong, or revoked)")
	}
	return who{peer: transport.Peer{UID: t.CreatedBy}, client: t.App}, nil
}

func callerOf(r *http.Request) who {
	id, _ := r.Context().Value(whoKey{}).(who)
	return id
}

// ListenTCP listens on a loopback address ("127.0.0.1:8080", "[::1]:8080",
// "localhost:8080"); any other address is refused (config.CheckLoopback):
// TCP carries no caller identity, so the API is never offered off the
// machine.
func ListenTCP(addr string) (net.Listener, error) {
	if err := config.CheckLoopback(addr); err != nil {
		return nil, fmt.Errorf("--http-listen: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() { // "localhost" resolved elsewhere
		ln.Close()
		return nil, fmt.Errorf("--http-listen %q resolved to %v, which is not loopback", addr, ln.Addr())
	}
	return ln, nil
}
