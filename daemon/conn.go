package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/forgedaemon/forged/client/wire"
)

var (
	errConnClosed = errors.New("connection closed")
	errSlowReader = errors.New("client stopped reading its events")
)

// conn is one client connection: a reader goroutine (this one), a writer
// goroutine fed by a bounded queue, and a goroutine per streaming request.
type conn struct {
	s      *Server
	nc     *net.UnixConn
	peer   Peer
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelCauseFunc
	out    chan outMsg
	reqs   sync.WaitGroup // streaming request goroutines

	mu       sync.Mutex
	client   string // from hello; "" before it
	inflight map[uint64]context.CancelCauseFunc
	sessions map[string]*session
}

type outMsg struct {
	frame   []byte
	written chan struct{} // closed once the frame is flushed (or the write failed)
	last    bool          // close the connection after this frame
}

func (s *Server) serveConn(parent context.Context, nc *net.UnixConn) {
	peer, err := s.cfg.Credentials(nc)
	if err != nil {
		s.log.Warn("closing connection: cannot read peer credentials", "err", err)
		nc.Close()
		return
	}
	ctx, cancel := context.WithCancelCause(parent)
	c := &conn{
		s: s, nc: nc, peer: peer, ctx: ctx, cancel: cancel,
		log:      s.log.With("uid", peer.UID, "gid", peer.GID, "pid", peer.PID),
		out:      make(chan outMsg, s.cfg.EventQueue),
		inflight: map[uint64]context.CancelCauseFunc{},
		sessions: map[string]*session{},
	}
	stopClose := context.AfterFunc(ctx, func() { nc.Close() })
	defer stopClose()
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()

	writerDone := make(chan struct{})
	go c.writeLoop(writerDone)
	c.readLoop(writerDone)

	cancel(errConnClosed)
	c.reqs.Wait()
	c.closeSessions()
	nc.Close()
	<-writerDone
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (c *conn) readLoop(writerDone <-chan struct{}) {
	cfg := &c.s.cfg
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		// Idle between frames is fine; once a frame starts it must finish
		// within FrameTimeout, so a half-sent frame cannot pin the connection.
		c.nc.SetReadDeadline(time.Time{})
		if _, err := br.Peek(1); err != nil {
			return
		}
		c.nc.SetReadDeadline(time.Now().Add(cfg.FrameTimeout))
		body, err := wire.ReadFrame(br, cfg.Limits.MaxFrame)
		var tooLarge *wire.TooLargeError
		switch {
		case errors.As(err, &tooLarge):
			c.log.Warn("closing connection: frame too large", "size", tooLarge.Size, "max", tooLarge.Max)
			c.enqueueLast(wire.Reply{Error: wire.Errorf(wire.CodeTooLarge, "%v; the connection is closed", tooLarge)}, writerDone)
			return
		case err != nil:
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.log.Warn("closing connection: incomplete frame", "timeout", cfg.FrameTimeout)
			}
			return
		}
		req, err := wire.DecodeRequest(body, cfg.Limits)
		if err != nil {
			c.replyErr(req.ID, err)
			continue
		}
		c.handle(req)
	}
}

// writeLoop writes queued messages. It flushes whenever the queue is empty,
// so no message ever waits in the buffer while the writer is idle, and a
// burst of events costs one write instead of one per event.
func (c *conn) writeLoop(done chan<- struct{}) {
	defer close(done)
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var written []chan struct{} // waiting for the next flush
	fail := func(err error) {
		if !errors.Is(err, net.ErrClosed) {
			c.log.Warn("closing connection: write failed", "err", err)
		}
		c.cancel(err)
	}
	for {
		var m outMsg
		select {
		case m = <-c.out:
		case <-c.ctx.Done():
			return
		}
		c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
		for {
			if _, err := bw.Write(m.frame); err != nil {
				fail(err)
				return
			}
			if m.written != nil {
				written = append(written, m.written)
			}
			if m.last {
				break
			}
			select {
			case m = <-c.out:
				continue
			default:
			}
			break
		}
		err := bw.Flush()
		for _, w := range written {
			close(w)
		}
		written = written[:0]
		if err != nil {
			fail(err)
			return
		}
		if m.last {
			return
		}
	}
}

// send queues one message. When the queue stays full for SlowReaderTimeout
// the client is not reading: disconnect it, which cancels its requests.
func (c *conn) send(v any, written chan struct{}) error {
	frame, err := wire.Marshal(v)
	if err != nil {
		c.log.Error("encode reply", "err", err)
		return err
	}
	if len(frame)-wire.HeaderSize > wire.MaxDaemonFrame {
		// Only a reply can grow this large (tokenize, detokenize): answer
		// its request with an error instead.
		if r, ok := v.(wire.Reply); ok {
			return c.send(wire.Reply{ID: r.ID, Error: wire.Errorf(wire.CodeTooLarge,
				"the result is %d bytes, over the %d-byte limit of daemon frames; split the request", len(frame)-wire.HeaderSize, wire.MaxDaemonFrame)}, written)
		}
		return fmt.Errorf("event of %d bytes exceeds the frame limit", len(frame))
	}
	m := outMsg{frame: frame, written: written}
	select {
	case c.out <- m:
		return nil
	case <-c.ctx.Done():
		return context.Cause(c.ctx)
	default:
	}
	t := time.NewTimer(c.s.cfg.SlowReaderTimeout)
	defer t.Stop()
	select {
	case c.out <- m:
		return nil
	case <-c.ctx.Done():
		return context.Cause(c.ctx)
	case <-t.C:
		c.log.Warn("closing connection: client is not reading", "queued", cap(c.out), "timeout", c.s.cfg.SlowReaderTimeout)
		c.cancel(errSlowReader)
		return errSlowReader
	}
}

// sendAndWait queues a message and waits until it has been written.
func (c *conn) sendAndWait(v any) {
	written := make(chan struct{})
	if c.send(v, written) != nil {
		return
	}
	select {
	case <-written:
	case <-c.ctx.Done():
	}
}

// enqueueLast sends a final message and waits for the writer to flush it.
func (c *conn) enqueueLast(v any, writerDone <-chan struct{}) {
	frame, err := wire.Marshal(v)
	if err != nil {
		return
	}
	select {
	case c.out <- outMsg{frame: frame, last: true}:
	case <-time.After(c.s.cfg.WriteTimeout):
		return
	}
	select {
	case <-writerDone:
	case <-time.After(c.s.cfg.WriteTimeout):
	}
}

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

func (c *conn) replyErr(id uint64, err error) {
	c.send(wire.Reply{ID: id, Error: toWireError(err)}, nil)
}

func toWireError(err error) *wire.Error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	return &wire.Error{Code: wire.CodeInternal, Message: err.Error()}
}

func (c *conn) clientName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}
