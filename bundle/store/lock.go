//go:build unix

package store

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockRepo takes the repository's exclusive flock, waiting if another
// process holds it. The kernel drops it if the process dies.
func (s *Store) lockRepo(repo string) (func(), error) {
	return s.flock(s.path("locks", repoPath(repo)+".lock"), unix.LOCK_EX, true, func() {
		s.emit(Event{Kind: "lock_wait", Repo: repo, Message: "another process is downloading this repository; waiting"})
	})
}

// tryLockRepo takes the repository's lock only if it is free; a busy lock
// is errLocked.
func (s *Store) tryLockRepo(repo string) (func(), error) {
	return s.flock(s.path("locks", repoPath(repo)+".lock"), unix.LOCK_EX, false, nil)
}

// lockSettle serialises the settling of pending markers from an earlier
// boot across processes (see settle). It is always taken before any
// repository lock, never while holding one.
func (s *Store) lockSettle() (func(), error) {
	return s.flock(s.path("locks", "settle.lock"), unix.LOCK_EX, true, nil)
}

// lockBlobs guards blobs that nothing links yet. A pull holds it shared
// from its first download to the snapshot rename; gc holds it exclusive
// while it deletes blobs with one link and partial downloads, which is
// what a pull's stored-but-not-yet-linked blobs and its in-flight files
// look like. Taken after a repository lock, never before one.
func (s *Store) lockBlobs(exclusive bool) (func(), error) {
	how, waiting := unix.LOCK_SH, func() {
		s.emit(Event{Kind: "lock_wait", Message: "gc is removing unused blobs; waiting"})
	}
	if exclusive {
		how, waiting = unix.LOCK_EX, func() {
			s.emit(Event{Kind: "lock_wait", Message: "a pull is storing blobs; waiting for it to finish"})
		}
	}
	return s.flock(s.path("locks", "blobs.lock"), how, true, waiting)
}

var errLocked = errors.New("locked by another process")

// flock takes a flock (how: LOCK_EX or LOCK_SH) on p. Without wait a
// conflicting lock is errLocked; with it, waiting (after calling waiting,
// if set) until free.
func (s *Store) flock(p string, how int, wait bool, waiting func()) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, err
	}
	// 0600: anyone who can open a lock file can flock it (perm.go).
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		if !wait {
			f.Close()
			return nil, errLocked
		}
		if waiting != nil {
			waiting()
		}
		for {
			err = unix.Flock(int(f.Fd()), how)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	return func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// freeSpace returns the bytes available to unprivileged users under dir.
func freeSpace(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// linkCount is the number of hardlinks to a file.
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}
