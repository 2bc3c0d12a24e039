package transport

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shortDir is a fresh directory under /tmp (short enough for sun_path),
// mode 0755, owned by the test's user.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ft")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func wantListenError(t *testing.T, path, want string) {
	t.Helper()
	ln, err := Listen(path)
	if err == nil {
		ln.Close()
		t.Fatalf("Listen(%s) succeeded, want an error containing %q", path, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("Listen(%s): %v, want %q", path, err, want)
	}
}

// The rules on the socket's own directory and the socket file.
func TestSocketListenRules(t *testing.T) {
	dir := shortDir(t)
	wantListenError(t, "/"+strings.Repeat("x", maxSocketPath), "sun_path")

	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o775)
	wantListenError(t, filepath.Join(open, "s"), "must not be writable by group or others")

	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	wantListenError(t, file, "is not a socket")
	wantListenError(t, filepath.Join(file, "s"), "is not a directory")

	// Missing directories are made; a live socket is refused; a stale one replaced.
	path := filepath.Join(dir, "a", "b", "s")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode: %v %v", fi, err)
	}
	if _, err := Listen(path); !errors.Is(err, ErrDaemonRunning) {
		t.Fatalf("second Listen: %v, want ErrDaemonRunning", err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	ln, err = Listen(path)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	ln.Close()

	// A world-writable directory on the way (not sticky) is refused; a
	// sticky one (as /tmp) is not.
	ww := filepath.Join(dir, "ww")
	os.MkdirAll(filepath.Join(ww, "in"), 0o755)
	os.Chmod(ww, 0o777)
	wantListenError(t, filepath.Join(ww, "in", "s"), "writable by every user")
	os.Chmod(ww, 0o777|os.ModeSticky)
	if ln, err := Listen(filepath.Join(ww, "in", "s")); err != nil {
		t.Fatalf("under a sticky directory: %v", err)
	} else {
		ln.Close()
	}

	// A link the daemon's user owns is followed, and its target checked.
	good := filepath.Join(dir, "good")
	os.Mkdir(good, 0o755)
	link := filepath.Join(dir, "link")
	os.Symlink(good, link)
	ln, err = Listen(filepath.Join(link, "s"))
	if err != nil {
		t.Fatalf("through an own link: %v", err)
	}
	ln.Close()
	badLink := filepath.Join(dir, "badlink")
	os.Symlink(open, badLink)
	wantListenError(t, filepath.Join(badLink, "s"), "must not be writable by group or others")
}

// Issue 19 item 6: another user's directory anywhere on the way, or a link
// another user owns, lets them swap the socket; Listen refuses both.
func TestSocketListenRefusesOtherUsersAncestors(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give files to another uid (65534)")
	}
	const other = 65534
	dir := shortDir(t)

	// A root-owned directory inside a directory uid 65534 owns.
	theirs := filepath.Join(dir, "theirs")
	os.MkdirAll(filepath.Join(theirs, "rootdir"), 0o755)
	if err := os.Chown(theirs, other, other); err != nil {
		t.Fatal(err)
	}
	wantListenError(t, filepath.Join(theirs, "rootdir", "s"), "is owned by uid 65534")

	// Their directory as the socket's own directory.
	wantListenError(t, filepath.Join(theirs, "s"), "is owned by uid 65534")

	// A link they own, pointing at a good directory.
	good := filepath.Join(dir, "good")
	os.Mkdir(good, 0o755)
	link := filepath.Join(dir, "link")
	os.Symlink(good, link)
	if err := os.Lchown(link, other, other); err != nil {
		t.Fatal(err)
	}
	wantListenError(t, filepath.Join(link, "s"), "symbolic link on the way to the socket) is owned by uid 65534")

	// A good link whose target lies inside their directory.
	viaTheirs := filepath.Join(dir, "via")
	os.Symlink(filepath.Join(theirs, "rootdir"), viaTheirs)
	wantListenError(t, filepath.Join(viaTheirs, "s"), "is owned by uid 65534")
}

// The kernel names both ends: the accepted side sees the dialler, the
// dialled side the listener (both this process here).
func TestPeerCredentials(t *testing.T) {
	accepted, dialled := pair(t)
	for name, c := range map[string]*net.UnixConn{"accepted": accepted, "dialled": dialled} {
		p, err := KernelCredentials(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.UID != uint32(os.Getuid()) || p.GID != uint32(os.Getgid()) || p.PID != int32(os.Getpid()) {
			t.Errorf("%s: peer %v, want uid=%d gid=%d pid=%d", name, p, os.Getuid(), os.Getgid(), os.Getpid())
		}
	}
}
