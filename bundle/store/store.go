// Package store keeps bundles on local disk: content-addressed read-only
// blobs, one directory tree per installed commit made of hardlinks to the
// blobs (regular files, no symlinks), the served commit per repository
// recorded atomically with the previous one kept for rollback, resumable
// partial downloads, and garbage collection by link count.
//
//	<root>/blobs/sha256/<hex>              read-only file contents
//	<root>/snapshots/<owner>/<name>/<commit>/   a verified bundle tree
//	<root>/records/<owner>/<name>/<commit>.json verification record
//	<root>/refs/<owner>/<name>/<rev>       commit a branch or tag resolved to
//	<root>/current/<owner>/<name>.json     {"commit", "previous"}
//	<root>/partial/<hex>.part (+ .state)   in-flight downloads
//	<root>/pending/<owner>+<name>+<commit>+<ns>.json  blobs not yet fsynced (pending.go)
//	<root>/locks/<owner>/<name>.lock       per-repository flock
//	<root>/locks/settle.lock               settling pending markers
//	<root>/leases/<owner>/<name>/<pid>-<ns>.json  commits a running process serves (lease.go)
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/internal/atomicfile"
	"github.com/forgedaemon/forged/internal/paths"
)

// Store is a local bundle store rooted at a data directory.
type Store struct {
	Root string
	// Client talks to the hub; nil means offline (no network at all).
	Client *hub.Client
	// Workers is the number of files downloaded at once (default 4).
	Workers int
	// FreeSpace reports the bytes available to unprivileged writers under
	// a directory (statfs by default; tests inject a smaller disk).
	FreeSpace func(dir string) (int64, error)
	// Margin is added to the bytes a pull needs before it starts: a fixed
	// amount plus MarginPercent of the download (defaults 256 MiB and 2%).
	MarginBytes   int64
	MarginPercent float64
	// Events receives progress; calls are serialised.
	Events func(Event)
	// BootID identifies the running boot (nil: the platform's; see
	// pending.go). Pulls defer fsync only when it answers.
	BootID func() (string, error)
	// Now is the clock of verification's quiet rule (verify.RefreshQuiet;
	// time.Now if nil): tests move it forward.
	Now func() time.Time

	evMu sync.Mutex
}

// Event is one progress report of a pull, also printed as a JSON line by
// `forgectl pull --json`.
type Event struct {
	Kind    string   `json:"event"` // lock_wait, resolved, repair, plan, file_start, progress, file_done, retry, verify, installed
	Repo    string   `json:"repo,omitempty"`
	Commit  string   `json:"commit,omitempty"`
	Path    string   `json:"path,omitempty"`
	Done    int64    `json:"done_bytes,omitempty"`
	Total   int64    `json:"total_bytes,omitempty"`
	Files   int      `json:"files,omitempty"`
	Active  []string `json:"active,omitempty"`
	Message string   `json:"message,omitempty"`
}

func (s *Store) emit(e Event) {
	if s.Events == nil {
		return
	}
	s.evMu.Lock()
	defer s.evMu.Unlock()
	s.Events(e)
}

// Open prepares the store layout under root and settles the downloads
// that earlier pulls left without fsync (pending.go): synced if they were
// made in this boot, hashed again if not.
func Open(root string) (*Store, error) {
	return OpenBoot(root, nil)
}

// OpenExisting opens the store at root only if one is there: commands that
// read a store (list, verify, gc, rollback) must not create an empty one
// where a mistyped --data points. The error names the directory and how a
// store is made.
func OpenExisting(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("store: empty data directory")
	}
	if fi, err := os.Stat(filepath.Join(root, "blobs", "sha256")); err != nil || !fi.IsDir() {
		what := "nothing has been pulled there"
		if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
			what = "the directory does not exist"
		}
		return nil, fmt.Errorf("no bundle store at %s (%s): forgectl pull --data %s REPO creates one", root, what, root)
	}
	return Open(root)
}

// OpenBoot is Open with the boot identity from bootID (nil: the
// platform's); tests use it to simulate a reboot.
func OpenBoot(root string, bootID func() (string, error)) (*Store, error) {
	if root == "" {
		return nil, errors.New("store: empty data directory")
	}
	if err := secure(root); err != nil {
		return nil, err
	}
	s := &Store{Root: root, Workers: 4, FreeSpace: freeSpace, MarginBytes: 256 << 20, MarginPercent: 2, BootID: bootID}
	if err := s.settle(); err != nil {
		return nil, err
	}
	return s, nil
}

// DataDir picks the data directory: the flag, else $FORGE_DATA, else the
// platform default (internal/paths).
func DataDir(flag string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv("FORGE_DATA"); d != "" {
		return d
	}
	return paths.DataDir()
}

// Offline reports whether FORGE_OFFLINE asks for no network at all.
func Offline() bool {
	v := os.Getenv("FORGE_OFFLINE")
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

func (s *Store) path(parts ...string) string {
	return filepath.Join(append([]string{s.Root}, parts...)...)
}

// repoPath maps "owner/name" to owner/name below a store directory.
func repoPath(repo string) string { return filepath.FromSlash(repo) }

// SnapshotDir is where the tree of repo at commit lives once installed.
func (s *Store) SnapshotDir(repo, commit string) string {
	return s.path("snapshots", repoPath(repo), commit)
}

func (s *Store) blobPath(sum string) string { return s.path("blobs", "sha256", sum) }

func (s *Store) recordPath(repo, commit string) string {
	return s.path("records", repoPath(repo), commit+".json")
}

// State is the served commit of a repository and the one before it.
type State struct {
	Commit   string `json:"commit"`
	Previous string `json:"previous,omitempty"`
}

// Current returns the served state of repo (zero State if none).
func (s *Store) Current(repo string) (State, error) {
	if err := hub.CheckRepo(repo); err != nil {
		return State{}, err
	}
	data, err := os.ReadFile(s.path("current", repoPath(repo)+".json"))
	if os.IsNotExist(err) {
		return State{}, nil
	}
	if err != nil {
		return State{}, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil || !hub.IsCommit(st.Commit) {
		return State{}, fmt.Errorf("%s: corrupt current record for %s", s.path("current", repoPath(repo)+".json"), repo)
	}
	return st, nil
}

func (s *Store) setCurrent(repo string, st State) error {
	p := s.path("current", repoPath(repo)+".json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	data, _ := json.Marshal(st)
	return atomicfile.Write(p, append(data, '\n'), 0o644)
}

// clearCurrent leaves repo without a served revision.
func (s *Store) clearCurrent(repo string) error {
	p := s.path("current", repoPath(repo)+".json")
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(p))
}

// activate makes commit the served revision, keeping the old one as previous.
func (s *Store) activate(repo, commit string) (State, error) {
	cur, err := s.Current(repo)
	if err != nil {
		return State{}, err
	}
	if cur.Commit == commit {
		return cur, nil
	}
	next := State{Commit: commit, Previous: cur.Commit}
	return next, s.setCurrent(repo, next)
}

// resolveLocal maps a revision to a commit without the network.
func (s *Store) resolveLocal(repo, rev string) (string, error) {
	if hub.IsCommit(rev) {
		return rev, nil
	}
	if rev == "" {
		rev = "main"
	}
	if err := bundle.CheckPath(rev); err != nil {
		return "", fmt.Errorf("offline: revision %q: %v", rev, err)
	}
	data, err := os.ReadFile(s.path("refs", repoPath(repo), filepath.FromSlash(rev)))
	if err != nil {
		return "", fmt.Errorf("offline: %s@%s was never resolved on this machine", repo, rev)
	}
	commit := strings.TrimSpace(string(data))
	if !hub.IsCommit(commit) {
		return "", fmt.Errorf("offline: ref %s@%s holds %q, not a commit", repo, rev, commit)
	}
	return commit, nil
}

func (s *Store) writeRef(repo, rev, commit string) error {
	if rev == "" {
		rev = "main"
	}
	if hub.IsCommit(rev) || bundle.CheckPath(rev) != nil {
		return nil
	}
	p := s.path("refs", repoPath(repo), filepath.FromSlash(rev))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(p, []byte(commit+"\n"), 0o644)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
