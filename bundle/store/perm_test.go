//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/forgedaemon/forged/internal/otheruid"
)

// TestLockFilesNotOpenableByOthers: another uid can neither open nor flock
// the store's lock files (flock works on a read-only descriptor), in a new
// store and in one an older forged left with open modes, and a lock another
// process took on the old, open lock file no longer blocks the store.
func TestLockFilesNotOpenableByOthers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to start a process as another uid")
	}
	// A directory every uid may enter, as /var/lib is.
	top, err := os.MkdirTemp("", "fstore")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(top)
	os.Chmod(top, 0o755)
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old_layout=%v", old), func(t *testing.T) {
			root := filepath.Join(top, fmt.Sprintf("data%v", old))
			lock := filepath.Join(root, "locks", "blobs.lock")
			if old { // what forged before the fix made: 0755 directories, 0644 locks
				os.MkdirAll(filepath.Join(root, "locks"), 0o755)
				os.Chmod(root, 0o755)
				if err := os.WriteFile(lock, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				// A process holding the old lock file (opened while it was
				// open to everyone) must not keep the store locked.
				held, err := os.Open(lock)
				if err != nil {
					t.Fatal(err)
				}
				defer held.Close()
				if err := unix.Flock(int(held.Fd()), unix.LOCK_SH); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Open(root)
			if err != nil {
				t.Fatal(err)
			}
			unlock, err := s.flock(lock, unix.LOCK_EX, false, nil)
			if err != nil {
				t.Fatalf("the store's own exclusive lock: %v (a lock on the old lock file still holds it)", err)
			}
			unlock()
			if u, err := s.lockRepo(repo); err != nil {
				t.Fatal(err)
			} else {
				u()
			}
			for p, want := range map[string]os.FileMode{root: 0o700, filepath.Join(root, "locks"): 0o700, lock: 0o600,
				filepath.Join(root, "locks", repoPath(repo)+".lock"): 0o600} {
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
					t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
				}
			}
			out := otheruid.Output(t, "TestLockChild", "FORGED_TEST_LOCK="+lock)
			if !strings.Contains(out, "LOCK-EACCES") {
				t.Fatalf("uid 65534 could reach the lock file:\n%s", out)
			}
		})
	}
}

// TestLockChild is the other uid's half of TestLockFilesNotOpenableByOthers.
func TestLockChild(t *testing.T) {
	p := os.Getenv("FORGED_TEST_LOCK")
	if p == "" {
		t.Skip("run by TestLockFilesNotOpenableByOthers")
	}
	f, err := os.Open(p)
	if errors.Is(err, syscall.EACCES) {
		fmt.Println("LOCK-EACCES")
		return
	}
	if err != nil {
		t.Fatalf("open %s: %v (want EACCES)", p, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		fmt.Println("LOCK-HELD")
	}
	fmt.Println("LOCK-OPENED")
}

// TestDataDirMustBePrivate: a data directory, or any directory in it, owned
// by another uid or writable by group or others is refused with an error
// naming the path, the owner and the mode; one only readable by others (an
// older forged's 0755) is made private.
func TestDataDirMustBePrivate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(root string) string // returns the path that must be named
		want  string
	}{
		{"writable by others", func(root string) string {
			p := filepath.Join(root, "snapshots")
			os.Chmod(p, 0o777)
			return p
		}, "drwxrwxrwx"},
		{"writable by group, deep", func(root string) string {
			p := filepath.Join(root, "records", "anemll", "x")
			os.MkdirAll(p, 0o700)
			os.Chmod(p, 0o770)
			return p
		}, "drwxrwx---"},
		{"root writable by others", func(root string) string {
			os.Chmod(root, 0o757)
			return root
		}, "drwxr-xrwx"},
		{"owned by another uid", func(root string) string {
			if os.Getuid() != 0 {
				return ""
			}
			p := filepath.Join(root, "current")
			os.Chown(p, 65534, 65534)
			return p
		}, "uid 65534"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "data")
			if _, err := Open(root); err != nil {
				t.Fatal(err)
			}
			bad := tc.setup(root)
			if bad == "" {
				t.Skip("needs root to chown")
			}
			_, err := Open(root)
			if err == nil || !strings.Contains(err.Error(), bad+":") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want a refusal naming %s and %q", err, bad, tc.want)
			}
			if _, err := OpenExisting(root); err == nil {
				t.Fatal("OpenExisting accepted it")
			}
		})
	}
	root := filepath.Join(t.TempDir(), "data")
	if _, err := Open(root); err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Join(root, "blobs"), 0o755)
	if _, err := Open(root); err != nil {
		t.Fatalf("a 0755 data directory (readable by others, as older forged made it): %v", err)
	}
	for _, p := range []string{root, filepath.Join(root, "blobs")} {
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: mode %v after Open, want 0700", p, fi.Mode().Perm())
		}
	}
}
