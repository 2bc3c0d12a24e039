//go:build unix

package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A Lease records, in the store, the commits of a repository a running
// process serves, so gc never removes them (a second writer of the store,
// such as forgectl pull and gc, runs beside the daemon). It is a file
//
//	<root>/leases/<owner>/<name>/<pid>-<ns>.json   {"pid", "commits"}
//
// on which the holder keeps an exclusive flock for as long as it lives:
// the kernel drops the flock when the process dies, however it dies, so a
// crashed daemon's lease expires by itself and the next gc removes its
// file. Leases are created, changed and read under the repository's lock.
type Lease struct {
	s    *Store
	repo string
	path string

	mu      sync.Mutex
	f       *os.File // nil once released
	commits []string
}

type leaseFile struct {
	PID     int      `json:"pid"`
	Commits []string `json:"commits"`
}

// Lease starts an empty lease on repo for this process.
func (s *Store) Lease(repo string) (*Lease, error) {
	unlock, err := s.lockRepo(repo)
	if err != nil {
		return nil, err
	}
	defer unlock()
	dir := s.path("leases", repoPath(repo))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	p := filepath.Join(dir, strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 10)+".json")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: lease: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(p)
		return nil, fmt.Errorf("store: lease %s: %w", p, err)
	}
	l := &Lease{s: s, repo: repo, path: p, f: f}
	return l, l.write()
}

// Set makes commits the leased ones (a switch holds the old and the new
// one until it is done). Only installed commits can be leased: those that
// are not (gc or a repair removed them before the lease covered them) are
// left out and named in the error; the others are leased all the same.
func (l *Lease) Set(commits ...string) error {
	unlock, err := l.s.lockRepo(l.repo)
	if err != nil {
		return err
	}
	defer unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("store: lease already released")
	}
	var keep, missing []string
	for _, c := range commits {
		if c == "" || slices.Contains(keep, c) || slices.Contains(missing, c) {
			continue
		}
		if !exists(l.s.SnapshotDir(l.repo, c)) {
			missing = append(missing, c)
			continue
		}
		keep = append(keep, c)
	}
	prev := l.commits
	l.commits = keep
	if err := l.write(); err != nil {
		l.commits = prev
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s@%s is no longer installed in %s", l.repo, strings.Join(missing, ", "), l.s.Root)
	}
	return nil
}

// Commits are the leased commits.
func (l *Lease) Commits() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.commits)
}

// write stores the lease's commits in its file (the caller holds the
// repository lock, so gc never reads it half written).
func (l *Lease) write() error {
	data, _ := json.Marshal(leaseFile{PID: os.Getpid(), Commits: l.commits})
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("store: lease %s: %w", l.path, err)
	}
	if _, err := l.f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("store: lease %s: %w", l.path, err)
	}
	return nil
}

// Release ends the lease: its commits are gc's again.
func (l *Lease) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := os.Remove(l.path)
	l.f.Close() // drops the flock
	l.f = nil
	return err
}

// leased returns the commits of repo that live leases hold and removes
// the files of leases whose holder is gone (their flock is free). A live
// lease that cannot be read is an error: gc must not guess. The caller
// holds the repository lock.
func (s *Store) leased(repo string) (map[string]bool, error) {
	dir := s.path("leases", repoPath(repo))
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		commits, live, err := readLease(p)
		if err != nil {
			return nil, err
		}
		if !live {
			continue
		}
		for _, c := range commits {
			out[c] = true
		}
	}
	return out, nil
}

// readLease reads one lease file. A file whose flock can be taken has no
// living holder: it is removed and reported not live.
func readLease(p string) (commits []string, live bool, err error) {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return nil, false, nil // released meanwhile
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: lease %s: %w", p, err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
		os.Remove(p) // the holder died: the lease expired with it
		return nil, false, nil
	} else if !errors.Is(err, unix.EWOULDBLOCK) {
		return nil, false, fmt.Errorf("store: lease %s: %w", p, err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, false, fmt.Errorf("store: lease %s: %w", p, err)
	}
	var lf leaseFile
	if err := json.Unmarshal(data, &lf); err != nil {
		return nil, false, fmt.Errorf("store: lease %s of a running process cannot be read (%v): not removing anything of its repository", p, err)
	}
	return lf.Commits, true, nil
}
