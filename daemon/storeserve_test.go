package daemon_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/internal/synthbundle"
)

const servedRepo = "anemll/forge-served"

// storeRig is a hub, a store pulled from it (as forgectl pull does) and a
// daemon serving the store with the fake engine, which answers with the
// commit it was opened at.
type storeRig struct {
	t      *testing.T
	hub    *hubtest.Hub
	root   string
	ts     *testServer
	c      *client.Client
	opened atomic.Int64
}

func newStoreRig(t *testing.T) *storeRig {
	rig := &storeRig{t: t, hub: hubtest.New(), root: filepath.Join(t.TempDir(), "data")}
	t.Cleanup(rig.hub.Close)
	return rig
}

func (rig *storeRig) publish(seed uint64) string {
	rig.t.Helper()
	dir := filepath.Join(rig.t.TempDir(), "b")
	if _, err := synthbundle.Generate(dir, synthbundle.Options{Seed: seed}); err != nil {
		rig.t.Fatal(err)
	}
	c, err := rig.hub.Publish(servedRepo, dir, "main")
	if err != nil {
		rig.t.Fatal(err)
	}
	return c
}

// store opens the store as a separate writer would (forgectl): its own
// Store, its own lock descriptors.
func (rig *storeRig) store() *store.Store {
	rig.t.Helper()
	st, err := store.Open(rig.root)
	if err != nil {
		rig.t.Fatal(err)
	}
	st.Client, st.MarginBytes = hub.New(rig.hub.URL, ""), 1<<20
	st.Client.Backoff, st.Client.MaxBackoff = time.Millisecond, time.Millisecond
	return st
}

func (rig *storeRig) pull(commit string) {
	rig.t.Helper()
	if _, err := rig.store().Pull(context.Background(), servedRepo, store.PullOptions{Revision: commit}); err != nil {
		rig.t.Fatal(err)
	}
}

func (rig *storeRig) serve(ctx context.Context) {
	rig.t.Helper()
	rig.ts = startServer(rig.t, daemon.Config{}, fakeengine.Options{})
	_, err := rig.ts.ServeStore(ctx, daemon.Bundles{Store: rig.store(), Repo: servedRepo, KeepAlive: -1, WatchDebounce: 50 * time.Millisecond,
		Open: func(dir, commit string) (daemon.Backend, error) {
			rig.opened.Add(1)
			return fakeengine.New(fakeengine.Options{Revision: commit}), nil
		}})
	if err != nil {
		rig.t.Fatal(err)
	}
	if rig.c, err = client.Dial(ctx, rig.ts.path, client.Options{Name: "store-test"}); err != nil {
		rig.t.Fatal(err)
	}
	rig.t.Cleanup(func() { rig.c.Close() })
}

// generate returns the revision the reply names, or the error.
func (rig *storeRig) generate(ctx context.Context) (string, error) {
	n, prompt := uint64(1), "hi"
	s := rig.c.Generate(ctx, wire.GenerateArgs{Prompt: &prompt, MaxTokens: &n})
	for _, err := range s.Tokens() {
		if err != nil {
			return "", err
		}
	}
	res, err := s.Result()
	if err != nil {
		return "", err
	}
	return res.Revision, nil
}

// tamper overwrites 8 KiB of a file of the snapshot in place: same size,
// new mtime, as an edit while the daemon is down would.
func tamper(t *testing.T, snap, rel string) {
	t.Helper()
	p := filepath.Join(snap, filepath.FromSlash(rel))
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	junk := []byte(strings.Repeat("\x55", 8<<10))
	if _, err := f.WriteAt(junk[:min(int64(len(junk)), fi.Size()/2)], fi.Size()/4); err != nil {
		t.Fatal(err)
	}
	later := fi.ModTime().Add(time.Second)
	os.Chtimes(p, later, later)
}

// A snapshot changed while the daemon was down is not served at start: the
// load verifies it first (the record check, hashing the file whose stat
// changed), refuses with a reason naming the file and never opens it; the
// next pull repairs it.
func TestModifiedSnapshotIsNotServedAtStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rig := newStoreRig(t)
	a := rig.publish(1)
	rig.pull(a)
	const file = "model/embed_tokens_fp16.npy"
	tamper(t, rig.store().SnapshotDir(servedRepo, a), file)
	rig.serve(ctx)
	_, err := rig.generate(ctx)
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("generate on a modified snapshot: %v, want unavailable naming %s", err, file)
	}
	if n := rig.opened.Load(); n != 0 {
		t.Fatalf("the modified snapshot was opened %d times", n)
	}
	st, err := rig.c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "unavailable" {
		t.Fatalf("state %q, want unavailable", st.State)
	}
	if _, err := rig.c.Pull(ctx, "", nil); err != nil {
		t.Fatalf("the pull that repairs it: %v", err)
	}
	// The repair rewrote files under the served snapshot, so the daemon's
	// watch may still be verifying them when the pull returns: that state
	// is transient (unavailable, "verifying") and must end in serving a.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		rev, err := rig.generate(ctx)
		if err == nil && rev == a {
			break
		}
		if err == nil || !strings.Contains(err.Error(), "verifying") || time.Now().After(deadline) {
			t.Fatalf("after the repair: %q %v, want %s", rev, err, a)
		}
	}
}

// A second writer of the store (forgectl pull B, pull C, gc) does not take
// away the revision the daemon serves: it stays installed, served and
// reported, also after a reload, and the daemon's watch verifies the
// revision it serves, not the store's current one.
func TestSecondWriterKeepsServedRevision(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rig := newStoreRig(t)
	a := rig.publish(1)
	rig.pull(a)
	rig.serve(ctx)
	if rev, err := rig.generate(ctx); err != nil || rev != a {
		t.Fatalf("serving %q %v, want %s", rev, err, a)
	}
	b, c := rig.publish(2), rig.publish(3)
	// The second writer is another process, as forgectl is: pull B, pull C, gc.
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^TestSecondWriterChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "FORGED_TEST_SECOND_WRITER="+strings.Join([]string{rig.root, rig.hub.URL, b, c}, " "))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SECOND-WRITER-DONE") {
		t.Fatalf("second writer: %v\n%s", err, out)
	}
	if cur, _ := rig.store().Current(servedRepo); cur.Commit != c || cur.Previous != b {
		t.Fatalf("store's current after the second writer: %+v, want %s after %s", cur, c, b)
	}
	snapA := rig.store().SnapshotDir(servedRepo, a)
	if _, err := os.Stat(snapA); err != nil {
		t.Fatalf("gc removed the served revision %s: %v\n%s", a, err, out)
	}
	if st, err := rig.c.Status(ctx); err != nil || st.State != "ready" || st.Bundle.Revision != a {
		t.Fatalf("status after the second writer: %+v %v, want ready serving %s", st, err, a)
	}
	// The admin ops report about what is served, not the moved record.
	var vr wire.VerifyResult
	if err := rig.c.Admin(ctx, wire.OpVerify, map[string]any{}, &vr); err != nil || vr.Commit != a || vr.Status != "PASS" {
		t.Fatalf("verify after the second writer: %+v %v, want PASS of %s", vr, err, a)
	}
	var uc wire.UpdateCheckResult
	if err := rig.c.Admin(ctx, wire.OpUpdateCheck, map[string]any{"revision": c}, &uc); err != nil || uc.Current != a || uc.UpToDate {
		t.Fatalf("update.check to %s after the second writer: %+v %v, want current %s, not up to date", c, uc, err, a)
	}
	time.Sleep(200 * time.Millisecond) // let the watch see gc's traffic, if any
	if err := rig.c.Admin(ctx, wire.OpUnload, map[string]any{"force": true}, nil); err != nil {
		t.Fatal(err)
	}
	if rev, err := rig.generate(ctx); err != nil || rev != a {
		t.Fatalf("after the other writer's pulls and gc, and a reload: %q %v, want still %s", rev, err, a)
	}
	// The watch follows A: a byte changed in A's snapshot stops serving,
	// although the store's current revision (C) is intact.
	tamper(t, snapA, "model/embed_tokens_fp16.npy")
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := rig.c.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == "unavailable" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %q after a change under the served snapshot %s", st.State, a)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSecondWriterChild is the second writer of TestSecondWriterKeepsServedRevision.
func TestSecondWriterChild(t *testing.T) {
	args := strings.Fields(os.Getenv("FORGED_TEST_SECOND_WRITER"))
	if len(args) != 4 {
		t.Skip("run by TestSecondWriterKeepsServedRevision")
	}
	st, err := store.Open(args[0])
	if err != nil {
		t.Fatal(err)
	}
	st.Client, st.MarginBytes = hub.New(args[1], ""), 1<<20
	for _, commit := range args[2:] {
		if _, err := st.Pull(context.Background(), servedRepo, store.PullOptions{Revision: commit}); err != nil {
			t.Fatal(err)
		}
	}
	gc, err := st.GC(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(gc.Snapshots) != 0 {
		t.Fatalf("gc removed %v: current and previous are kept, and the revision the daemon serves", gc.Snapshots)
	}
	fmt.Println("SECOND-WRITER-DONE")
}
