package store

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/verify"
)

// Installed describes one repository in the store.
type Installed struct {
	Repo      string            `json:"repo"`
	Current   string            `json:"current,omitempty"`
	Previous  string            `json:"previous,omitempty"`
	Snapshots []SnapshotInfo    `json:"snapshots"`
	Refs      map[string]string `json:"refs,omitempty"`
}

// SnapshotInfo is one installed commit.
type SnapshotInfo struct {
	Commit string `json:"commit"`
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
	Path   string `json:"path"`
}

// repos lists "owner/name" for every repository with snapshots or a current record.
func (s *Store) repos() ([]string, error) {
	set := map[string]bool{}
	for _, top := range []string{"snapshots", "current"} {
		owners, err := os.ReadDir(s.path(top))
		if err != nil {
			return nil, err
		}
		for _, o := range owners {
			if !o.IsDir() {
				continue
			}
			names, _ := os.ReadDir(s.path(top, o.Name()))
			for _, n := range names {
				name := strings.TrimSuffix(n.Name(), ".json")
				if repo := o.Name() + "/" + name; hub.CheckRepo(repo) == nil {
					set[repo] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out, nil
}

// snapshots lists the installed commits of repo (not staging trees).
func (s *Store) snapshots(repo string) []string {
	entries, _ := os.ReadDir(s.path("snapshots", repoPath(repo)))
	var out []string
	for _, e := range entries {
		if e.IsDir() && hub.IsCommit(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// List returns every repository in the store with its snapshots.
func (s *Store) List() ([]Installed, error) {
	repos, err := s.repos()
	if err != nil {
		return nil, err
	}
	out := []Installed{}
	for _, repo := range repos {
		st, err := s.Current(repo)
		if err != nil {
			return nil, err
		}
		in := Installed{Repo: repo, Current: st.Commit, Previous: st.Previous, Snapshots: []SnapshotInfo{}, Refs: map[string]string{}}
		for _, c := range s.snapshots(repo) {
			info := SnapshotInfo{Commit: c, Path: s.SnapshotDir(repo, c)}
			if rec, err := s.readRecord(repo, c); err == nil {
				info.Files, info.Bytes = len(rec.Record.Files), rec.bytes()
			}
			in.Snapshots = append(in.Snapshots, info)
		}
		refDir := s.path("refs", repoPath(repo))
		filepath.WalkDir(refDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				data, _ := os.ReadFile(p)
				rel, _ := filepath.Rel(refDir, p)
				in.Refs[filepath.ToSlash(rel)] = strings.TrimSpace(string(data))
			}
			return nil
		})
		out = append(out, in)
	}
	return out, nil
}

// Verify checks the served snapshot of repo. Without full it trusts the
// install record for files whose size, mtime, inode and ctime are
// unchanged; a file hashed again that matched, quiet long enough, goes
// into the record (refreshRecord).
func (s *Store) Verify(repo string, full bool) (*verify.Report, error) {
	commit, err := s.servedCommit(repo)
	if err != nil {
		return nil, err
	}
	return s.verifyCommit(repo, commit, full, false)
}

// VerifyCommit checks the installed snapshot of repo at commit (the one a
// daemon serves, which need not be the store's current one), after
// settling pending downloads like Verify.
func (s *Store) VerifyCommit(repo, commit string, full bool) (*verify.Report, error) {
	if err := hub.CheckRepo(repo); err != nil {
		return nil, err
	}
	if !hub.IsCommit(commit) {
		return nil, fmt.Errorf("%q is not a commit", commit)
	}
	if err := s.settle(); err != nil {
		return nil, err
	}
	return s.verifyCommit(repo, commit, full, false)
}

// verifyCommit checks the installed snapshot of repo at commit; locked
// says the caller holds the repository's lock.
func (s *Store) verifyCommit(repo, commit string, full, locked bool) (*verify.Report, error) {
	rec, err := s.readRecord(repo, commit)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: no install record: %w", repo, commit, err)
	}
	sel := bundle.Selection{Runtime: rec.Selection.Runtime, Plain: rec.Selection.Plain, IncludeExport: rec.Selection.IncludeExport}
	rep, err := verify.Integrity(s.SnapshotDir(repo, commit), verify.Options{Selection: sel, Record: rec.Record, Full: full, Now: s.Now})
	if err == nil && rep.Passed() && len(rep.Refreshed) > 0 {
		s.refreshRecord(repo, commit, rep.Refreshed, locked)
	}
	return rep, err
}

// refreshRecord merges entries of files that were hashed again and
// matched (verify.Report.Refreshed) into commit's install record, so the
// next check trusts them instead of reading them again. It is only an
// optimisation, so it never waits: without the repository's lock (a pull
// or gc is running) or when anything fails, the record stays as it was and
// those files are hashed again next time. Under the lock, so a gc cannot
// have removed the snapshot; only entries whose hash the record already
// holds are replaced.
func (s *Store) refreshRecord(repo, commit string, fresh map[string]verify.RecordEntry, locked bool) {
	if !locked {
		unlock, err := s.tryLockRepo(repo)
		if err != nil {
			return
		}
		defer unlock()
	}
	rec, err := s.readRecord(repo, commit)
	if err != nil || !exists(s.SnapshotDir(repo, commit)) {
		return
	}
	changed := false
	for p, e := range fresh {
		if old, ok := rec.Record.Files[p]; ok && old.SHA256 == e.SHA256 && old != e {
			rec.Record.Files[p] = e
			changed = true
		}
	}
	if changed {
		_ = s.writeRecord(repo, commit, rec) // best effort, as above
	}
}

// UpdateCheck compares the served revision with what a revision resolves to now.
type UpdateCheck struct {
	Repo          string   `json:"repo"`
	Current       string   `json:"current,omitempty"`
	Latest        string   `json:"latest"`
	UpToDate      bool     `json:"up_to_date"`
	ChangedFiles  []string `json:"changed_files"`
	DownloadBytes int64    `json:"download_bytes"` // bytes not already in the store
	TotalBytes    int64    `json:"total_bytes"`
}

// CheckUpdate resolves rev and reads its release.json, without
// downloading anything else, and says what an update would fetch.
func (s *Store) CheckUpdate(ctx context.Context, repo string, o PullOptions) (*UpdateCheck, error) {
	st, err := s.Current(repo)
	if err != nil {
		return nil, err
	}
	return s.CheckUpdateFrom(ctx, repo, st.Commit, o)
}

// CheckUpdateFrom is CheckUpdate against from instead of the current
// record: a daemon compares with the commit it serves, which another
// writer of the store may have moved the record away from.
func (s *Store) CheckUpdateFrom(ctx context.Context, repo, from string, o PullOptions) (*UpdateCheck, error) {
	if s.Client == nil {
		return nil, fmt.Errorf("offline: cannot check %s for updates (FORGE_OFFLINE is set)", repo)
	}
	latest, err := s.Client.ResolveRevision(ctx, repo, o.Revision)
	if err != nil {
		return nil, err
	}
	uc := &UpdateCheck{Repo: repo, Current: from, Latest: latest, UpToDate: latest == from, ChangedFiles: []string{}}
	_, files, _, err := s.fetchSelection(ctx, repo, latest, o.Selection)
	if err != nil {
		return nil, err
	}
	var old map[string]verify.RecordEntry
	if rec, err := s.readRecord(repo, from); err == nil {
		old = rec.Record.Files
	}
	for _, f := range files {
		uc.TotalBytes += f.Bytes
		if e, ok := old[f.Path]; !ok || e.SHA256 != f.SHA256 {
			uc.ChangedFiles = append(uc.ChangedFiles, f.Path)
		}
	}
	for _, f := range s.missingBlobs(files) {
		uc.DownloadBytes += f.Bytes
	}
	return uc, nil
}

// Activate serves an installed commit (for example one pulled with
// KeepCurrent, once the daemon is idle) and keeps the old one as previous.
func (s *Store) Activate(repo, commit string) (State, error) {
	unlock, err := s.lockRepo(repo)
	if err != nil {
		return State{}, err
	}
	defer unlock()
	if _, err := s.readRecord(repo, commit); err != nil || !exists(s.SnapshotDir(repo, commit)) {
		return State{}, fmt.Errorf("%s@%s is not installed", repo, commit)
	}
	return s.activate(repo, commit)
}

// Rollback serves the previous revision again (and remembers the one it
// replaces as the new previous).
func (s *Store) Rollback(repo string) (State, error) {
	unlock, err := s.lockRepo(repo)
	if err != nil {
		return State{}, err
	}
	defer unlock()
	st, err := s.Current(repo)
	if err != nil {
		return State{}, err
	}
	if st.Previous == "" {
		return State{}, fmt.Errorf("%s has no previous revision to roll back to", repo)
	}
	if !exists(s.SnapshotDir(repo, st.Previous)) {
		return State{}, fmt.Errorf("%s: previous revision %s is no longer installed", repo, st.Previous)
	}
	next := State{Commit: st.Previous, Previous: st.Commit}
	return next, s.setCurrent(repo, next)
}

// GCResult reports what gc removed.
type GCResult struct {
	Snapshots  []string `json:"removed_snapshots"`
	Blobs      int      `json:"removed_blobs"`
	Partials   int      `json:"removed_partials"`
	FreedBytes int64    `json:"freed_bytes"`
}

// GC removes snapshots that are neither current nor previous nor leased
// by a running process (lease.go), staging trees, and blobs no snapshot
// links to (link count 1). With partials it
// also drops the partial downloads of interrupted pulls. It holds each
// repository's lock while it works on it and the blob lock while it
// deletes blobs and partials, so it never races a pull.
func (s *Store) GC(partials bool) (*GCResult, error) {
	res := &GCResult{Snapshots: []string{}}
	repos, err := s.repos()
	if err != nil {
		return nil, err
	}
	for _, repo := range repos {
		if err := s.gcRepo(repo, res); err != nil {
			return res, err
		}
	}
	// Blobs: a blob linked from no snapshot has exactly one link, and so
	// does one a pull has stored but not linked yet: wait for pulls.
	unlock, err := s.lockBlobs(true)
	if err != nil {
		return res, err
	}
	defer unlock()
	blobDir := s.path("blobs", "sha256")
	entries, err := os.ReadDir(blobDir)
	if err != nil {
		return res, err
	}
	for _, e := range entries {
		fi, err := os.Lstat(filepath.Join(blobDir, e.Name()))
		if err != nil || !fi.Mode().IsRegular() || linkCount(fi) != 1 {
			continue
		}
		if os.Remove(filepath.Join(blobDir, e.Name())) == nil {
			res.Blobs++
			res.FreedBytes += fi.Size()
		}
	}
	if partials {
		entries, _ := os.ReadDir(s.path("partial"))
		for _, e := range entries {
			fi, err := e.Info()
			if err == nil && os.Remove(s.path("partial", e.Name())) == nil {
				res.Partials++
				res.FreedBytes += fi.Size()
			}
		}
	}
	return res, nil
}

func (s *Store) gcRepo(repo string, res *GCResult) error {
	unlock, err := s.lockRepo(repo)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := s.Current(repo)
	if err != nil {
		return err
	}
	leased, err := s.leased(repo)
	if err != nil {
		return err
	}
	dir := s.path("snapshots", repoPath(repo))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if name == st.Commit || name == st.Previous || leased[name] {
			continue
		}
		// Not current, not previous, or a staging tree left by a crash
		// (safe: we hold the lock, so no pull is using it).
		if err := makeWritable(filepath.Join(dir, name)); err != nil {
			return err
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
		os.Remove(s.recordPath(repo, name))
		res.Snapshots = append(res.Snapshots, repo+"@"+name)
	}
	return nil
}

// makeWritable lets RemoveAll delete read-only trees (directories only:
// the files are links to read-only blobs, and unlinking needs only the
// directory's permission).
func makeWritable(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return nil
	})
}

// ServedDir is the snapshot directory of repo's served commit.
func (s *Store) ServedDir(repo string) (string, error) {
	commit, err := s.servedCommit(repo)
	if err != nil {
		return "", err
	}
	return s.SnapshotDir(repo, commit), nil
}

// servedCommit is repo's served commit; not being installed is an error.
// Pending markers are settled first, so a snapshot with blobs from an
// earlier boot is never answered before its blobs are hashed, even by a
// Store that did not come from Open.
func (s *Store) servedCommit(repo string) (string, error) {
	if err := s.settle(); err != nil {
		return "", err
	}
	st, err := s.Current(repo)
	if err != nil {
		return "", err
	}
	if st.Commit == "" {
		return "", fmt.Errorf("%s is not installed in %s (forgectl pull %s installs it)", repo, s.Root, repo)
	}
	return st.Commit, nil
}
