package client

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"syscall"

	"github.com/forgedaemon/forged/internal/paths"
	"github.com/forgedaemon/forged/internal/peercred"
)

// DaemonUIDEnv names the environment variable that adds one uid to those a
// client trusts to listen for forged (root and the client's own): for a
// daemon run under a dedicated account.
const DaemonUIDEnv = "FORGE_DAEMON_UID"

// UntrustedListenerError is Dial's error when the process listening on the
// socket is not one the client trusts: another user could have bound the
// path (or swapped a directory on the way) to capture what apps send.
type UntrustedListenerError struct {
	Socket  string
	UID     uint32 // the listener's, from the kernel
	Trusted []uint32
}

func (e *UntrustedListenerError) Error() string {
	return fmt.Sprintf("refusing to talk to the process listening at %s: it runs as uid %d, and forged must run as root or as you (uid %d); set %s to trust a daemon's own account",
		e.Socket, e.UID, os.Getuid(), DaemonUIDEnv)
}

// checkListener reads the listener's uid from the kernel (SO_PEERCRED,
// LOCAL_PEERCRED) and refuses one that is not root, this user or
// $FORGE_DAEMON_UID.
func checkListener(nc *net.UnixConn, path string) error {
	trusted := []uint32{0, uint32(os.Getuid())}
	if s := os.Getenv(DaemonUIDEnv); s != "" {
		uid, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return fmt.Errorf("%s=%q: want a numeric uid (0 … 4294967295)", DaemonUIDEnv, s)
		}
		trusted = append(trusted, uint32(uid))
	}
	p, err := peercred.Read(nc)
	if err != nil {
		return fmt.Errorf("forged at %s: %w", path, err)
	}
	if slices.Contains(trusted, p.UID) {
		return nil
	}
	return &UntrustedListenerError{Socket: path, UID: p.UID, Trusted: trusted}
}

// NotRunningError is Dial's error when nothing listens at Socket: no socket
// there, or a stale one.
type NotRunningError struct {
	Socket string
	Stale  bool   // a socket file is there, but nothing listens on it
	Start  string // how to start forged (forgectl replaces it with what the service manager says)
	Err    error  // the dial error
}

func (e *NotRunningError) Error() string {
	what := "no socket there"
	if e.Stale {
		what = "a stale socket is there: nothing listens on it"
	}
	return fmt.Sprintf("forged is not running at %s (%s); start it with %s", e.Socket, what, e.Start)
}

func (e *NotRunningError) Unwrap() error { return e.Err }

// notListening reports whether a dial error means nothing listens on the
// socket: it does not exist, or it is stale.
func notListening(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

func notRunning(path string, err error) *NotRunningError {
	start := "forged run --socket " + path
	if slices.Contains(paths.SocketLookup(paths.Current()), path) {
		start = "forged start (the installed service; forged install installs it), or forged run --config " +
			paths.Config(path == paths.SystemSocket) + " in the foreground"
	}
	return &NotRunningError{Socket: path, Stale: errors.Is(err, syscall.ECONNREFUSED), Start: start, Err: err}
}
