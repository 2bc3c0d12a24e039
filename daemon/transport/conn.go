package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/forgedaemon/forged/client/wire"
)

var (
	// ErrConnClosed is the cause of a connection's context once its reader stops.
	ErrConnClosed = errors.New("connection closed")
	errSlowReader = errors.New("client stopped reading its events")
)

// Options bound one connection. Zero values are not defaulted here: the
// daemon's Config does that.
type Options struct {
	Limits            wire.Limits   // frame size and nesting bounds
	FrameTimeout      time.Duration // a started frame must complete within this
	WriteTimeout      time.Duration // one blocked write longer than this disconnects
	SlowReaderTimeout time.Duration // a full event queue for this long disconnects
	EventQueue        int           // outgoing messages buffered
	HelloTimeout      time.Duration // the first frame must be complete within this of connecting, and hello accepted (Greeted) before the next read
	IdleTimeout       time.Duration // between frames, a connection that is not Busy is closed after this (0: never)
	// Busy reports whether the connection has work in flight (a stream):
	// such a connection may be silent for as long as it likes.
	Busy func() bool
}

// Conn is one client connection's transport: the reader (Run, on the
// caller's goroutine) decodes validated requests; a writer goroutine fed by
// a bounded queue sends replies and events, flushing whenever the queue is
// empty; a client that stops reading is disconnected.
type Conn struct {
	Peer Peer
	Log  *slog.Logger

	nc         *net.UnixConn
	opts       Options
	ctx        context.Context
	cancel     context.CancelCauseFunc
	out        chan outMsg
	writerDone chan struct{}
	greeted    atomic.Bool
}

type outMsg struct {
	frame   []byte
	written chan struct{} // closed once the frame is flushed (or the write failed)
	last    bool          // close the connection after this frame
}

// NewConn wraps an accepted connection whose peer is known. Its context
// ends when parent does, the reader stops, or a write fails; the socket is
// closed then.
func NewConn(parent context.Context, nc *net.UnixConn, peer Peer, log *slog.Logger, opts Options) *Conn {
	ctx, cancel := context.WithCancelCause(parent)
	return &Conn{
		Peer: peer, Log: log.With("uid", peer.UID, "gid", peer.GID, "pid", peer.PID),
		nc: nc, opts: opts, ctx: ctx, cancel: cancel,
		out: make(chan outMsg, opts.EventQueue), writerDone: make(chan struct{}),
	}
}

// Greeted records that the client's hello was accepted: from now on the
// connection is bound by the idle timeout instead of the hello deadline.
func (c *Conn) Greeted() { c.greeted.Store(true) }

// Context is the connection's context: cancelled when it closes.
func (c *Conn) Context() context.Context { return c.ctx }

// Cancel ends the connection with cause.
func (c *Conn) Cancel(cause error) { c.cancel(cause) }

// Run starts the writer and reads requests, passing each valid one to
// handle (a request that does not decode is answered here) until the
// client hangs up, a frame is too large or too slow, or the connection's
// context ends. It then cancels the context with ErrConnClosed; Close
// finishes the connection.
func (c *Conn) Run(handle func(wire.Request)) {
	stopClose := context.AfterFunc(c.ctx, func() { c.nc.Close() })
	defer stopClose()
	go c.writeLoop()
	c.readLoop(handle)
	c.cancel(ErrConnClosed)
}

// Close closes the socket and waits for the writer to stop.
func (c *Conn) Close() {
	c.nc.Close()
	<-c.writerDone
}

func (c *Conn) readLoop(handle func(wire.Request)) {
	cfg := &c.opts
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var helloBy time.Time // zero: no hello deadline
	if cfg.HelloTimeout > 0 {
		helloBy = time.Now().Add(cfg.HelloTimeout)
	}
	for {
		// Until hello is accepted, everything must happen by helloBy: a
		// connection that never says hello only holds a descriptor. After
		// it, a connection may idle between frames for IdleTimeout, and as
		// long as it likes while a stream is in flight.
		greeted := c.greeted.Load()
		var waitUntil time.Time
		switch {
		case !greeted:
			waitUntil = helloBy
		case cfg.IdleTimeout > 0:
			waitUntil = time.Now().Add(cfg.IdleTimeout)
		}
		c.nc.SetReadDeadline(waitUntil)
		if _, err := br.Peek(1); err != nil {
			var ne net.Error
			switch {
			case !errors.As(err, &ne) || !ne.Timeout():
			case !greeted:
				c.Log.Warn("closing connection: no hello", "timeout", cfg.HelloTimeout)
			case cfg.Busy != nil && cfg.Busy():
				continue
			default:
				c.Log.Info("closing idle connection", "timeout", cfg.IdleTimeout)
			}
			return
		}
		// Once a frame starts it must finish within FrameTimeout, so a
		// half-sent frame cannot pin the connection.
		frameBy := time.Now().Add(cfg.FrameTimeout)
		if !greeted && !helloBy.IsZero() && helloBy.Before(frameBy) {
			frameBy = helloBy
		}
		c.nc.SetReadDeadline(frameBy)
		body, err := wire.ReadFrame(br, cfg.Limits.MaxFrame)
		var tooLarge *wire.TooLargeError
		switch {
		case errors.As(err, &tooLarge):
			c.Log.Warn("closing connection: frame too large", "size", tooLarge.Size, "max", tooLarge.Max)
			c.enqueueLast(wire.Reply{Error: wire.Errorf(wire.CodeTooLarge, "%v; the connection is closed", tooLarge)})
			return
		case err != nil:
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.Log.Warn("closing connection: incomplete frame", "timeout", cfg.FrameTimeout)
			}
			return
		}
		req, err := wire.DecodeRequest(body, cfg.Limits)
		if err != nil {
			c.ReplyError(req.ID, err)
			continue
		}
		handle(req)
	}
}

// writeLoop writes queued messages. It flushes whenever the queue is empty,
// so no message ever waits in the buffer while the writer is idle, and a
// burst of events costs one write instead of one per event.
func (c *Conn) writeLoop() {
	defer close(c.writerDone)
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var written []chan struct{} // waiting for the next flush
	fail := func(err error) {
		if !errors.Is(err, net.ErrClosed) {
			c.Log.Warn("closing connection: write failed", "err", err)
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
		c.nc.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout))
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

// Send queues one message; written, if not nil, is closed once it has been
// written. When the queue stays full for SlowReaderTimeout the client is
// not reading: it is disconnected, which cancels its requests.
func (c *Conn) Send(v any, written chan struct{}) error {
	frame, err := wire.Marshal(v)
	if err != nil {
		c.Log.Error("encode reply", "err", err)
		return err
	}
	if len(frame)-wire.HeaderSize > wire.MaxDaemonFrame {
		// Only a reply can grow this large (tokenize, detokenize): answer
		// its request with an error instead.
		if r, ok := v.(wire.Reply); ok {
			return c.Send(wire.Reply{ID: r.ID, Error: wire.Errorf(wire.CodeTooLarge,
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
	t := time.NewTimer(c.opts.SlowReaderTimeout)
	defer t.Stop()
	select {
	case c.out <- m:
		return nil
	case <-c.ctx.Done():
		return context.Cause(c.ctx)
	case <-t.C:
		c.Log.Warn("closing connection: client is not reading", "queued", cap(c.out), "timeout", c.opts.SlowReaderTimeout)
		c.cancel(errSlowReader)
		return errSlowReader
	}
}

// SendAndWait queues a message and waits until it has been written.
func (c *Conn) SendAndWait(v any) {
	written := make(chan struct{})
	if c.Send(v, written) != nil {
		return
	}
	select {
	case <-written:
	case <-c.ctx.Done():
	}
}

// enqueueLast sends a final message and waits for the writer to flush it.
func (c *Conn) enqueueLast(v any) {
	frame, err := wire.Marshal(v)
	if err != nil {
		return
	}
	select {
	case c.out <- outMsg{frame: frame, last: true}:
	case <-time.After(c.opts.WriteTimeout):
		return
	}
	select {
	case <-c.writerDone:
	case <-time.After(c.opts.WriteTimeout):
	}
}

// ReplyError answers request id with err.
func (c *Conn) ReplyError(id uint64, err error) {
	c.Send(wire.Reply{ID: id, Error: ToWireError(err)}, nil)
}

// ToWireError is err as the protocol's error: a *wire.Error as it is,
// anything else internal.
func ToWireError(err error) *wire.Error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	return &wire.Error{Code: wire.CodeInternal, Message: err.Error()}
}
