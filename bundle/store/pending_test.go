package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/verify"
)

// storeBoot opens the env's store as if running in the boot named boot.
func (e *env) storeBoot(t *testing.T, boot string) *Store {
	t.Helper()
	s, err := OpenBoot(e.root, func() (string, error) { return boot, nil })
	if err != nil {
		t.Fatal(err)
	}
	return e.connect(s)
}

// pending returns the markers in the store, by file name.
func pending(t *testing.T, s *Store) map[string]*pendingMarker {
	t.Helper()
	names, err := s.markerNames()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*pendingMarker{}
	for _, n := range names {
		m, err := s.readMarker(n)
		if err != nil {
			t.Fatalf("marker %s: %v", n, err)
		}
		out[n] = m
	}
	return out
}

// onlyMarker is the single marker in the store.
func onlyMarker(t *testing.T, s *Store) *pendingMarker {
	t.Helper()
	ms := pending(t, s)
	if len(ms) != 1 {
		t.Fatalf("%d pending markers, want 1: %v", len(ms), ms)
	}
	for _, m := range ms {
		return m
	}
	return nil
}

// corruptInPlace flips one byte of a blob without changing its size,
// inode or mtime: what a power loss can leave, invisible to the record.
// hideFromRecord rewrites commit's install record from its snapshot's
// stats as they are now: after corruptInPlace, the damage the record
// check cannot see (a byte lost under the file system, every stat as
// recorded). No user can put a ctime back, so the test moves the record.
func hideFromRecord(t *testing.T, s *Store, commit string) {
	t.Helper()
	rec, err := s.readRecord(repo, commit)
	if err != nil {
		t.Fatal(err)
	}
	var files []bundle.File
	for p, e := range rec.Record.Files {
		files = append(files, bundle.File{Path: p, SHA256: e.SHA256})
	}
	if rec.Record, err = verify.NewRecord(s.SnapshotDir(repo, commit), files); err != nil {
		t.Fatal(err)
	}
	if err := s.writeRecord(repo, commit, rec); err != nil {
		t.Fatal(err)
	}
}

func corruptInPlace(t *testing.T, p string) {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o644)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	off := st.Size() / 2
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.Chmod(p, st.Mode().Perm())
	if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
}

func TestPullDefersSyncToMarkerSettledInSameBoot(t *testing.T) {
	e := newEnv(t)
	s := e.storeBoot(t, "boot-A")
	res, err := s.Pull(context.Background(), repo, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := onlyMarker(t, s)
	if m.BootID != "boot-A" || m.Repo != repo || m.Commit != e.commit || len(m.Blobs) != res.DownloadedFiles {
		t.Fatalf("marker %+v after downloading %d files", m, res.DownloadedFiles)
	}
	for _, b := range m.Blobs {
		if !exists(s.blobPath(b)) {
			t.Fatalf("marker lists %s, which is not stored", b)
		}
	}
	// The next open in the same boot fsyncs and removes the marker.
	s2 := e.storeBoot(t, "boot-A")
	if ms := pending(t, s2); len(ms) != 0 {
		t.Fatalf("markers left after a same-boot open: %v", ms)
	}
	if dir, err := s2.ServedDir(repo); err != nil || dir != s.SnapshotDir(repo, e.commit) {
		t.Fatalf("ServedDir = %q, %v", dir, err)
	}
	if rep, err := s2.Verify(repo, false); err != nil || !rep.Passed() || rep.HashedBytes != 0 {
		t.Fatalf("fast verify after settling: %v %+v", err, rep)
	}
}

func TestSameBootMarkerLeftWhileRepoLocked(t *testing.T) {
	e := newEnv(t)
	s := e.storeBoot(t, "boot-A")
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another process is pulling this repository: its marker may be the
	// one in progress, so settling leaves it (safe in this boot).
	unlock, err := s.lockRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	s2 := e.storeBoot(t, "boot-A")
	if len(pending(t, s2)) != 1 {
		t.Fatal("a same-boot marker was settled while its repository was locked")
	}
	if rep, err := s2.Verify(repo, false); err != nil || !rep.Passed() {
		t.Fatalf("verify while the marker is pending in this boot: %v", err)
	}
	unlock()
	if _, err := s2.Verify(repo, false); err != nil || len(pending(t, s2)) != 0 {
		t.Fatalf("marker not settled once the lock was free: %v, %v", err, pending(t, s2))
	}
}

func TestNoBootIDFsyncsAndWritesNoMarker(t *testing.T) {
	e := newEnv(t)
	s, err := OpenBoot(e.root, func() (string, error) { return "", errors.New("no boot id here") })
	if err != nil {
		t.Fatal(err)
	}
	s.Client = hub.New(e.hub.URL, e.hub.Token)
	s.MarginBytes = 0
	res, err := s.Pull(context.Background(), repo, PullOptions{})
	if err != nil || !res.Report.Passed() {
		t.Fatalf("pull: %v", err)
	}
	if ms := pending(t, s); len(ms) != 0 {
		t.Fatalf("marker written without a boot id: %v", ms)
	}
}

// TestRebootRehashDropsCorruptSnapshotAndFallsBack: v2's new blob was
// never synced and the machine rebooted; the blob came back corrupt with
// its stat intact (hideFromRecord). Settling hashes it, drops v2, serves v1 again;
// the next pull downloads only that blob.
func TestRebootRehashDropsCorruptSnapshotAndFallsBack(t *testing.T) {
	e := newEnv(t)
	s := e.storeBoot(t, "boot-A")
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := "coreai/chunk_L04-07.aimodel/weights/weight-00.bin"
	v2, size := publishChanged(t, e, changed)
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	m := onlyMarker(t, s) // v1's was synced when v2's pull started
	if m.Commit != v2 || len(m.Blobs) != 1 {
		t.Fatalf("marker %+v, want v2's one new blob", m)
	}
	corruptInPlace(t, s.blobPath(m.Blobs[0]))
	hideFromRecord(t, s, v2)
	if rep, err := s.verifyCommit(repo, v2, false, false); err != nil || !rep.Passed() {
		t.Fatalf("the record check should not see this corruption: %v", err)
	}

	s2 := e.storeBoot(t, "boot-B")
	if ms := pending(t, s2); len(ms) != 0 {
		t.Fatalf("markers left after settling: %v", ms)
	}
	if exists(s2.blobPath(m.Blobs[0])) || exists(s2.SnapshotDir(repo, v2)) || exists(s2.recordPath(repo, v2)) {
		t.Fatal("corrupt blob or the snapshot linking it is still installed")
	}
	if st := mustCurrent(t, s2); st.Commit != e.commit || st.Previous != "" {
		t.Fatalf("current = %+v, want v1 %s served again", st, e.commit)
	}
	if rep, err := s2.Verify(repo, true); err != nil || !rep.Passed() {
		t.Fatalf("v1 after fallback: %v", err)
	}

	e.hub.ResetCounters()
	res, err := s2.Pull(context.Background(), repo, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != v2 || res.DownloadedFiles != 1 || e.hub.BytesServed(changed) != size {
		t.Fatalf("repair pull: %+v, %d bytes of %s served (want %d)", res, e.hub.BytesServed(changed), changed, size)
	}
	if rep, err := s2.Verify(repo, true); err != nil || !rep.Passed() || rep.HashedBytes == 0 {
		t.Fatalf("full verify after repair: %v", err)
	}
	if st := mustCurrent(t, s2); st.Commit != v2 || st.Previous != e.commit {
		t.Fatalf("current after repair = %+v", st)
	}
}

func TestRebootWithoutPreviousLeavesNothingServed(t *testing.T) {
	e := newEnv(t)
	s := e.storeBoot(t, "boot-A")
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	m := onlyMarker(t, s)
	slices.Sort(m.Blobs)
	corruptInPlace(t, s.blobPath(m.Blobs[0]))

	s2 := e.storeBoot(t, "boot-B")
	if _, err := s2.ServedDir(repo); err == nil || !strings.Contains(err.Error(), "forgectl pull "+repo) {
		t.Fatalf("ServedDir after the only revision was dropped: %v", err)
	}
	if exists(s2.SnapshotDir(repo, e.commit)) {
		t.Fatal("snapshot with a corrupt blob still installed")
	}
	e.hub.ResetCounters()
	res, err := s2.Pull(context.Background(), repo, PullOptions{})
	if err != nil || res.DownloadedFiles != 1 {
		t.Fatalf("repair pull: %v, %+v", err, res)
	}
	if rep, err := s2.Verify(repo, true); err != nil || !rep.Passed() {
		t.Fatalf("full verify after repair: %v", err)
	}
}

func TestRebootWithoutCorruptionKeepsSnapshot(t *testing.T) {
	e := newEnv(t)
	s := e.storeBoot(t, "boot-A")
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	m := onlyMarker(t, s)
	s2 := e.storeBoot(t, "boot-B")
	if ms := pending(t, s2); len(ms) != 0 {
		t.Fatalf("markers left: %v", ms)
	}
	for _, b := range m.Blobs {
		if !exists(s2.blobPath(b)) {
			t.Fatalf("good blob %s removed", b)
		}
	}
	if st := mustCurrent(t, s2); st.Commit != e.commit {
		t.Fatalf("current = %+v", st)
	}
	if rep, err := s2.Verify(repo, false); err != nil || !rep.Passed() {
		t.Fatalf("fast verify: %v", err)
	}
}

// TestMarkerDurableBeforeSnapshotVisible stops a pull between the marker
// and the rename: the marker (this boot's) exists, the snapshot does not,
// and settling it in the same boot or after a reboot is not an error. A
// blob that pull stored, corrupted by the reboot, is removed and fetched
// again by the next pull.
func TestMarkerDurableBeforeSnapshotVisible(t *testing.T) {
	e := newEnv(t)
	s := e.storeBoot(t, "boot-A")
	s.Workers = 1
	stop := errors.New("stopped before the rename")
	testHookBeforeInstall = func() error {
		m := onlyMarker(t, s)
		if m.BootID != "boot-A" || exists(s.SnapshotDir(repo, e.commit)) {
			t.Errorf("at the rename: marker %+v, snapshot exists %v", m, exists(s.SnapshotDir(repo, e.commit)))
		}
		return stop
	}
	t.Cleanup(func() { testHookBeforeInstall = nil })
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); !errors.Is(err, stop) {
		t.Fatalf("pull: %v", err)
	}
	testHookBeforeInstall = nil
	m := onlyMarker(t, s)
	slices.Sort(m.Blobs)
	victim := m.Blobs[0]
	corruptInPlace(t, s.blobPath(victim))
	if exists(s.SnapshotDir(repo, e.commit)) {
		t.Fatal("snapshot visible after a failed install")
	}
	s2 := e.storeBoot(t, "boot-B")
	if len(pending(t, s2)) != 0 || exists(s2.blobPath(victim)) {
		t.Fatal("marker or corrupt blob left after the reboot settle")
	}
	for _, b := range m.Blobs[1:] {
		if !exists(s2.blobPath(b)) {
			t.Fatalf("good blob %s removed", b)
		}
	}
	e.hub.ResetCounters()
	res, err := s2.Pull(context.Background(), repo, PullOptions{})
	if err != nil || res.DownloadedFiles != 1 {
		t.Fatalf("pull after the reboot: %v, %+v (want only the dropped blob)", err, res)
	}
	if rep, err := s2.Verify(repo, true); err != nil || !rep.Passed() {
		t.Fatalf("full verify: %v", err)
	}

	// Same boot: a pull that failed after its marker leaves it; the next
	// open syncs what was stored and removes it.
	e2 := newEnv(t)
	e2.hub.Inject(hubtest.Fault{Kind: hubtest.FlipByte, Path: "coreai/chunk_L00-03.aimodel/weights/weight-00.bin", N: 3})
	s3 := e2.storeBoot(t, "boot-A")
	if _, err := s3.Pull(context.Background(), repo, PullOptions{}); err == nil {
		t.Fatal("pull of a corrupt file succeeded")
	}
	if len(pending(t, s3)) != 1 {
		t.Fatal("no marker after a failed pull")
	}
	if s4 := e2.storeBoot(t, "boot-A"); len(pending(t, s4)) != 0 {
		t.Fatal("same-boot open left the failed pull's marker")
	}
}

// TestUnreadableMarkerHashesEverything: a marker that cannot be parsed
// could concern any pull, so every blob is hashed (documented choice).
func TestUnreadableMarkerHashesEverything(t *testing.T) {
	e := newEnv(t)
	s := e.storeBoot(t, "boot-A")
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	s = e.storeBoot(t, "boot-A") // settled: no marker names the blobs any more
	rec, err := s.readRecord(repo, e.commit)
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	for _, f := range rec.Record.Files {
		victim = f.SHA256
		break
	}
	corruptInPlace(t, s.blobPath(victim))
	for name, data := range map[string]string{
		markerName(repo, e.commit, time.Now()): `{"version": 1, "boot_id": "boot-A", "repo": `, // truncated
		"not-a-marker":                         "garbage",
		".marker.tmp-123456":                   "temporary of a marker never renamed into place",
	} {
		if err := os.WriteFile(filepath.Join(e.root, "pending", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s2 := e.storeBoot(t, "boot-A")
	if names, _ := s2.markerNames(); len(names) != 0 {
		t.Fatalf("unreadable markers left: %v", names)
	}
	if !exists(filepath.Join(e.root, "pending", ".marker.tmp-123456")) {
		t.Fatal("a temporary file (possibly another pull's marker being written) was removed")
	}
	if exists(s2.blobPath(victim)) || exists(s2.SnapshotDir(repo, e.commit)) {
		t.Fatal("corrupt blob not found by the full hash")
	}
	if st := mustCurrent(t, s2); st.Commit != "" {
		t.Fatalf("current = %+v", st)
	}
}

// FuzzParseMarker: arbitrary marker bytes never panic, and an accepted
// marker names only bare SHA-256 blobs (settling deletes by these names)
// and survives a write and read back unchanged.
func FuzzParseMarker(f *testing.F) {
	f.Add([]byte(`{"version":1,"boot_id":"b","repo":"o/n","commit":"` + strings.Repeat("a", 40) + `","blobs":["` + strings.Repeat("0", 64) + `"]}`))
	f.Add([]byte(`{"version":1,"boot_id":"b","repo":"o/n","commit":"` + strings.Repeat("a", 40) + `","blobs":["../../etc/passwd"]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMarker(data)
		if err != nil {
			return
		}
		for _, b := range m.Blobs {
			if len(b) != 64 || strings.Trim(b, "0123456789abcdef") != "" {
				t.Fatalf("accepted blob name %q", b)
			}
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := parseMarker(again)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("marker %+v written back as %s: %+v, %v", m, again, m2, err)
		}
	})
}
