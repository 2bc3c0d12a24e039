package transport

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// ErrDaemonRunning is returned by Listen when another process answers on the socket.
var ErrDaemonRunning = errors.New("another daemon is answering on the socket")

// Listen creates the daemon's Unix socket at path, following the rules in
// docs/OPERATIONS.md: the path must fit sun_path; the parent directory must be
// owned by root or this user and not writable by anyone else; an existing
// socket is replaced only when nothing answers on it. The socket is made
// connectable by every local user (authorisation is per connection, from
// peer credentials).
func Listen(path string) (*net.UnixListener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("socket path %q is %d bytes; %s allows at most %d (sun_path); choose a shorter --socket",
			path, len(path), runtime.GOOS, maxSocketPath)
	}
	if err := checkSocketDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod socket %s: %w", path, err)
	}
	return ln, nil
}

// checkSocketDir creates the directory if needed and refuses one that
// someone else could use to swap the socket under us.
func checkSocketDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket directory %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if uid := uint32(os.Getuid()); st.Uid != 0 && st.Uid != uid {
			return fmt.Errorf("socket directory %s is owned by uid %d; it must be owned by root or by the daemon's user (uid %d)", dir, st.Uid, uid)
		}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("socket directory %s has mode %04o: it must not be writable by group or others (e.g. chmod 755 %s)", dir, perm, dir)
	}
	return nil
}

func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("%s: %w", path, ErrDaemonRunning)
	}
	// Nothing answers: a socket left behind by a daemon that died.
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}
