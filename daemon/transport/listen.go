package transport

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// ErrDaemonRunning is returned by Listen when another process answers on the socket.
var ErrDaemonRunning = errors.New("another daemon is answering on the socket")

// Listen creates the daemon's Unix socket at path, following the rules in
// docs/OPERATIONS.md: the path must fit sun_path; the directories on the way
// must be owned by root or this user and not writable by anyone else
// (checkSocketDir); an existing
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

// checkSocketDir creates the directory if needed and refuses a path that
// anyone but root or the daemon's user could change: walking from / with
// lstat, every directory on the way must be owned by root or the daemon's
// uid and not writable by others (unless sticky, as /tmp is, where others
// cannot rename what they do not own) nor by a group other than a system
// one; the socket's own directory must not be writable by group or others
// at all. A symbolic link on the way is followed only when root or the
// daemon's uid owns it, and its target is walked by the same rules: a link
// or a directory another user controls could be swapped to point the
// socket at their listener.
func checkSocketDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	uid := uint32(os.Getuid())
	resolved := "/"
	rest := splitPath(abs)
	if err := checkOwner("/", uid); err != nil {
		return err
	}
	for hops := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		p := filepath.Join(resolved, name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			// Made by us, in a directory only we or root can write.
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("socket directory: %w", err)
			}
			fi, err = os.Lstat(p)
		}
		if err != nil {
			return fmt.Errorf("socket directory: %w", err)
		}
		if err := checkOwner(p, uid); err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if hops++; hops > 40 {
				return fmt.Errorf("socket directory %s: too many symbolic links", dir)
			}
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("socket directory: %w", err)
			}
			if filepath.IsAbs(target) {
				resolved = "/"
			}
			rest = append(splitPath(target), rest...)
			continue
		}
		if !fi.IsDir() {
			return fmt.Errorf("socket directory %s: %s is not a directory", dir, p)
		}
		perm := fi.Mode().Perm()
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case len(rest) == 0 && perm&0o022 != 0:
			return fmt.Errorf("socket directory %s has mode %04o: it must not be writable by group or others (e.g. chmod 755 %s)", p, perm, p)
		case fi.Mode()&fs.ModeSticky != 0:
			// Others may add entries but not rename or remove ours.
		case perm&0o002 != 0:
			return fmt.Errorf("socket directory %s: %s has mode %04o, writable by every user, who could replace what is inside it", dir, p, perm)
		case perm&0o020 != 0 && st != nil && !systemGroup(st.Gid):
			return fmt.Errorf("socket directory %s: %s has mode %04o, writable by group %d, whose members could replace what is inside it", dir, p, perm, st.Gid)
		}
		resolved = p
	}
	return nil
}

// checkOwner refuses p (lstat: a link itself) unless root or uid owns it.
func checkOwner(p string, uid uint32) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 || st.Uid == uid {
		return nil
	}
	what := "directory"
	if fi.Mode()&fs.ModeSymlink != 0 {
		what = "symbolic link"
	}
	return fmt.Errorf("socket directory: %s (a %s on the way to the socket) is owned by uid %d; every directory and link on the path must be owned by root or by the daemon's user (uid %d)", p, what, st.Uid, uid)
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
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
