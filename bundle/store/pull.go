package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/internal/atomicfile"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/forgedaemon/forged/verify"
)

// maxReleaseBytes bounds release.json (the real one is well under 1 MiB).
const maxReleaseBytes = 64 << 20

// PullOptions select the revision and components.
type PullOptions struct {
	Revision string // branch, tag or commit; "main" if empty
	bundle.Selection
	// KeepCurrent installs the snapshot without serving it (the daemon
	// switches later, when idle).
	KeepCurrent bool
	// VerifyFull checks an already installed snapshot by hashing every
	// file instead of the fast record check (the daemon, re-installing a
	// bundle that failed, wants damage the record cannot see found).
	VerifyFull bool
}

// PullResult describes an installed snapshot.
type PullResult struct {
	Repo             string `json:"repo"`
	Commit           string `json:"commit"`
	Snapshot         string `json:"snapshot"`
	AlreadyInstalled bool   `json:"already_installed"`
	// Repaired: the snapshot was installed but failed its check; what
	// failed was dropped and downloaded again.
	Repaired        bool           `json:"repaired,omitempty"`
	Files           int            `json:"files"`
	Bytes           int64          `json:"bytes"`
	DownloadedFiles int            `json:"downloaded_files"`
	DownloadedBytes int64          `json:"downloaded_bytes"` // body bytes received from the network
	ResumedBytes    int64          `json:"resumed_bytes"`    // bytes reused from partial files
	State           State          `json:"state"`
	Report          *verify.Report `json:"report,omitempty"`
}

// ErrDiskFull is returned (wrapped) when the disk cannot hold a pull.
var ErrDiskFull = errors.New("not enough disk space")

// Pull resolves the revision, fetches and validates release.json at the
// commit, downloads the selected files that are not already stored,
// builds the snapshot, verifies it and only then renames it into place
// and (unless KeepCurrent) serves it. With a boot identity the downloaded
// files are not fsynced one by one: a pending marker, durable before
// they are stored, has them synced or re-hashed later (pending.go). One process per repository at a
// time: a second Pull waits for the first and then finds it installed.
func (s *Store) Pull(ctx context.Context, repo string, o PullOptions) (*PullResult, error) {
	if err := hub.CheckRepo(repo); err != nil {
		return nil, err
	}
	// Before the repository lock (settling may take locks of its own): a
	// pull never links a blob from an earlier boot that is not re-hashed.
	if err := s.settle(); err != nil {
		return nil, err
	}
	unlock, err := s.lockRepo(repo)
	if err != nil {
		return nil, err
	}
	defer func() { unlock() }() // the repair below takes the lock again

	var commit string
	if hub.IsCommit(o.Revision) {
		commit = o.Revision // commits are immutable: nothing to resolve
	} else if s.Client == nil {
		if commit, err = s.resolveLocal(repo, o.Revision); err != nil {
			return nil, err
		}
	} else {
		if commit, err = s.Client.ResolveRevision(ctx, repo, o.Revision); err != nil {
			return nil, err
		}
	}
	s.emit(Event{Kind: "resolved", Repo: repo, Commit: commit})
	res := &PullResult{Repo: repo, Commit: commit, Snapshot: s.SnapshotDir(repo, commit)}

	if rec, err := s.readRecord(repo, commit); err == nil && exists(res.Snapshot) && rec.Selection.covers(o.Selection) {
		// "Already installed" is checked, not assumed (the fast record
		// check: sizes, mtimes, ctimes, inodes); a snapshot that fails it is
		// repaired: what fails is dropped and downloaded again below.
		rep, verr := s.verifyCommit(repo, commit, o.VerifyFull, true)
		if verr == nil && rep.Passed() {
			res.AlreadyInstalled = true
			res.Files, res.Bytes = len(rec.Record.Files), rec.bytes()
			return s.finish(res, o)
		}
		why := verr
		if why == nil {
			why = rep.Err()
		}
		s.emit(Event{Kind: "repair", Repo: repo, Commit: commit, Message: fmt.Sprintf("the installed snapshot fails its check (%v); downloading what fails again", why)})
		unlock()
		if err := s.repairSnapshot(repo, commit, rec); err != nil {
			return nil, fmt.Errorf("%s@%s: repairing the installed snapshot: %w", repo, commit, err)
		}
		if unlock, err = s.lockRepo(repo); err != nil {
			return nil, err
		}
		res.Repaired = true
	}
	if s.Client == nil {
		return nil, fmt.Errorf("offline: %s@%s is not installed (FORGE_OFFLINE is set, so nothing is downloaded)", repo, commit)
	}

	raw, files, sel, err := s.fetchSelection(ctx, repo, commit, o.Selection)
	if err != nil {
		return nil, err
	}
	if err := s.store(ctx, repo, commit, raw, files, sel, res); err != nil {
		return nil, err
	}
	return s.finish(res, o)
}

// store downloads the missing blobs and installs the snapshot, holding
// the blob lock shared so gc cannot take a blob before it is linked.
func (s *Store) store(ctx context.Context, repo, commit string, raw []byte, files []bundle.File, sel bundle.Selection, res *PullResult) error {
	unlock, err := s.lockBlobs(false)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.download(ctx, repo, commit, files, res); err != nil {
		return err
	}
	if testHookAfterDownload != nil {
		testHookAfterDownload()
	}
	return s.install(repo, commit, raw, files, sel, res)
}

// testHookAfterDownload runs between a pull's download and its install,
// while its new blobs are stored but not linked.
var testHookAfterDownload func()

// fetchSelection fetches and validates release.json at commit and returns
// it with the files sel selects from it and sel resolved against it.
func (s *Store) fetchSelection(ctx context.Context, repo, commit string, sel bundle.Selection) (raw []byte, files []bundle.File, resolved bundle.Selection, err error) {
	raw, err = s.Client.FetchSmall(ctx, repo, commit, bundle.ReleaseFile, maxReleaseBytes)
	if err != nil {
		return nil, nil, sel, err
	}
	rel, err := bundle.ParseRelease(raw)
	if err != nil {
		return nil, nil, sel, fmt.Errorf("%s@%s: %w", repo, commit, err)
	}
	if files, err = rel.Select(sel); err != nil {
		return nil, nil, sel, err
	}
	return raw, files, sel.Resolve(rel), nil
}

func (s *Store) finish(res *PullResult, o PullOptions) (*PullResult, error) {
	// Refs only ever name installed commits, so offline use never
	// resolves to something that is not on disk.
	if err := s.writeRef(res.Repo, o.Revision, res.Commit); err != nil {
		return nil, err
	}
	var err error
	if o.KeepCurrent {
		res.State, err = s.Current(res.Repo)
	} else {
		res.State, err = s.activate(res.Repo, res.Commit)
	}
	if err != nil {
		return nil, err
	}
	s.emit(Event{Kind: "installed", Repo: res.Repo, Commit: res.Commit, Files: res.Files, Total: res.Bytes})
	return res, nil
}

// missingBlobs returns one file per content hash not yet in the store.
func (s *Store) missingBlobs(files []bundle.File) []bundle.File {
	seen := map[string]bool{}
	var out []bundle.File
	for _, f := range files {
		if seen[f.SHA256] || exists(s.blobPath(f.SHA256)) {
			continue
		}
		seen[f.SHA256] = true
		out = append(out, f)
	}
	return out
}

// download fetches every missing blob, Workers at a time, largest first.
func (s *Store) download(ctx context.Context, repo, commit string, files []bundle.File, res *PullResult) error {
	need := s.missingBlobs(files)
	var total int64
	for _, f := range need {
		total += f.Bytes
	}
	for _, f := range files {
		res.Files++
		res.Bytes += f.Bytes
	}
	s.emit(Event{Kind: "plan", Repo: repo, Commit: commit, Files: len(need), Total: total,
		Message: fmt.Sprintf("%d of %d files to download", len(need), len(files))})
	if err := s.checkSpace(total); err != nil {
		return err
	}
	// The marker is durable before the first blob appears in blobs/, where
	// any later pull would trust it (pending.go).
	noSync, err := s.beginPending(repo, commit, need)
	if err != nil {
		return err
	}
	sort.SliceStable(need, func(i, j int) bool { return need[i].Bytes > need[j].Bytes })

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		done     int64
		active   []string
	)
	var lastEmit time.Time
	progress := func(delta int64) {
		mu.Lock()
		done += delta
		// Reads arrive every few KiB; report at most every 50 ms (and the end).
		if time.Since(lastEmit) < 50*time.Millisecond && done != total {
			mu.Unlock()
			return
		}
		lastEmit = time.Now()
		e := Event{Kind: "progress", Repo: repo, Done: done, Total: total, Active: slices.Clone(active)}
		mu.Unlock()
		s.emit(e)
	}
	jobs := make(chan bundle.File)
	var wg sync.WaitGroup
	for range max(s.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range jobs {
				mu.Lock()
				active = append(active, f.Path)
				mu.Unlock()
				r, err := s.fetchBlob(ctx, repo, commit, f, noSync, progress)
				mu.Lock()
				active = slices.DeleteFunc(active, func(p string) bool { return p == f.Path })
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				if err == nil {
					res.DownloadedFiles++
				}
				res.DownloadedBytes += r.Received
				res.ResumedBytes += r.ResumedFrom
				mu.Unlock()
			}
		}()
	}
	for _, f := range need {
		select {
		case jobs <- f:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// fetchBlob downloads one file into the blob store. A hash mismatch is
// fetched again once from scratch; a second mismatch is an error (the
// hub is serving bytes that do not match release.json).
func (s *Store) fetchBlob(ctx context.Context, repo, commit string, f bundle.File, noSync bool, progress func(int64)) (hub.Result, error) {
	s.emit(Event{Kind: "file_start", Repo: repo, Path: f.Path, Total: f.Bytes})
	d := hub.Download{Repo: repo, Commit: commit, Path: f.Path, Size: f.Bytes, SHA256: f.SHA256,
		Partial: s.path("partial", f.SHA256+".part"), Progress: progress, NoSync: noSync}
	var sum hub.Result
	for attempt := 1; ; attempt++ {
		r, err := s.Client.Fetch(ctx, d)
		sum.Received += r.Received
		sum.ResumedFrom += r.ResumedFrom
		var mismatch *hub.HashMismatchError
		switch {
		case err == nil:
		case errors.As(err, &mismatch) && attempt == 1:
			s.emit(Event{Kind: "retry", Repo: repo, Path: f.Path, Message: "sha256 mismatch; fetching the file again"})
			continue
		case errors.As(err, &mismatch):
			return sum, fmt.Errorf("%s: sha256 mismatch on two downloads (got %s, release.json says %s): the hub is serving corrupt data; nothing was installed", f.Path, mismatch.Got, mismatch.Want)
		case errors.Is(err, hub.ErrNoSpace):
			return sum, fmt.Errorf("%w: disk full while downloading %s into %s; free space and pull again (the partial download is kept and resumes)", ErrDiskFull, f.Path, s.Root)
		default:
			return sum, err
		}
		break
	}
	if err := os.Chmod(d.Partial, 0o444); err != nil {
		return sum, err
	}
	if err := os.Rename(d.Partial, s.blobPath(f.SHA256)); err != nil {
		return sum, err
	}
	s.emit(Event{Kind: "file_done", Repo: repo, Path: f.Path, Total: f.Bytes})
	return sum, atomicfile.SyncDir(filepath.Dir(s.blobPath(f.SHA256)))
}

// checkSpace refuses a pull the disk cannot hold, before any byte moves.
func (s *Store) checkSpace(need int64) error {
	if need == 0 || s.FreeSpace == nil {
		return nil
	}
	free, err := s.FreeSpace(s.Root)
	if err != nil {
		return err
	}
	margin := s.MarginBytes + int64(float64(need)*s.MarginPercent/100)
	if free < need+margin {
		return fmt.Errorf("%w in %s: the download needs %s plus a %s margin, only %s is free", ErrDiskFull, s.Root,
			units.Bytes(need), units.Bytes(margin), units.Bytes(free))
	}
	return nil
}

// install links the blobs into a staging tree, verifies it, and renames
// it into place: a snapshot directory exists only once it has passed.
func (s *Store) install(repo, commit string, releaseJSON []byte, files []bundle.File, sel bundle.Selection, res *PullResult) error {
	parent := filepath.Dir(s.SnapshotDir(repo, commit))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	staging, err := os.MkdirTemp(parent, ".staging-"+commit+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging) // no-op after the rename
	relSum := sha256.Sum256(releaseJSON)
	relBlob := s.blobPath(hex.EncodeToString(relSum[:]))
	if !exists(relBlob) {
		if err := atomicfile.Write(relBlob, releaseJSON, 0o444); err != nil {
			return err
		}
	}
	links := append([]bundle.File{{Path: bundle.ReleaseFile, SHA256: hex.EncodeToString(relSum[:])}}, files...)
	for _, f := range links {
		dst := filepath.Join(staging, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Link(s.blobPath(f.SHA256), dst); err != nil {
			return fmt.Errorf("link %s: %w", f.Path, err)
		}
	}
	// Every blob was hashed as it arrived (or when an earlier pull stored
	// it), so the record vouches for them and verification checks sizes
	// and layout without reading the bytes a second time.
	rec, err := verify.NewRecord(staging, files)
	if err != nil {
		return err
	}
	s.emit(Event{Kind: "verify", Repo: repo, Commit: commit, Files: len(files)})
	report, err := verify.Integrity(staging, verify.Options{Selection: sel, Record: rec})
	if err != nil {
		return err
	}
	res.Report = report
	if !report.Passed() {
		return fmt.Errorf("%s@%s not installed: %w", repo, commit, report.Err())
	}
	if err := s.writeRecord(repo, commit, &installRecord{Selection: selectionOf(sel), Record: rec}); err != nil {
		return err
	}
	if testHookBeforeInstall != nil {
		if err := testHookBeforeInstall(); err != nil {
			return err
		}
	}
	final := s.SnapshotDir(repo, commit)
	if exists(final) {
		// A snapshot with fewer components (e.g. --plain) is being replaced:
		// move it aside first so the path is never missing for long, and
		// files a reader has open stay valid (they are links to blobs).
		old := staging + ".old"
		if err := os.Rename(final, old); err != nil {
			return err
		}
		defer func() { makeWritable(old); os.RemoveAll(old) }()
	}
	if err := os.Rename(staging, final); err != nil {
		return err
	}
	return atomicfile.SyncDir(parent)
}
