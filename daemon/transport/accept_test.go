package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/otheruid"
)

// fakeAcceptor replays a script of accept results, then reports closed.
type fakeAcceptor struct {
	mu     sync.Mutex
	script []func() (*net.UnixConn, error)
}

func (f *fakeAcceptor) AcceptUnix() (*net.UnixConn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.script) == 0 {
		return nil, net.ErrClosed
	}
	next := f.script[0]
	f.script = f.script[1:]
	return next()
}

func (f *fakeAcceptor) Close() error { return nil }

// Accept errors (out of descriptors) back off, doubling from 5 ms to 1 s,
// instead of spinning; an accepted connection resets the backoff.
func TestAcceptBacksOff(t *testing.T) {
	emfile := func() (*net.UnixConn, error) {
		return nil, &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	srv, _ := pair(t)
	var script []func() (*net.UnixConn, error)
	for range 10 {
		script = append(script, emfile)
	}
	script = append(script, func() (*net.UnixConn, error) { return srv, nil }, emfile, emfile)
	var slept []time.Duration
	l := &Listener{
		Credentials: func(*net.UnixConn) (Peer, error) { return Peer{UID: 501}, nil },
		sleep:       func(_ context.Context, d time.Duration) { slept = append(slept, d) },
	}
	served := 0
	l.serve(context.Background(), &fakeAcceptor{script: script}, quiet, func(context.Context, *net.UnixConn, Peer) { served++ })
	ms := time.Millisecond
	want := []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second, 5 * ms, 10 * ms}
	if fmt.Sprint(slept) != fmt.Sprint(want) || served != 1 {
		t.Fatalf("slept %v (served %d), want %v", slept, served, want)
	}
}

// hold is a serve function that says "welcome" and holds the connection
// until the client closes it.
func hold(_ context.Context, nc *net.UnixConn, _ Peer) {
	defer nc.Close()
	f, _ := wire.Marshal(wire.Reply{OK: true, Result: wire.Empty{}})
	nc.Write(f)
	io.Copy(io.Discard, nc)
}

// firstFrame is "welcome" or the refusal's error message.
func firstFrame(nc net.Conn) string {
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	m, err := readReply(bufio.NewReader(nc))
	switch {
	case err != nil:
		return "read: " + err.Error()
	case m["ok"] == true:
		return "welcome"
	}
	code, msg := errorOf(m)
	return code + ": " + msg
}

func serveListener(t *testing.T, l *Listener) string {
	t.Helper()
	path := filepath.Join(shortDir(t), "s")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Serve(ctx, ln, quiet, hold); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return path
}

func dialUnix(t *testing.T, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The per-uid cap refuses one connection too many with a busy frame naming
// the limit; closing one makes room again.
func TestAcceptCapsConnectionsPerUID(t *testing.T) {
	l := &Listener{MaxConns: 100, MaxConnsPerUID: 2}
	path := serveListener(t, l)
	a, b := dialUnix(t, path), dialUnix(t, path)
	for _, c := range []net.Conn{a, b} {
		if got := firstFrame(c); got != "welcome" {
			t.Fatalf("within the cap: %s", got)
		}
	}
	c := dialUnix(t, path)
	if got := firstFrame(c); !strings.HasPrefix(got, "busy: uid "+strconv.Itoa(os.Getuid())+" already has 2 connections open") || !strings.Contains(got, "limits.conns_per_uid") {
		t.Fatalf("over the cap: %s", got)
	}
	if _, err := bufio.NewReader(c).ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("a refused connection stays open: %v", err)
	}
	a.Close()
	for deadline := time.Now().Add(30 * time.Second); l.Open() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d open after a close, want 1", l.Open())
		}
	}
	if got := firstFrame(dialUnix(t, path)); got != "welcome" {
		t.Fatalf("after a close: %s", got)
	}
}

// With real kernel identities (uid 65534 in a child process beside this
// root process): the total cap refuses the other user but never root, and
// the per-uid cap applies to root too.
func TestAcceptCapsWithASecondUID(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to start a process as another uid")
	}
	l := &Listener{MaxConns: 3, MaxConnsPerUID: 4, Privileged: func(uid uint32) bool { return uid == 0 }}
	path := serveListener(t, l)
	for i := range 2 {
		if got := firstFrame(dialUnix(t, path)); got != "welcome" {
			t.Fatalf("root %d: %s", i, got)
		}
	}
	// The child takes the last place, and is refused the next: total cap.
	got, release := runAsNobody(t, path, 2)
	if len(got) != 2 || got[0] != "welcome" || !strings.Contains(got[1], "busy: the daemon has 3 connections open, its limit (limits.max_conns)") {
		t.Fatalf("uid 65534: %q", got)
	}
	// While the other user's connection fills the total, root still gets
	// in, up to its own per-uid cap.
	if got := firstFrame(dialUnix(t, path)); got != "welcome" {
		t.Fatalf("root past the total cap: %s", got)
	}
	if got := firstFrame(dialUnix(t, path)); got != "welcome" {
		t.Fatalf("root's 4th: %s", got)
	}
	if got := firstFrame(dialUnix(t, path)); !strings.Contains(got, "uid 0 already has 4 connections open") {
		t.Fatalf("root's 5th: %s", got)
	}
	release()
}

// runAsNobody runs this test binary as uid 65534 (TestAcceptChild), which
// dials path n times and holds every connection open until release; it
// returns each one's first frame.
func runAsNobody(t *testing.T, path string, n int) (frames []string, release func()) {
	t.Helper()
	cmd := otheruid.Command(t, "TestAcceptChild", "FORGED_TEST_ACCEPT_CHILD="+path+","+strconv.Itoa(n))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		if strings.Contains(err.Error(), "operation not permitted") {
			t.Skipf("cannot start a process as uid 65534 here: %v", err)
		}
		t.Fatal(err)
	}
	release = func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("child as uid 65534: %v", err)
		}
	}
	sc := bufio.NewScanner(stdout)
	for len(frames) < n && sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "FRAME "); ok {
			frames = append(frames, s)
		}
	}
	go io.Copy(io.Discard, stdout)
	return frames, release
}

// TestAcceptChild is the uid-65534 half of TestAcceptCapsWithASecondUID.
func TestAcceptChild(t *testing.T) {
	env := os.Getenv("FORGED_TEST_ACCEPT_CHILD")
	if env == "" {
		t.Skip("run by TestAcceptCapsWithASecondUID")
	}
	path, count, _ := strings.Cut(env, ",")
	n, _ := strconv.Atoi(count)
	for range n {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Println("FRAME " + firstFrame(c))
	}
	io.Copy(io.Discard, os.Stdin) // hold the connections until released
}
