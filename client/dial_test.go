package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/internal/otheruid"
	"github.com/forgedaemon/forged/internal/paths"
)

// Nothing listening: Dial's own error says so and how to start forged,
// for a missing socket and for a stale one.
func TestDialNotRunning(t *testing.T) {
	dir, _ := os.MkdirTemp("", "fc")
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	_, err := client.Dial(context.Background(), path, client.Options{Name: "t"})
	var nr *client.NotRunningError
	if !errors.As(err, &nr) || nr.Stale || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("no socket: %v", err)
	}
	if want := "forged is not running at " + path + " (no socket there); start it with forged run --socket " + path; err.Error() != want {
		t.Fatalf("no socket:\n%s\nwant\n%s", err, want)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	_, err = client.Dial(context.Background(), path, client.Options{Name: "t"})
	if !errors.As(err, &nr) || !nr.Stale || !strings.Contains(err.Error(), "a stale socket is there") {
		t.Fatalf("stale socket: %v", err)
	}
}

// Apps find the daemon through $FORGE_SOCKET before any default, and Dial
// with no path uses it.
func TestDialFindsForgeSocket(t *testing.T) {
	path, _ := serve(t, fakeengine.Options{})
	t.Setenv(paths.SocketEnv, path)
	if got := client.DefaultSocketPath(); got != path {
		t.Fatalf("DefaultSocketPath %s, want $FORGE_SOCKET %s", got, path)
	}
	c, err := client.Dial(context.Background(), "", client.Options{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	t.Setenv(paths.SocketEnv, "")
	want := paths.SocketLookup(paths.Current())
	if got := client.DefaultSocketPath(); got != want[0] {
		if _, err := os.Stat(got); err != nil { // the later default is taken only when a socket is there
			t.Fatalf("DefaultSocketPath %s, want %s (the first of %v) unless a later one exists", got, want[0], want)
		}
	}
}

// Issue 19 item 6: a listener run by another user (who bound the path, or
// swapped a directory on the way) is refused before the client sends
// anything, hello included.
func TestDialRefusesAnotherUsersListener(t *testing.T) {
	dir, _ := os.MkdirTemp("", "fc")
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	sockDir := filepath.Join(dir, "nobody")
	os.Mkdir(sockDir, 0o755)
	path := filepath.Join(sockDir, "s")
	cmd := otheruid.Command(t, "TestListenerChild", "FORGED_TEST_LISTENER_CHILD="+path)
	if err := os.Chown(sockDir, otheruid.Nobody, otheruid.Nobody); err != nil {
		t.Fatal(err)
	}
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a process as uid 65534 here: %v", err)
	}
	ready := make([]byte, len("LISTENING\n"))
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "LISTENING\n" {
		t.Fatalf("child: %q %v", ready, err)
	}
	t.Setenv(client.DaemonUIDEnv, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a client that sent hello would wait for the answer
	defer cancel()
	_, err := client.Dial(ctx, path, client.Options{Name: "root-secret"})
	var ul *client.UntrustedListenerError
	if !errors.As(err, &ul) || ul.UID != 65534 || !strings.Contains(err.Error(), "runs as uid 65534") {
		t.Fatalf("Dial to uid 65534's listener: %v", err)
	}
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if got, _, _ := strings.Cut(string(rest), "\n"); got != "RECEIVED 0 bytes" {
		t.Fatalf("the other user's listener: %s, want nothing received", got)
	}
}

// TestListenerChild is the uid-65534 listener of
// TestDialRefusesAnotherUsersListener: it accepts one connection and
// reports how many bytes arrived before the client hung up.
func TestListenerChild(t *testing.T) {
	path := os.Getenv("FORGED_TEST_LISTENER_CHILD")
	if path == "" {
		t.Skip("run by TestDialRefusesAnotherUsersListener")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)
	fmt.Println("LISTENING")
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, c)
	fmt.Printf("RECEIVED %d bytes\n", n)
}
