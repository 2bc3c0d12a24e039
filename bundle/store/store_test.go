package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/internal/synthbundle"
)

const repo = "anemll/anemll-forge-test"

// bundleOpts makes a ~6 MiB bundle whose chunk weights are "LFS" files.
var bundleOpts = synthbundle.Options{Seed: 11, TotalBytes: 6 << 20}

type env struct {
	hub    *hubtest.Hub
	root   string
	commit string
	rel    *bundle.Release
	dir    string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "v1")
	rel, err := synthbundle.Generate(dir, bundleOpts)
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.New()
	t.Cleanup(h.Close)
	h.Token = "hf_test_token"
	commit, err := h.Publish(repo, dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	return &env{hub: h, root: filepath.Join(t.TempDir(), "data"), commit: commit, rel: rel, dir: dir}
}

func (e *env) store(t *testing.T) *Store {
	t.Helper()
	s, err := Open(e.root)
	if err != nil {
		t.Fatal(err)
	}
	return e.connect(s)
}

// connect points s at the env's hub with fast retries and no disk margin.
func (e *env) connect(s *Store) *Store {
	c := hub.New(e.hub.URL, e.hub.Token)
	c.Backoff = time.Millisecond
	c.StallTimeout = time.Second
	c.PartSize = 1 << 20
	s.Client = c
	s.MarginBytes = 0
	return s
}

// selectedBytes is the size of what a default pull fetches (plus release.json).
func selectedBytes(t *testing.T, rel *bundle.Release, dir string) int64 {
	files, err := rel.Select(bundle.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(dir, "release.json"))
	n := st.Size()
	for _, f := range files {
		n += f.Bytes
	}
	return n
}

func TestPullInstallsVerifiedSnapshot(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	res, err := s.Pull(context.Background(), repo, PullOptions{Revision: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != e.commit || !res.Report.Passed() || !res.Report.Speculative {
		t.Fatalf("pull result %+v", res)
	}
	if got, want := e.hub.BytesServed(""), selectedBytes(t, e.rel, e.dir); got != want {
		t.Fatalf("hub served %d bytes, bundle selection is %d", got, want)
	}
	st, _ := s.Current(repo)
	if st.Commit != e.commit || st.Previous != "" {
		t.Fatalf("current = %+v", st)
	}
	// The snapshot is regular files hardlinked to read-only blobs.
	snap := s.SnapshotDir(repo, e.commit)
	for _, f := range e.rel.Files {
		if f.Component == "export" {
			continue
		}
		fi, err := os.Lstat(filepath.Join(snap, f.Path))
		if err != nil || !fi.Mode().IsRegular() || linkCount(fi) < 2 {
			t.Fatalf("%s: %v, mode %v", f.Path, err, fi.Mode())
		}
		blob, err := os.Stat(s.blobPath(f.SHA256))
		if err != nil || !os.SameFile(fi, blob) || blob.Mode().Perm() != 0o444 {
			t.Fatalf("%s is not a link to its read-only blob", f.Path)
		}
	}
	if dir, err := s.ServedDir(repo); err != nil || dir != snap {
		t.Fatalf("ServedDir = %q, %v; want %q", dir, err, snap)
	}
	// Fast verify trusts the record and reads nothing; --full hashes everything.
	fast, err := s.Verify(repo, false)
	if err != nil || !fast.Passed() || fast.HashedBytes != 0 {
		t.Fatalf("fast verify: %v %+v", err, fast)
	}
	full, err := s.Verify(repo, true)
	if err != nil || !full.Passed() || full.HashedBytes != full.VerifiedBytes {
		t.Fatalf("full verify: %v %+v", err, full)
	}
	// The token went to the hub and never to the CDN.
	cdn := 0
	for _, r := range e.hub.Requests() {
		switch {
		case r.Listener == "cdn" && r.Authorization != "":
			t.Fatalf("token sent to the CDN: %+v", r)
		case r.Listener == "cdn":
			cdn++
		case r.Authorization != "Bearer "+e.hub.Token:
			t.Fatalf("hub request without the token: %+v", r)
		}
	}
	if cdn == 0 {
		t.Fatal("no request reached the CDN listener")
	}
	// A second pull by commit finds it installed and makes no request at all.
	e.hub.ResetCounters()
	again, err := s.Pull(context.Background(), repo, PullOptions{Revision: e.commit})
	if err != nil || !again.AlreadyInstalled || len(e.hub.Requests()) != 0 {
		t.Fatalf("second pull: %v, %+v, %d requests", err, again, len(e.hub.Requests()))
	}
}

func TestPullFlippedByteRefetchedOnce(t *testing.T) {
	e := newEnv(t)
	p := "coreai/chunk_L00-03.aimodel/weights/weight-00.bin"
	f, _ := e.rel.File(p)
	e.hub.Inject(hubtest.Fault{Kind: hubtest.FlipByte, Path: p, N: 12345, Times: 1})
	s := e.store(t)
	var retries []string
	s.Events = func(ev Event) {
		if ev.Kind == "retry" {
			retries = append(retries, ev.Path)
		}
	}
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(retries) != 1 || retries[0] != p {
		t.Fatalf("retries = %v, want one for %s", retries, p)
	}
	if got := e.hub.BytesServed(p); got != 2*f.Bytes {
		t.Fatalf("served %d bytes of %s, want exactly two copies (%d)", got, p, 2*f.Bytes)
	}
}

func TestPullPersistentCorruptionFailsCleanly(t *testing.T) {
	e := newEnv(t)
	p := "coreai/chunk_L04-07.aimodel/weights/weight-00.bin"
	e.hub.Inject(hubtest.Fault{Kind: hubtest.FlipByte, Path: p, N: 7})
	s := e.store(t)
	_, err := s.Pull(context.Background(), repo, PullOptions{})
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "sha256 mismatch on two downloads") {
		t.Fatalf("err = %v", err)
	}
	if exists(s.SnapshotDir(repo, e.commit)) {
		t.Fatal("a snapshot appeared although a file was corrupt")
	}
	f, _ := e.rel.File(p)
	if exists(s.blobPath(f.SHA256)) {
		t.Fatal("corrupt blob stored")
	}
	if st, _ := s.Current(repo); st.Commit != "" {
		t.Fatalf("current set to %s", st.Commit)
	}
	if _, err := s.resolveLocal(repo, "main"); err == nil {
		t.Fatal("ref main written for a commit that was never installed")
	}
	// The fault clears: the same store pulls fine.
	e.hub.ClearFaults()
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestPullDiskPrecheck(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	s.FreeSpace = func(string) (int64, error) { return 1 << 20, nil }
	_, err := s.Pull(context.Background(), repo, PullOptions{})
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "only 1.0 MiB is free") {
		t.Fatalf("err = %v", err)
	}
	if n := e.hub.BytesServed(""); n > 64<<10 {
		t.Fatalf("%d bytes downloaded before the precheck refused", n)
	}
}

// TestPullDiskFull fills a real small tmpfs mid-download (root only).
func TestPullDiskFull(t *testing.T) {
	e := newEnv(t)
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	e.root = filepath.Join(mnt, "data")
	s := e.store(t)
	s.FreeSpace = nil // let the disk itself run out
	_, err := s.Pull(context.Background(), repo, PullOptions{})
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "disk full while downloading") {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(e.root, "snapshots", "anemll")); len(entries) != 0 {
		t.Fatalf("snapshot entries after a failed pull: %v", entries)
	}
	// More space: the same store resumes and completes.
	if out, err := exec.Command("mount", "-o", "remount,size=64m", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, out)
	}
	res, err := s.Pull(context.Background(), repo, PullOptions{})
	if err != nil || !res.Report.Passed() {
		t.Fatalf("pull after freeing space: %v", err)
	}
	if res.ResumedBytes == 0 {
		t.Fatal("nothing resumed from the partial download")
	}
}

func TestConcurrentPullsDownloadOnce(t *testing.T) {
	e := newEnv(t)
	e.hub.Inject(hubtest.Fault{Kind: hubtest.Stall, N: 1 << 20, StallFor: 200 * time.Millisecond})
	var wg sync.WaitGroup
	results := make([]*PullResult, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = e.store(t).Pull(context.Background(), repo, PullOptions{})
		}()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	if results[0].AlreadyInstalled == results[1].AlreadyInstalled {
		t.Fatalf("want exactly one download, got already_installed %v and %v", results[0].AlreadyInstalled, results[1].AlreadyInstalled)
	}
	if got, want := e.hub.BytesServed(""), selectedBytes(t, e.rel, e.dir); got != want {
		t.Fatalf("hub served %d bytes for two pulls, one copy is %d", got, want)
	}
	if rep, err := e.store(t).Verify(repo, true); err != nil || !rep.Passed() {
		t.Fatalf("verify after concurrent pulls: %v", err)
	}
}

// publishChanged publishes a copy of the bundle with one chunk file rewritten.
func publishChanged(t *testing.T, e *env, changed string) (string, int64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "v2")
	if err := exec.Command("cp", "-a", e.dir, dir).Run(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, changed))
	for i := range data {
		data[i] ^= 0x5a
	}
	os.Chmod(filepath.Join(dir, changed), 0o644)
	if err := os.WriteFile(filepath.Join(dir, changed), data, 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := bundle.LoadRelease(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := bundle.BuildInventory(dir, rel); err != nil {
		t.Fatal(err)
	}
	if err := rel.Write(dir); err != nil {
		t.Fatal(err)
	}
	commit, err := e.hub.Publish(repo, dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	return commit, int64(len(data))
}

func TestUpdateDownloadsOnlyTheChangedFileAndRollsBack(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := "coreai/chunk_L04-07.aimodel/weights/weight-00.bin"
	v2, size := publishChanged(t, e, changed)

	uc, err := s.CheckUpdate(context.Background(), repo, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if uc.UpToDate || uc.Latest != v2 || uc.Current != e.commit || len(uc.ChangedFiles) != 1 || uc.ChangedFiles[0] != changed || uc.DownloadBytes != size {
		t.Fatalf("update check = %+v", uc)
	}

	// A failing update leaves the old revision served.
	e.hub.Inject(hubtest.Fault{Kind: hubtest.FlipByte, Path: changed, N: 1})
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err == nil {
		t.Fatal("corrupt update installed")
	}
	if st, _ := s.Current(repo); st.Commit != e.commit {
		t.Fatalf("served revision changed to %s by a failed update", st.Commit)
	}
	e.hub.ClearFaults()
	e.hub.ResetCounters()
	res, err := s.Pull(context.Background(), repo, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range e.hub.Requests() {
		if r.Method == "GET" && strings.Contains(r.Path, "/resolve/") && !strings.HasSuffix(r.Path, "/"+changed) && !strings.HasSuffix(r.Path, "/release.json") {
			t.Fatalf("update fetched an unchanged file: %s", r.Path)
		}
	}
	if got := e.hub.BytesServed(changed); got != size || res.DownloadedFiles != 1 {
		t.Fatalf("update downloaded %d bytes of the changed file (want %d), %d files", got, size, res.DownloadedFiles)
	}
	if res.State.Commit != v2 || res.State.Previous != e.commit {
		t.Fatalf("state after update = %+v", res.State)
	}
	// Rollback serves v1 again; gc keeps both (current and previous).
	st, err := s.Rollback(repo)
	if err != nil || st.Commit != e.commit || st.Previous != v2 {
		t.Fatalf("rollback = %+v, %v", st, err)
	}
	if rep, err := s.Verify(repo, true); err != nil || !rep.Passed() {
		t.Fatalf("rolled-back revision does not verify: %v", err)
	}
	gc, err := s.GC(false)
	if err != nil || len(gc.Snapshots) != 0 || gc.Blobs != 0 {
		t.Fatalf("gc removed something still referenced: %+v %v", gc, err)
	}
}

func TestGCRemovesUnreferenced(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	c1 := "coreai/chunk_L00-03.aimodel/weights/weight-00.bin"
	c2 := "coreai/chunk_L04-07.aimodel/weights/weight-00.bin"
	old, _ := e.rel.File(c1)
	publishChanged(t, e, c1)
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	v1dir := e.dir
	e.dir = s.SnapshotDir(repo, mustCurrent(t, s).Commit) // v3 = v2 with another chunk changed
	v3, _ := publishChanged(t, e, c2)
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	gc, err := s.GC(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(gc.Snapshots) != 1 || !strings.HasSuffix(gc.Snapshots[0], e.commit) {
		t.Fatalf("gc removed snapshots %v, want only v1 %s", gc.Snapshots, e.commit)
	}
	// v1's unique blobs are its changed chunk and its release.json.
	relSize := fileSize(t, filepath.Join(v1dir, "release.json"))
	if gc.Blobs != 2 || gc.FreedBytes != old.Bytes+relSize || exists(s.blobPath(old.SHA256)) {
		t.Fatalf("gc = %+v, want v1's chunk blob (%d bytes) and release.json (%d) removed", gc, old.Bytes, relSize)
	}
	if st := mustCurrent(t, s); st.Commit != v3 {
		t.Fatalf("current = %+v", st)
	}
	if rep, err := s.Verify(repo, true); err != nil || !rep.Passed() {
		t.Fatalf("verify after gc: %v %v", err, rep.Err())
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || len(list[0].Snapshots) != 2 || list[0].Refs["main"] != v3 {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

func mustCurrent(t *testing.T, s *Store) State {
	st, err := s.Current(repo)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestOfflineMakesNoRequests(t *testing.T) {
	e := newEnv(t)
	online := e.store(t)
	if _, err := online.Pull(context.Background(), repo, PullOptions{Revision: "main"}); err != nil {
		t.Fatal(err)
	}
	e.hub.ResetCounters()
	offline := e.store(t)
	offline.Client = nil
	res, err := offline.Pull(context.Background(), repo, PullOptions{Revision: "main"})
	if err != nil || !res.AlreadyInstalled || res.Commit != e.commit {
		t.Fatalf("offline pull of an installed ref: %+v, %v", res, err)
	}
	if _, err := offline.Pull(context.Background(), repo, PullOptions{Revision: "v9"}); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Fatalf("offline pull of an unknown ref: %v", err)
	}
	if _, err := offline.CheckUpdate(context.Background(), repo, PullOptions{}); err == nil {
		t.Fatal("offline update check did not refuse")
	}
	if n := len(e.hub.Requests()); n != 0 {
		t.Fatalf("%d requests made offline", n)
	}
}

func TestPlainPullThenFullPullAddsDrafter(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	res, err := s.Pull(context.Background(), repo, PullOptions{Selection: bundle.Selection{Plain: true}})
	if err != nil || res.Report.Speculative {
		t.Fatalf("plain pull: %v %+v", err, res)
	}
	if exists(filepath.Join(res.Snapshot, "drafter")) {
		t.Fatal("plain snapshot has a drafter")
	}
	res, err = s.Pull(context.Background(), repo, PullOptions{})
	if err != nil || res.AlreadyInstalled || !res.Report.Speculative {
		t.Fatalf("full pull after plain: %v %+v", err, res)
	}
}

func TestRollbackWithoutPrevious(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	if _, err := s.Rollback(repo); err == nil || !strings.Contains(err.Error(), "no previous revision") {
		t.Fatalf("err = %v", err)
	}
}

func TestNotInstalledNamesRepoAndStore(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	want := repo + " is not installed in " + s.Root
	if dir, err := s.ServedDir(repo); err == nil || dir != "" || !strings.Contains(err.Error(), want) {
		t.Fatalf("ServedDir: %q, %v; want %q", dir, err, want)
	}
	if rep, err := s.Verify(repo, true); err == nil || rep != nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Verify: %+v, %v; want %q", rep, err, want)
	}
}

func fileSize(t *testing.T, p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func TestKeepCurrentThenActivate(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	v2, _ := publishChanged(t, e, "coreai/chunk_L00-03.aimodel/weights/weight-00.bin")
	res, err := s.Pull(context.Background(), repo, PullOptions{KeepCurrent: true})
	if err != nil || res.Commit != v2 || res.State.Commit != e.commit {
		t.Fatalf("install without switching: %+v, %v", res, err)
	}
	if !exists(s.SnapshotDir(repo, v2)) {
		t.Fatal("v2 snapshot missing")
	}
	st, err := s.Activate(repo, v2)
	if err != nil || st.Commit != v2 || st.Previous != e.commit {
		t.Fatalf("activate: %+v, %v", st, err)
	}
	if _, err := s.Activate(repo, strings.Repeat("0", 40)); err == nil {
		t.Fatal("activated a commit that is not installed")
	}
}

// TestMalformedReleaseInstallsNothing: a release.json that breaks the
// schema stops pull and update check, names repo@commit, and leaves the
// store without a snapshot or a served commit.
func TestMalformedReleaseInstallsNothing(t *testing.T) {
	e := newEnv(t)
	edited := filepath.Join(t.TempDir(), "v2")
	if err := os.CopyFS(edited, os.DirFS(e.dir)); err != nil {
		t.Fatal(err)
	}
	// The published release with "files" turned into a string.
	relPath := filepath.Join(edited, bundle.ReleaseFile)
	var doc map[string]any
	if data, err := os.ReadFile(relPath); err != nil || json.Unmarshal(data, &doc) != nil || doc["files"] == nil {
		t.Fatalf("release.json: %v", err)
	}
	doc["files"] = "not a list"
	data, _ := json.Marshal(doc)
	if err := os.WriteFile(relPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	bad, err := e.hub.Publish(repo, edited, "main")
	if err != nil {
		t.Fatal(err)
	}
	s := e.store(t)
	want := repo + "@" + bad
	if res, err := s.Pull(context.Background(), repo, PullOptions{Revision: "main"}); err == nil || res != nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "files") {
		t.Fatalf("pull of a malformed release: %+v, %v; want an error naming %s", res, err, want)
	}
	if _, err := os.Stat(s.SnapshotDir(repo, bad)); !os.IsNotExist(err) {
		t.Fatalf("snapshot of the malformed release exists: %v", err)
	}
	if st, err := s.Current(repo); err != nil || st.Commit != "" {
		t.Fatalf("current after the failed pull: %+v, %v", st, err)
	}
	if uc, err := s.CheckUpdate(context.Background(), repo, PullOptions{Revision: "main"}); err == nil || uc != nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("update check of a malformed release: %+v, %v; want an error naming %s", uc, err, want)
	}
}

// gc in another process while a pull has stored its blobs but not linked
// them yet (one link each, like garbage) waits for the pull instead of
// deleting them; afterwards it removes nothing the served snapshot needs.
func TestGCWaitsForPullsBlobs(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	other, err := Open(e.root) // its own lock files, as another process
	if err != nil {
		t.Fatal(err)
	}
	var gcRes *GCResult
	var gcErr error
	gcDone := make(chan struct{})
	ranDuringPull := false
	testHookAfterDownload = func() {
		go func() {
			gcRes, gcErr = other.GC(true)
			close(gcDone)
		}()
		select {
		case <-gcDone:
			ranDuringPull = true
		case <-time.After(300 * time.Millisecond):
		}
	}
	t.Cleanup(func() { testHookAfterDownload = nil })
	if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatalf("pull with gc running beside it: %v", err)
	}
	<-gcDone
	if ranDuringPull {
		t.Fatalf("gc finished while the pull's blobs were unlinked (removed %+v)", gcRes)
	}
	if gcErr != nil || gcRes.Blobs != 0 || gcRes.Partials != 0 {
		t.Fatalf("gc after the pull: %+v, %v; want nothing removed", gcRes, gcErr)
	}
	if rep, err := s.Verify(repo, true); err != nil || !rep.Passed() {
		t.Fatalf("verify after gc: %v %v", err, rep.Err())
	}
}

// An installed snapshot that fails its check is not "already installed":
// the next pull repairs it, downloading again only what is damaged (a
// blob changed in place), or nothing at all when only the tree lost a
// file; afterwards it verifies in full and is served again.
func TestPullRepairsADamagedSnapshot(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	ctx := context.Background()
	if _, err := s.Pull(ctx, repo, PullOptions{Revision: "main"}); err != nil {
		t.Fatal(err)
	}
	snap := s.SnapshotDir(repo, e.commit)
	files, err := e.rel.Select(bundle.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(snap, filepath.FromSlash(files[len(files)-1].Path))
	for _, c := range []struct {
		name     string
		damage   func()
		download int
	}{
		{"a blob changed in place", func() {
			os.Chmod(damaged, 0o644)
			f, err := os.OpenFile(damaged, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 1)
			f.ReadAt(b, 0)
			b[0] ^= 0xff
			f.WriteAt(b, 0)
			f.Close()
			future := time.Now().Add(time.Hour) // the record check sees the new mtime
			os.Chtimes(damaged, future, future)
		}, 1},
		{"a file of the tree removed", func() {
			os.Chmod(filepath.Dir(damaged), 0o755)
			if err := os.Remove(damaged); err != nil {
				t.Fatal(err)
			}
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.damage()
			if rep, err := s.Verify(repo, false); err == nil && rep.Passed() {
				t.Fatal("the damage was not detected by the fast check")
			}
			res, err := s.Pull(ctx, repo, PullOptions{Revision: "main"})
			if err != nil {
				t.Fatal(err)
			}
			if res.AlreadyInstalled || !res.Repaired || res.DownloadedFiles != c.download || res.State.Commit != e.commit {
				t.Fatalf("pull of the damaged snapshot: %+v; want repaired, %d downloads, serving %s", res, c.download, e.commit)
			}
			if rep, err := s.Verify(repo, true); err != nil || !rep.Passed() {
				t.Fatalf("full verify after the repair: %v %+v", err, rep)
			}
			again, err := s.Pull(ctx, repo, PullOptions{Revision: "main"})
			if err != nil || !again.AlreadyInstalled || again.Repaired {
				t.Fatalf("pull after the repair: %+v, %v; want already installed", again, err)
			}
		})
	}
}

// Damage the record check cannot see (a byte changed in place, every stat
// as recorded: hideFromRecord) is found by a pull with VerifyFull and repaired; a plain
// pull calls the snapshot installed.
func TestPullVerifyFullRepairsInPlaceDamage(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	ctx := context.Background()
	if _, err := s.Pull(ctx, repo, PullOptions{Revision: "main"}); err != nil {
		t.Fatal(err)
	}
	files, err := e.rel.Select(bundle.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	corruptInPlace(t, filepath.Join(s.SnapshotDir(repo, e.commit), filepath.FromSlash(files[len(files)-1].Path)))
	hideFromRecord(t, s, e.commit)
	if res, err := s.Pull(ctx, repo, PullOptions{Revision: "main"}); err != nil || !res.AlreadyInstalled {
		t.Fatalf("plain pull: %+v, %v; the record check cannot see this damage", res, err)
	}
	res, err := s.Pull(ctx, repo, PullOptions{Revision: "main", VerifyFull: true})
	if err != nil || !res.Repaired || res.DownloadedFiles != 1 {
		t.Fatalf("full pull of the damaged snapshot: %+v, %v; want repaired by one download", res, err)
	}
	if rep, err := s.Verify(repo, true); err != nil || !rep.Passed() {
		t.Fatalf("full verify after the repair: %v %+v", err, rep)
	}
}
