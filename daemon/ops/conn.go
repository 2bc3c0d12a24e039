package ops

import (
	"context"
	"log/slog"
	"net"
	"sync"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/state"
	"github.com/forgedaemon/forged/daemon/transport"
)

// conn is one client connection: its transport (reader, writer, queue), the
// hello it sent, its in-flight streaming requests and its sessions.
type conn struct {
	*transport.Conn
	s    *Handlers
	peer transport.Peer
	log  *slog.Logger
	ctx  context.Context
	reqs sync.WaitGroup // streaming request goroutines

	mu       sync.Mutex
	client   string // from hello; "" before it
	inflight map[uint64]context.CancelCauseFunc
	sessions *state.Owner // this connection's part of the server's session table
}

// ServeConn serves one accepted connection of peer until it closes.
func (s *Handlers) ServeConn(parent context.Context, nc *net.UnixConn, peer transport.Peer) {
	c := &conn{s: s, peer: peer, inflight: map[uint64]context.CancelCauseFunc{}, sessions: s.sessions.Join(peer.UID)}
	c.Conn = transport.NewConn(parent, nc, peer, s.log, transport.Options{Limits: s.cfg.Limits, FrameTimeout: s.cfg.FrameTimeout,
		WriteTimeout: s.cfg.WriteTimeout, SlowReaderTimeout: s.cfg.SlowReaderTimeout, EventQueue: s.cfg.EventQueue,
		HelloTimeout: s.cfg.HelloTimeout, IdleTimeout: s.cfg.IdleTimeout, Busy: c.busy})
	c.log, c.ctx = c.Conn.Log, c.Conn.Context()
	c.Run(c.handle)

	c.reqs.Wait()
	c.closeSessions()
	c.Close()
}

// busy reports whether a request is in flight or a session is open: such
// a connection is not idle, however long it stays silent (a chat REPL
// left open keeps its conversation; sessions are capped per connection
// and per uid, and their state is freed under memory pressure).
func (c *conn) busy() bool {
	c.mu.Lock()
	n := len(c.inflight)
	c.mu.Unlock()
	return n > 0 || c.sessions.Len() > 0
}

func (c *conn) send(v any, written chan struct{}) error { return c.Send(v, written) }

func (c *conn) sendAndWait(v any) { c.SendAndWait(v) }

func (c *conn) reply(id uint64, result any, err error) {
	if err == errAlreadyReplied {
		return
	}
	if err != nil {
		c.replyErr(id, err)
		return
	}
	if result == nil {
		result = wire.Empty{}
	}
	c.send(wire.Reply{ID: id, OK: true, Result: result}, nil)
}

func (c *conn) replyErr(id uint64, err error) { c.ReplyError(id, err) }

func (c *conn) clientName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}
