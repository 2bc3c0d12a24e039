package daemon_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/vmihailenco/msgpack/v5"
)

// testServer runs a server on a fresh socket until the test ends.
type testServer struct {
	*daemon.Server
	path   string
	engine *fakeengine.Engine
	done   chan struct{} // closed when Serve returns
}

func startServer(t testing.TB, cfg daemon.Config, opts fakeengine.Options) *testServer {
	t.Helper()
	eng := fakeengine.New(opts)
	ts := startBackend(t, cfg, eng)
	ts.engine = eng
	return ts
}

// startBackend runs a server over any backend on a fresh socket until the test ends.
func startBackend(t testing.TB, cfg daemon.Config, b daemon.Backend) *testServer {
	t.Helper()
	dir, err := os.MkdirTemp("", "fd")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	ln, err := daemon.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := daemon.New(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, path: path, done: make(chan struct{})}
	go func() {
		if err := s.Serve(context.Background(), ln); err != nil {
			t.Errorf("Serve: %v", err)
		}
		close(ts.done)
	}()
	t.Cleanup(func() {
		s.Shutdown()
		select {
		case <-ts.done:
		case <-time.After(5 * time.Second):
			t.Error("server did not stop within 5s")
		}
	})
	return ts
}

// rawConn speaks the protocol with bare frames and msgpack, as
// docs/PROTOCOL.md describes it, without the client package.
type rawConn struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, path string) *rawConn {
	t.Helper()
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

func (r *rawConn) writeBody(body []byte) {
	r.t.Helper()
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	if _, err := r.nc.Write(append(hdr[:], body...)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawConn) write(v any) {
	r.t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		r.t.Fatal(err)
	}
	r.writeBody(b)
}

// read returns the next message as a generic map, failing after 5 s.
func (r *rawConn) read() map[string]any {
	r.t.Helper()
	m, err := r.tryRead(5 * time.Second)
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	return m
}

func (r *rawConn) tryRead(timeout time.Duration) (map[string]any, error) {
	body, err := r.readBody(timeout)
	if err != nil {
		return nil, err
	}
	return decodeBody(body)
}

// readBody returns the next frame's body as it came.
func (r *rawConn) readBody(timeout time.Duration) ([]byte, error) {
	r.nc.SetReadDeadline(time.Now().Add(timeout))
	var hdr [4]byte
	if _, err := io.ReadFull(r.nc, hdr[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(r.nc, body); err != nil {
		return nil, err
	}
	return body, nil
}

func decodeBody(body []byte) (map[string]any, error) {
	dec := msgpack.NewDecoder(bytes.NewReader(body))
	dec.UseLooseInterfaceDecoding(true)
	var m map[string]any
	err := dec.Decode(&m)
	return m, err
}

func (r *rawConn) call(id uint64, op string, args map[string]any) map[string]any {
	r.t.Helper()
	req := map[string]any{"id": id, "op": op}
	if args != nil {
		req["args"] = args
	}
	r.write(req)
	return r.read()
}

// cancelStream cancels the stream target with request cancelID and returns
// the stream's final reply. The two replies may arrive in either order (the
// stream's goroutine races the cancel's reply), and events still on their
// way are skipped.
func (r *rawConn) cancelStream(cancelID, target uint64) map[string]any {
	r.t.Helper()
	r.write(map[string]any{"id": cancelID, "op": "cancel", "args": map[string]any{"id": target}})
	var final map[string]any
	cancelled := false
	for final == nil || !cancelled {
		m := r.read()
		switch {
		case m["event"] != nil:
		case asUint(m["id"]) == cancelID:
			result(r.t, m)
			cancelled = true
		case asUint(m["id"]) == target:
			final = m
		default:
			r.t.Fatalf("while cancelling %d: unexpected reply %v", target, m)
		}
	}
	return final
}

func (r *rawConn) hello() {
	r.t.Helper()
	rep := r.call(1, "hello", map[string]any{"protocol": 1, "client": "conformance"})
	if rep["ok"] != true {
		r.t.Fatalf("hello: %v", rep)
	}
}

// expectError checks a reply is an error with the code.
func expectError(t testing.TB, rep map[string]any, id uint64, code string) string {
	t.Helper()
	if rep["ok"] != false {
		t.Fatalf("want error %s, got %v", code, rep)
	}
	if got := asUint(rep["id"]); got != id {
		t.Errorf("reply id %d, want %d (%v)", got, id, rep)
	}
	e, _ := rep["error"].(map[string]any)
	if e["code"] != code {
		t.Fatalf("want code %s, got %v", code, rep)
	}
	msg, _ := e["message"].(string)
	if msg == "" {
		t.Errorf("error %s has no message", code)
	}
	return msg
}

func asUint(v any) uint64 {
	switch n := v.(type) {
	case uint64:
		return n
	case int64:
		return uint64(n)
	}
	return ^uint64(0)
}

func result(t testing.TB, rep map[string]any) map[string]any {
	t.Helper()
	if rep["ok"] != true {
		t.Fatalf("want ok, got %v", rep)
	}
	r, _ := rep["result"].(map[string]any)
	return r
}
