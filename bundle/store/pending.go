package store

// Deferred durability. A pull hashes every byte as it arrives, so in the
// boot that downloaded them the page cache holds exactly the verified
// bytes and serving them is safe before they reach the disk. Pulls
// therefore skip the per-file fsync (the slowest part of a pull on a disk
// slower than the network) and instead write a durable pending marker,
// before any blob becomes visible in blobs/, naming this boot and the
// blobs that are not yet synced. Settling a marker later:
//
//   - same boot: fsync the blobs (the kernel has usually written them
//     already) and delete the marker;
//   - another boot (or no boot identity now, or a marker that cannot be
//     read): the blobs may hold zeros or garbage although size, mtime,
//     ctime and inode match the install record, so every one is hashed again
//     against its name; a blob that fails is removed with every snapshot
//     that links it, and a served revision that lost a blob falls back to
//     its previous revision if that verifies, else the repository has none
//     until the next pull re-downloads what is missing.
//
// Without a boot identity pulls fsync each file as before and write no
// marker.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/internal/atomicfile"
)

// defaultBootID reads the platform's boot identity once per process: it
// cannot change while the process runs.
var defaultBootID = sync.OnceValues(platformBootID)

func (s *Store) bootID() (string, error) {
	if s.BootID != nil {
		return s.BootID()
	}
	return defaultBootID()
}

// testHookBeforeInstall runs after a pull's blobs are stored and its
// snapshot verified, just before the snapshot is renamed into place.
var testHookBeforeInstall func() error

// pendingMarker names the blobs a pull stored without fsync.
type pendingMarker struct {
	Version int       `json:"version"`
	BootID  string    `json:"boot_id"`
	Repo    string    `json:"repo"`
	Commit  string    `json:"commit"`
	Created time.Time `json:"created"`
	Blobs   []string  `json:"blobs"` // SHA-256 names under blobs/sha256
}

var blobNameRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// markerName is <owner>+<name>+<commit>+<unix ns>.json: '+' is not allowed
// in repository names, and the time keeps two pulls' markers apart.
func markerName(repo, commit string, t time.Time) string {
	return strings.Replace(repo, "/", "+", 1) + "+" + commit + "+" + strconv.FormatInt(t.UnixNano(), 10) + ".json"
}

// beginPending makes a durable marker for blobs before any of them is
// stored. It reports whether the pull may skip the per-file fsync: not
// without a boot identity, and not if the marker cannot be written.
func (s *Store) beginPending(repo, commit string, blobs []bundle.File) (noSync bool, err error) {
	if len(blobs) == 0 {
		return false, nil
	}
	boot, err := s.bootID()
	if err != nil {
		return false, nil // no boot identity: fsync every file, as before
	}
	m := pendingMarker{Version: 1, BootID: boot, Repo: repo, Commit: commit, Created: time.Now().UTC()}
	for _, f := range blobs {
		m.Blobs = append(m.Blobs, f.SHA256)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return false, err
	}
	if err := atomicfile.Write(s.path("pending", markerName(repo, commit, m.Created)), append(data, '\n'), 0o644); err != nil {
		return false, fmt.Errorf("pending marker: %w", err)
	}
	return true, nil
}

// readMarker parses one marker; any problem is an error (the caller then
// treats the marker as written in another boot).
func (s *Store) readMarker(name string) (*pendingMarker, error) {
	data, err := os.ReadFile(s.path("pending", name))
	if err != nil {
		return nil, err
	}
	return parseMarker(data)
}

// parseMarker checks a marker's fields; its blob names become paths that
// settling fsyncs, hashes or deletes, so each must be a bare SHA-256.
func parseMarker(data []byte) (*pendingMarker, error) {
	var m pendingMarker
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m.Version != 1 || m.BootID == "" || hub.CheckRepo(m.Repo) != nil || !hub.IsCommit(m.Commit) {
		return nil, errors.New("not a version 1 marker with boot_id, repo and commit")
	}
	for _, b := range m.Blobs {
		if !blobNameRE.MatchString(b) {
			return nil, fmt.Errorf("blob %q is not a sha256", b)
		}
	}
	return &m, nil
}

// markerNames lists the pending markers. Dot files are atomicfile
// temporaries: a marker not yet renamed into place was never durable, so
// the pull that wrote it stored no blob yet.
func (s *Store) markerNames() ([]string, error) {
	entries, err := os.ReadDir(s.path("pending"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// settle settles every pending marker (see the top of this file). With no
// marker it costs one ReadDir. A same-boot marker whose repository is
// locked by another process (a pull in progress) is left for later: its
// blobs are safe to serve in this boot.
func (s *Store) settle() error {
	names, err := s.markerNames()
	if err != nil || len(names) == 0 {
		return err
	}
	boot, bootErr := s.bootID()
	needsHash := false
	failed := map[string]bool{} // fsync failed: its blobs are not trusted
	for _, name := range names {
		m, err := s.readMarker(name)
		if err != nil || bootErr != nil || m.BootID != boot {
			needsHash = true
			continue
		}
		if !s.syncMarker(name, m) {
			failed[name], needsHash = true, true
		}
	}
	if !needsHash {
		return nil
	}
	if err := s.settleByHashing(boot, bootErr, failed); err != nil {
		return fmt.Errorf("store %s: settling downloads not yet known to be on disk: %w", s.Root, err)
	}
	return nil
}

// syncMarker settles a same-boot marker by fsyncing its blobs, under the
// repository's lock so it never removes the marker of a pull still
// downloading. It returns false if a blob could not be synced: the marker
// stays, and its blobs are dropped (a second fsync could report success
// for pages whose write failed, and a re-hash would read the page cache).
func (s *Store) syncMarker(name string, m *pendingMarker) bool {
	unlock, err := s.tryLockRepo(m.Repo)
	if err != nil {
		return true // busy (or unlockable here): safe to leave in this boot
	}
	defer unlock()
	if !exists(s.path("pending", name)) {
		return true // another process settled it
	}
	for _, b := range m.Blobs {
		if err := fsyncFile(s.blobPath(b)); err != nil && !os.IsNotExist(err) {
			return false
		}
	}
	if atomicfile.SyncDir(s.path("blobs", "sha256")) != nil {
		return false
	}
	if os.Remove(s.path("pending", name)) == nil {
		atomicfile.SyncDir(s.path("pending")) // a lost removal costs a re-hash after a crash, nothing more
	}
	return true
}

func fsyncFile(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// settleByHashing handles every marker that fsync cannot settle: from
// another boot or unreadable (hashed), or whose fsync failed (dropped).
// It holds the store's settle lock, so processes starting together hash
// once, and any pull starting after it returns finds no such marker left.
func (s *Store) settleByHashing(boot string, bootErr error, failed map[string]bool) error {
	unlock, err := s.lockSettle()
	if err != nil {
		return err
	}
	defer unlock()
	names, err := s.markerNames() // again: another process may have settled some
	if err != nil {
		return err
	}
	suspect, bad := map[string]bool{}, map[string]bool{}
	var settled []string
	everything := false
	for _, name := range names {
		m, err := s.readMarker(name)
		switch {
		case err != nil:
			// An unreadable marker could concern any pull: hash every blob.
			everything = true
		case failed[name]:
			for _, b := range m.Blobs {
				bad[b] = true
			}
		case bootErr == nil && m.BootID == boot:
			if !s.syncMarker(name, m) {
				for _, b := range m.Blobs {
					bad[b] = true
				}
				break
			}
			continue // synced, or left to the pull that holds its lock
		default:
			for _, b := range m.Blobs {
				suspect[b] = true
			}
		}
		settled = append(settled, name)
	}
	if everything {
		entries, err := os.ReadDir(s.path("blobs", "sha256"))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if blobNameRE.MatchString(e.Name()) {
				suspect[e.Name()] = true
			}
		}
	}
	for b := range s.hashBlobs(suspect) {
		bad[b] = true
	}
	if len(bad) > 0 {
		if err := s.dropBlobs(bad); err != nil {
			return err
		}
	}
	for _, name := range settled {
		if err := os.Remove(s.path("pending", name)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return atomicfile.SyncDir(s.path("pending"))
}

// hashBlobs hashes each blob against its name, in parallel, and returns
// those that are missing, unreadable or do not match.
func (s *Store) hashBlobs(blobs map[string]bool) map[string]bool {
	jobs := make(chan string)
	var mu sync.Mutex
	bad := map[string]bool{}
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for b := range jobs {
				if got, err := hashFile(s.blobPath(b), buf); err != nil || got != b {
					mu.Lock()
					bad[b] = true
					mu.Unlock()
				}
			}
		}()
	}
	for b := range blobs {
		jobs <- b
	}
	close(jobs)
	wg.Wait()
	return bad
}

func hashFile(p string, buf []byte) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// dropBlobs uninstalls every snapshot that links a bad blob, then removes
// the blobs, so the next pull downloads them again. Each repository is
// handled under its lock (taken after the settle lock, the only order).
func (s *Store) dropBlobs(bad map[string]bool) error {
	repos, err := s.repos()
	if err != nil {
		return err
	}
	for _, repo := range repos {
		if err := s.dropSnapshots(repo, bad); err != nil {
			return err
		}
	}
	for b := range bad {
		if err := os.Remove(s.blobPath(b)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return atomicfile.SyncDir(s.path("blobs", "sha256"))
}

// repairSnapshot drops an installed snapshot that fails its check, so the
// pull that follows installs it again: blobs of it that no longer hash to
// their names are removed with every snapshot linking them (dropBlobs);
// if every blob is intact (a file of the tree itself was replaced or
// removed) only this snapshot is dropped and its blobs are linked again.
// It takes the settle lock and then repository locks, so the caller holds
// none.
func (s *Store) repairSnapshot(repo, commit string, rec *installRecord) error {
	release, err := s.lockSettle()
	if err != nil {
		return err
	}
	defer release()
	blobs := map[string]bool{}
	for _, e := range rec.Record.Files {
		blobs[e.SHA256] = true
	}
	if bad := s.hashBlobs(blobs); len(bad) > 0 {
		return s.dropBlobs(bad)
	}
	unlock, err := s.lockRepo(repo)
	if err != nil {
		return err
	}
	defer unlock()
	return s.dropCommits(repo, map[string]bool{commit: true})
}

// dropSnapshots uninstalls repo's snapshots that link a bad blob. The
// served state changes first, so a dropped snapshot is never served: if
// the served one is dropped, the previous one is served if it is still
// installed and verifies; otherwise the repository has no served revision.
func (s *Store) dropSnapshots(repo string, bad map[string]bool) error {
	unlock, err := s.lockRepo(repo)
	if err != nil {
		return err
	}
	defer unlock()
	dropped := map[string]bool{}
	for _, c := range s.snapshots(repo) {
		rec, err := s.readRecord(repo, c)
		if err != nil || rec == nil {
			continue // no record: never served, activated or counted as installed
		}
		for _, e := range rec.Record.Files {
			if bad[e.SHA256] {
				dropped[c] = true
				break
			}
		}
	}
	return s.dropCommits(repo, dropped)
}

// dropCommits uninstalls repo's snapshots at the dropped commits, the
// served state first (see dropSnapshots). The caller holds repo's lock.
func (s *Store) dropCommits(repo string, dropped map[string]bool) error {
	if len(dropped) == 0 {
		return nil
	}
	st, err := s.Current(repo)
	if err != nil {
		return err
	}
	next := st
	if dropped[next.Previous] || (next.Previous != "" && !exists(s.SnapshotDir(repo, next.Previous))) {
		next.Previous = ""
	}
	if dropped[next.Commit] {
		next = State{}
		if st.Previous != "" && !dropped[st.Previous] {
			if rep, err := s.verifyCommit(repo, st.Previous, false, true); err == nil && rep.Passed() {
				next = State{Commit: st.Previous}
			}
		}
	}
	switch {
	case next == st:
	case next.Commit == "":
		if err := s.clearCurrent(repo); err != nil {
			return err
		}
	default:
		if err := s.setCurrent(repo, next); err != nil {
			return err
		}
	}
	for c := range dropped {
		dir := s.SnapshotDir(repo, c)
		if err := makeWritable(dir); err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.Remove(s.recordPath(repo, c)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := atomicfile.SyncDir(s.path("snapshots", repoPath(repo))); err != nil {
		return err
	}
	return atomicfile.SyncDir(s.path("records", repoPath(repo)))
}
