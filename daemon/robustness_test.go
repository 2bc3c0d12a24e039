package daemon_test

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"

	"github.com/forgedaemon/forged/internal/otheruid"
)

// A client that starts a long stream and never reads is disconnected, its
// request cancelled, and the daemon's memory stays flat.
func TestSlowReaderDisconnected(t *testing.T) {
	ts := startServer(t, daemon.Config{EventQueue: 16, SlowReaderTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond},
		fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	r.write(map[string]any{"id": 2, "op": "generate", "args": map[string]any{"ids": []int{1}, "max_tokens": 60000, "speculative": false}})
	// Never read. The daemon must give up on us.
	waitFor(t, func() bool {
		st := status(t, ts.path)
		return asUint(st["connections"]) == 1 && len(st["requests"].([]any)) == 0
	})
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Errorf("heap grew by %d bytes while a client did not read", grew)
	}
	// Our socket has been closed by the daemon: draining it ends in EOF.
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1<<16)
	for {
		if _, err := r.nc.Read(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("connection not closed")
			}
			break
		}
	}
}

// status opens a fresh connection and returns the status result.
func status(t testing.TB, path string) map[string]any {
	t.Helper()
	r := dialRaw(t, path)
	r.hello()
	res := result(t, r.call(2, "status", nil))
	r.nc.Close()
	return res
}

// Admin ops from a uid that is not root, the daemon's user or in the admin
// group are refused; app ops still work. Credentials are injected.
func TestUnauthorizedInjected(t *testing.T) {
	creds := func(*net.UnixConn) (daemon.Peer, error) { return daemon.Peer{UID: 4242, GID: 4242, PID: 1}, nil }
	var logs lockedBuffer
	ts := startServer(t, daemon.Config{Credentials: creds, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	for i, op := range []string{"shutdown", "config.get", "config.set", "pull", "update.apply", "gc"} {
		msg := expectError(t, r.call(uint64(10+i), op, nil), uint64(10+i), "unauthorized")
		if !strings.Contains(msg, "uid 4242") {
			t.Errorf("%s: message %q does not name the caller", op, msg)
		}
	}
	result(t, r.call(2, "status", nil))
	if l := logs.String(); !strings.Contains(l, `msg="admin op refused" uid=4242 gid=4242 pid=1 op=shutdown client=conformance`) {
		t.Errorf("refused admin op not logged with the caller:\n%s", l)
	}

	// The same uid in the configured admin group is an admin.
	ts2 := startServer(t, daemon.Config{Credentials: creds, AdminGroup: "4242"}, fakeengine.Options{})
	r2 := dialRaw(t, ts2.path)
	r2.hello()
	result(t, r2.call(2, "config.get", nil))

	// An allow-list keeps other users off app ops too.
	ts3 := startServer(t, daemon.Config{Credentials: creds, AllowedUIDs: []uint32{7}}, fakeengine.Options{})
	r3 := dialRaw(t, ts3.path)
	r3.hello()
	expectError(t, r3.call(2, "status", nil), 2, "unauthorized")
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The real thing: a client process running as uid 65534 (nobody), with the
// kernel's SO_PEERCRED, is refused admin ops.
func TestUnauthorizedRealUID(t *testing.T) {
	if sock := os.Getenv("FORGED_TEST_NOBODY_SOCKET"); sock != "" {
		return // the child side runs in TestNobodyChild
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to start a process as another uid")
	}
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	out := runAsNobody(t, "TestNobodyChild", "FORGED_TEST_NOBODY_SOCKET="+ts.path)
	if !strings.Contains(out, "NOBODY-CHECKED") {
		t.Fatalf("child did not run its checks:\n%s", out)
	}
}

// runAsNobody runs one test of this binary as uid 65534 with env added and
// returns its output; the test is skipped where that cannot be done.
func runAsNobody(t *testing.T, test string, env ...string) string {
	t.Helper()
	return otheruid.Output(t, test, env...)
}

// TestNobodyChild is the client half of TestUnauthorizedRealUID.
func TestNobodyChild(t *testing.T) {
	sock := os.Getenv("FORGED_TEST_NOBODY_SOCKET")
	if sock == "" {
		t.Skip("run by TestUnauthorizedRealUID")
	}
	if os.Getuid() != 65534 {
		t.Fatalf("running as uid %d, want 65534", os.Getuid())
	}
	r := dialRaw(t, sock)
	r.hello()
	msg := expectError(t, r.call(2, "shutdown", nil), 2, "unauthorized")
	if !strings.Contains(msg, "uid 65534") {
		t.Fatalf("message %q", msg)
	}
	expectError(t, r.call(3, "config.get", nil), 3, "unauthorized")
	result(t, r.call(4, "status", nil))
	println("NOBODY-CHECKED")
}

// 1,000 connections opened and dropped (some mid-request, some mid-frame)
// leave no goroutines or file descriptors behind.
func TestConnectionChurn(t *testing.T) {
	ts := startServer(t, daemon.Config{FrameTimeout: 100 * time.Millisecond}, fakeengine.Options{TokenDelay: time.Millisecond})
	warm := dialRaw(t, ts.path)
	warm.hello()
	result(t, warm.call(2, "status", nil))
	time.Sleep(50 * time.Millisecond)
	g0, fd0 := runtime.NumGoroutine(), openFDs(t)
	for i := range 1000 {
		nc, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatal(err)
		}
		r := &rawConn{t: t, nc: nc}
		switch i % 4 {
		case 1:
			r.hello()
		case 2:
			r.hello()
			r.write(map[string]any{"id": 2, "op": "generate", "args": map[string]any{"ids": []int{1}, "max_tokens": 1000}})
		case 3:
			nc.Write([]byte{0, 0, 0, 9, 0x81})
		}
		nc.Close()
	}
	var g1, fd1 int
	deadline := time.Now().Add(10 * time.Second)
	for {
		g1, fd1 = runtime.NumGoroutine(), openFDs(t)
		if (g1 <= g0 && fd1 <= fd0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if g1 > g0 || fd1 > fd0 {
		t.Fatalf("after 1000 connections: goroutines %d → %d, fds %d → %d", g0, g1, fd0, fd1)
	}
	if st := status(t, ts.path); asUint(st["connections"]) != 2 {
		t.Errorf("status counts %v connections, want 2 (warm + this one)", st["connections"])
	}
}

func openFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// Socket creation rules.
func TestListenRules(t *testing.T) {
	dir, _ := os.MkdirTemp("", "fl")
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	long := filepath.Join(dir, strings.Repeat("x", 120))
	if _, err := daemon.Listen(long); err == nil || !strings.Contains(err.Error(), "sun_path") {
		t.Errorf("long path: %v", err)
	}
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if _, err := daemon.Listen(filepath.Join(open, "s")); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("world-writable dir: %v", err)
	}
	if os.Getuid() == 0 {
		other := filepath.Join(dir, "other")
		os.Mkdir(other, 0o755)
		os.Chown(other, 65534, 65534)
		if _, err := daemon.Listen(filepath.Join(other, "s")); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("foreign dir: %v", err)
		}
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := daemon.Listen(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("regular file: %v", err)
	}
	// A live daemon is not replaced; a stale socket is.
	path := filepath.Join(dir, "s")
	ln, err := daemon.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := daemon.Listen(path); !errors.Is(err, daemon.ErrDaemonRunning) {
		t.Errorf("second listen: %v", err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket should still exist: %v", err)
	}
	ln2, err := daemon.Listen(path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o666 {
		t.Errorf("socket mode: %v %v", fi, err)
	}
	ln2.Close()
}

// A connection silent past the idle timeout is closed, unless it holds an
// open session: a chat REPL left alone keeps its conversation.
func TestIdleConnectionWithSessionIsKept(t *testing.T) {
	const idle = 150 * time.Millisecond
	ts := startServer(t, daemon.Config{IdleTimeout: idle}, fakeengine.Options{})
	bare, held := dialRaw(t, ts.path), dialRaw(t, ts.path)
	bare.hello()
	held.hello()
	sess := result(t, held.call(2, "session.open", nil))["session"]
	if _, err := bare.tryRead(20 * idle); err == nil {
		t.Fatal("a message on the idle connection; want it closed")
	} else if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("idle connection without sessions: %v, want it closed by the daemon", err)
	}
	time.Sleep(3 * idle)
	if st := result(t, held.call(3, "status", nil)); st["state"] == nil {
		t.Fatalf("status on the connection holding a session: %v", st)
	}
	result(t, held.call(4, "session.close", map[string]any{"session": sess}))
	// With its session closed it is idle like any other.
	if _, err := held.tryRead(20 * idle); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after its session closed: %v, want the connection closed", err)
	}
}
