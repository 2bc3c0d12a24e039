package transport

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/vmihailenco/msgpack/v5"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// pair is a connected pair of Unix sockets: the daemon's end and the client's.
func pair(t *testing.T) (srv, cli *net.UnixConn) {
	t.Helper()
	path := filepath.Join(shortDir(t), "s")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return s, c.(*net.UnixConn)
}

func testOptions() Options {
	return Options{Limits: wire.DefaultLimits, FrameTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		SlowReaderTimeout: 5 * time.Second, EventQueue: 16}
}

// runConn serves srv with opts, handing requests to handle, until it ends.
func runConn(t *testing.T, srv *net.UnixConn, opts Options, handle func(*Conn, wire.Request)) (*Conn, chan struct{}) {
	t.Helper()
	c := NewConn(context.Background(), srv, Peer{}, quiet, opts)
	done := make(chan struct{})
	go func() {
		c.Run(func(r wire.Request) { handle(c, r) })
		c.Close()
		close(done)
	}()
	t.Cleanup(func() { c.Cancel(errors.New("test over")); <-done })
	return c, done
}

func writeFrame(t *testing.T, w io.Writer, v any) {
	t.Helper()
	f, err := wire.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(f); err != nil {
		t.Fatal(err)
	}
}

// readReply reads one daemon frame as a map; io.EOF once the daemon closed.
func readReply(br *bufio.Reader) (map[string]any, error) {
	body, err := wire.ReadFrame(br, wire.MaxDaemonFrame)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, msgpack.Unmarshal(body, &m)
}

func errorOf(m map[string]any) (code, msg string) {
	e, _ := m["error"].(map[string]any)
	code, _ = e["code"].(string)
	msg, _ = e["message"].(string)
	return code, msg
}

// waitClosed reads until the daemon closes the connection, failing on any
// frame that is not an error and after a generous safety limit.
func waitClosed(t *testing.T, cli *net.UnixConn, br *bufio.Reader) {
	t.Helper()
	cli.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		m, err := readReply(br)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return
		}
		if err != nil {
			t.Fatalf("waiting for the daemon to close: %v", err)
		}
		if m["ok"] == true {
			t.Fatalf("reply %v while waiting for the close", m)
		}
	}
}

// Framing: a valid request reaches the handler; a frame the validator
// refuses is answered bad_request and the connection goes on; an
// oversized one is answered too_large and closes it.
func TestConnFraming(t *testing.T) {
	srv, cli := pair(t)
	got := make(chan wire.Request, 4)
	_, done := runConn(t, srv, testOptions(), func(c *Conn, r wire.Request) {
		got <- r
		c.Send(wire.Reply{ID: r.ID, OK: true, Result: wire.Empty{}}, nil)
	})
	br := bufio.NewReader(cli)
	writeFrame(t, cli, map[string]any{"id": 3, "op": "status"})
	if r := <-got; r.ID != 3 || r.Op != "status" {
		t.Fatalf("handled %+v", r)
	}
	if m, err := readReply(br); err != nil || m["ok"] != true {
		t.Fatalf("reply %v %v", m, err)
	}
	// {id: 4, op: "a", op: "b"}: refused before the handler, for id 4.
	dup := []byte{0x83, 0xa2, 'i', 'd', 0x04, 0xa2, 'o', 'p', 0xa1, 'a', 0xa2, 'o', 'p', 0xa1, 'b'}
	cli.Write(append([]byte{0, 0, 0, byte(len(dup))}, dup...))
	m, err := readReply(br)
	if code, msg := errorOf(m); err != nil || code != wire.CodeBadRequest || m["id"] != int8(4) || !strings.Contains(msg, `"op" twice`) {
		t.Fatalf("duplicate key: %v %v", m, err)
	}
	writeFrame(t, cli, map[string]any{"id": 5, "op": "status"})
	if r := <-got; r.ID != 5 {
		t.Fatalf("after a bad frame: %+v", r)
	}
	readReply(br)
	cli.Write([]byte{0, 0x20, 0, 0}) // 2 MiB announced
	m, err = readReply(br)
	if code, _ := errorOf(m); err != nil || code != wire.CodeTooLarge {
		t.Fatalf("oversized: %v %v", m, err)
	}
	waitClosed(t, cli, br)
	<-done
}

// A connection that sends no hello is closed at the hello deadline, even
// if it keeps sending other frames; one that sent hello (Greeted) is not.
func TestConnHelloDeadline(t *testing.T) {
	opts := testOptions()
	opts.HelloTimeout = 100 * time.Millisecond
	srv, cli := pair(t)
	_, done := runConn(t, srv, opts, func(c *Conn, r wire.Request) {
		c.Send(wire.Reply{ID: r.ID, Error: wire.Errorf(wire.CodeProtocolVersion, "hello first")}, nil)
	})
	br := bufio.NewReader(cli)
	writeFrame(t, cli, map[string]any{"id": 1, "op": "status"})
	waitClosed(t, cli, br)
	<-done

	// Greeted: the hello deadline no longer applies (no idle timeout set).
	srv, cli = pair(t)
	handled := make(chan uint64, 2)
	c, _ := runConn(t, srv, opts, func(c *Conn, r wire.Request) {
		c.Greeted()
		handled <- r.ID
	})
	writeFrame(t, cli, map[string]any{"id": 1, "op": "hello"})
	<-handled
	time.Sleep(3 * opts.HelloTimeout) // past the deadline it had
	writeFrame(t, cli, map[string]any{"id": 2, "op": "status"})
	if id := <-handled; id != 2 || c.Context().Err() != nil {
		t.Fatalf("greeted connection: handled %d, context %v", id, c.Context().Err())
	}
}

// Between frames a connection with nothing in flight is closed after the
// idle timeout; one that reports work in flight (Busy) is kept however
// long it is silent.
func TestConnIdleTimeout(t *testing.T) {
	opts := testOptions()
	opts.IdleTimeout = 50 * time.Millisecond
	greet := func(c *Conn, r wire.Request) { c.Greeted() }

	srv, cli := pair(t)
	_, done := runConn(t, srv, opts, greet)
	writeFrame(t, cli, map[string]any{"id": 1, "op": "hello"})
	waitClosed(t, cli, bufio.NewReader(cli))
	<-done

	var asked atomic.Int32
	busyPast := make(chan struct{})
	opts.Busy = func() bool {
		if asked.Add(1) == 3 {
			close(busyPast) // three idle timeouts passed while busy
		}
		return true
	}
	srv, cli = pair(t)
	handled := make(chan uint64, 2)
	c, _ := runConn(t, srv, opts, func(c *Conn, r wire.Request) { c.Greeted(); handled <- r.ID })
	writeFrame(t, cli, map[string]any{"id": 1, "op": "hello"})
	<-handled
	<-busyPast
	writeFrame(t, cli, map[string]any{"id": 2, "op": "status"})
	if id := <-handled; id != 2 || c.Context().Err() != nil {
		t.Fatalf("busy connection: handled %d, context %v", id, c.Context().Err())
	}
}

// The writer flushes when its queue is empty: a single reply arrives
// without anything else being sent.
func TestConnWriterFlushesAlone(t *testing.T) {
	srv, cli := pair(t)
	c, _ := runConn(t, srv, testOptions(), func(*Conn, wire.Request) {})
	c.SendAndWait(wire.Reply{ID: 9, OK: true, Result: wire.Empty{}})
	m, err := readReply(bufio.NewReader(cli))
	if err != nil || m["id"] != int8(9) {
		t.Fatalf("reply %v %v", m, err)
	}
	// A reply past the daemon's frame limit becomes too_large for its id.
	huge := wire.TokenizeResult{IDs: make([]uint32, wire.MaxDaemonFrame/4)}
	for i := range huge.IDs {
		huge.IDs[i] = 1 << 31
	}
	c.SendAndWait(wire.Reply{ID: 10, OK: true, Result: huge})
	m, err = readReply(bufio.NewReader(cli))
	if code, msg := errorOf(m); err != nil || m["id"] != int8(10) || code != wire.CodeTooLarge || !strings.Contains(msg, "split the request") {
		t.Fatalf("oversized reply: %v %v", m, err)
	}
}

// Backpressure: a client that stops reading fills the socket and then the
// queue; after SlowReaderTimeout the connection is cancelled and Send
// reports it.
func TestConnSlowReaderDisconnected(t *testing.T) {
	opts := testOptions()
	opts.EventQueue = 2
	opts.SlowReaderTimeout = 50 * time.Millisecond
	srv, _ := pair(t) // the client end never reads
	c, done := runConn(t, srv, opts, func(*Conn, wire.Request) {})
	ev := wire.Event{ID: 1, Event: "token", Data: wire.TokenEvent{Text: strings.Repeat("x", 64<<10)}}
	var err error
	for i := 0; i < 10000 && err == nil; i++ {
		err = c.Send(ev, nil)
	}
	if !errors.Is(err, errSlowReader) || !errors.Is(context.Cause(c.Context()), errSlowReader) {
		t.Fatalf("Send: %v, cause %v; want the slow-reader disconnect", err, context.Cause(c.Context()))
	}
	<-done
}
