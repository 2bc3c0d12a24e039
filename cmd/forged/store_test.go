package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/testbundle"
)

// tinyBundle assembles a runnable bundle (model/ + export/) from the tiny
// synthetic checkpoint with seed: an RTN export, as the reference backend
// serves it.
func chatRevision(t *testing.T, c *client.Client) string {
	t.Helper()
	n := uint64(3)
	st := c.Chat(context.Background(), wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "hi"}}, MaxTokens: &n, Thinking: "off"})
	for _, err := range st.Tokens() {
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := st.Result()
	if err != nil {
		t.Fatal(err)
	}
	return res.Revision
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// forged run --repo over a real HTTP hub: not installed → pull (progress
// events) → serves the snapshot with the reference backend → update.check
// sees a new revision → update.apply switches → rollback restores → gc
// keeps current and previous → a byte changed under the served snapshot
// fails the bundle within 2 s and rollback brings back a verified one.
func TestRunServesStoreSnapshot(t *testing.T) {
	const repo = "anemll/forge-tiny"
	b1, b2 := testbundle.Tiny(t, 4), testbundle.Tiny(t, 5)
	h := hubtest.New()
	defer h.Close()
	c1, err := h.Publish(repo, b1, "main")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("FORGE_OFFLINE", "")
	// Automatic updates off: this test drives every step by hand.
	cfg := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(cfg, []byte(`{"update": {"auto": false}, "context": {"max": 20480}}`), 0o644)
	sock, stop := runInBackground(t, runFlags{repo: repo, keepAlive: -1, config: cfg, changed: flagsGiven("socket", "data", "log-level", "repo", "keep-alive")})
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run returned %v", err)
		}
	}()
	ctx := context.Background()
	c, err := client.Dial(ctx, sock, client.Options{Name: "store-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if caps := c.Hello().Capabilities; !slices.Contains(caps, wire.OpPull) || !slices.Contains(caps, wire.OpUpdateApply) || !slices.Contains(caps, wire.OpConfigSet) {
		t.Errorf("capabilities %v: want the store ops and config.set", caps)
	}
	if st, err := c.Status(ctx); err != nil || st.State != wire.StateUnavailable || !strings.Contains(st.Reason, "not installed") {
		t.Fatalf("before pull: %+v %v", st, err)
	}

	var kinds []string
	pr, err := c.Pull(ctx, "", func(e wire.ProgressEvent) { kinds = append(kinds, e.Kind) })
	if err != nil {
		t.Fatal(err)
	}
	if pr.Commit != c1 || pr.Serving != c1 || pr.DownloadedBytes == 0 {
		t.Fatalf("pull result %+v, want commit %s", pr, c1)
	}
	for _, k := range []string{"resolved", "file_done", "installed"} {
		if !slices.Contains(kinds, k) {
			t.Errorf("pull progress events %v lack %q", kinds, k)
		}
	}
	if rev := chatRevision(t, c); rev != c1 {
		t.Fatalf("chat after pull reports revision %q, want %s", rev, c1)
	}
	// context.max 20480 keeps the 8K and 16K entries of the ladder.
	if ms, err := c.Models(ctx); err != nil || len(ms) != 1 || !slices.Equal(ms[0].ContextEntries, []uint64{8192, 16384}) {
		t.Fatalf("models with context.max 20480: %+v %v", ms, err)
	}
	var vr wire.VerifyResult
	if err := c.Admin(ctx, wire.OpVerify, wire.VerifyArgs{Full: true}, &vr); err != nil || vr.Status != "PASS" || vr.Commit != c1 || vr.VerifiedFiles == 0 {
		t.Fatalf("verify: %+v %v", vr, err)
	}

	c2, err := h.Publish(repo, b2, "main")
	if err != nil {
		t.Fatal(err)
	}
	var uc wire.UpdateCheckResult
	if err := c.Admin(ctx, wire.OpUpdateCheck, nil, &uc); err != nil || uc.UpToDate || uc.Current != c1 || uc.Latest != c2 || len(uc.ChangedFiles) == 0 {
		t.Fatalf("update.check: %+v %v", uc, err)
	}
	ur, err := c.UpdateApply(ctx, "", nil)
	if err != nil || ur.Serving != c2 || ur.Previous != c1 {
		t.Fatalf("update.apply: %+v %v", ur, err)
	}
	if rev := chatRevision(t, c); rev != c2 {
		t.Fatalf("after update.apply the reply names %q, want %s", rev, c2)
	}
	if err := c.Admin(ctx, wire.OpUpdateRollback, nil, nil); err != nil {
		t.Fatal(err)
	}
	if rev := chatRevision(t, c); rev != c1 {
		t.Fatalf("after rollback the reply names %q, want %s", rev, c1)
	}
	var gc wire.GCResult
	if err := c.Admin(ctx, wire.OpGC, nil, &gc); err != nil || len(gc.RemovedSnapshots) != 0 {
		t.Fatalf("gc removed current or previous: %+v %v", gc, err)
	}

	// A byte changed under the served snapshot (c1) in a file c2 does not
	// share (snapshots hard-link one blob per content): failed within 2 s.
	data := filepath.Join(runDataDir(sock), "snapshots", repo, c1, filepath.FromSlash(uc.ChangedFiles[0]))
	os.Chmod(data, 0o644)
	f, err := os.OpenFile(data, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("X"), 3)
	f.Close()
	changed := time.Now()
	waitFor(t, "the bundle to fail verification", func() bool {
		st, err := c.Status(ctx)
		return err == nil && st.State == wire.StateUnavailable && strings.Contains(st.Reason, "verification failed")
	})
	if d := time.Since(changed); d > 2*time.Second {
		t.Errorf("the change was detected after %s, want within 2s", d)
	}
	_, err = c.Tokenize(ctx, "x")
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnavailable {
		t.Fatalf("a failed bundle still serves: %v", err)
	}
	// Pulling the corrupted revision again repairs it: the damaged file is
	// downloaded again (nothing else), and it serves once it verifies.
	pr, err = c.Pull(ctx, c1, nil)
	if err != nil || pr.AlreadyInstalled || pr.DownloadedBytes == 0 || pr.DownloadedBytes >= pr.Bytes || pr.Serving != c1 {
		t.Fatalf("pull of the installed corrupted revision: %+v, %v; want it repaired by downloading only the damaged file, then served", pr, err)
	}
	if rev := chatRevision(t, c); rev != c1 {
		t.Fatalf("after the repair the reply names %q, want %s", rev, c1)
	}
	// Rollback to c2 (intact) serves again.
	if err := c.Admin(ctx, wire.OpUpdateRollback, nil, nil); err != nil {
		t.Fatal(err)
	}
	if rev := chatRevision(t, c); rev != c2 {
		t.Fatalf("after rolling back from the failed revision the reply names %q, want %s", rev, c2)
	}
}

// runDataDir is the data directory runInBackground gave the daemon.
func runDataDir(sock string) string { return filepath.Join(filepath.Dir(filepath.Dir(sock)), "data") }

// flagsGiven reports the named flags as given on the command line.
func flagsGiven(names ...string) func(string) bool {
	return func(n string) bool { return slices.Contains(names, n) }
}

// With automatic updates on (the default), a repository not installed yet
// is installed at start, without waiting for the first interval.
func TestRunInstallsTrackedRepoAtStart(t *testing.T) {
	const repo = "anemll/forge-tiny"
	h := hubtest.New()
	defer h.Close()
	c1, err := h.Publish(repo, testbundle.Tiny(t, 6), "main")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("FORGE_OFFLINE", "")
	sock, stop := runInBackground(t, runFlags{repo: repo, keepAlive: -1})
	defer stop()
	c, err := client.Dial(context.Background(), sock, client.Options{Name: "auto-install-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ev, err := range c.Subscribe(ctx) {
		if err != nil {
			t.Fatalf("waiting for the automatic install: %v", err)
		}
		if strings.Contains(ev.Reason, "automatic update") {
			if !strings.Contains(ev.Reason, "now serving "+c1) {
				t.Fatalf("automatic install: %q", ev.Reason)
			}
			break
		}
	}
	if rev := chatRevision(t, c); rev != c1 {
		t.Fatalf("serving %q after the automatic install, want %s", rev, c1)
	}
}

// A bundle published as the real one is (Core AI packages, no export/):
// on Linux auto says why it cannot be served and how to fix it, and
// forged run --backend coreai serves it through the stand-in bridge named
// by FORGE_BRIDGE (status names the backend).
func TestRunServesCoreAIOnlyBundle(t *testing.T) {
	bridge, err := standin.Shared()
	if errors.Is(err, standin.ErrNoCompiler) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	const repo = "anemll/forge-tiny-coreai"
	h := hubtest.New()
	defer h.Close()
	commit, err := h.Publish(repo, testbundle.TinyCoreAI(t, 7, testbundle.CoreAIOptions{Contexts: []int{1024}, NoExport: true}), "main")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("FORGE_OFFLINE", "")
	t.Setenv(cai.BridgeEnv, bridge)
	for _, backend := range []string{"auto", "coreai"} {
		t.Run(backend, func(t *testing.T) {
			sock, stop := runInBackground(t, runFlags{repo: repo, keepAlive: -1, backend: backend})
			defer stop()
			c, err := client.Dial(context.Background(), sock, client.Options{Name: "coreai-only-test"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var reason string
			waitFor(t, "the automatic install", func() bool {
				st, err := c.Status(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				reason = st.Reason
				return st.Bundle.Revision == commit || strings.Contains(reason, "now serving")
			})
			n := uint64(3)
			res, err := c.Chat(context.Background(), wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "hi"}}, MaxTokens: &n, Thinking: "off"}).Result()
			if backend == "auto" {
				const want = "this bundle carries only Core AI packages; the Core AI bridge is not available on linux: pull with --include-export to serve it on the CPU"
				var we *wire.Error
				if !errors.As(err, &we) || we.Code != wire.CodeUnavailable || !strings.Contains(we.Message, want) {
					t.Fatalf("auto on linux: %v, want unavailable: %s", err, want)
				}
				st, _ := c.Status(context.Background())
				if st.State != wire.StateUnavailable || !strings.Contains(st.Reason, want) {
					t.Fatalf("auto on linux: state %s (%s)", st.State, st.Reason)
				}
				return
			}
			if err != nil || res.Revision != commit || res.Usage.GeneratedTokens == 0 {
				t.Fatalf("chat through coreai: %+v, %v", res, err)
			}
			st, err := c.Status(context.Background())
			if err != nil || st.Backend == nil || st.Backend.Name != wire.BackendCoreAI || st.Backend.BridgePath != bridge {
				t.Fatalf("status backend %+v, %v", st.Backend, err)
			}
		})
	}
}
