package daemon_test

import (
	"context"
	"iter"
	"os"
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
	"github.com/forgedaemon/forged/daemon/updater"
	"github.com/forgedaemon/forged/internal/synthbundle"
)

// The automatic update loop over a real store and a real HTTP hub (the
// engine is the fake one: Core AI cannot run here): a new revision on the
// tracked branch is downloaded, verified and switched to while a stream
// finishes on the old revision, the next request names it, gc keeps only current and previous, and a revision that arrives
// corrupted is a failure event while the served revision keeps serving.
func TestAutomaticUpdates(t *testing.T) {
	const repo = "anemll/forge-synth"
	h := hubtest.New()
	defer h.Close()
	publish := func(seed uint64) string {
		dir := filepath.Join(t.TempDir(), "b")
		if _, err := synthbundle.Generate(dir, synthbundle.Options{Seed: seed}); err != nil {
			t.Fatal(err)
		}
		c, err := h.Publish(repo, dir, "main")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c1 := publish(1)
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st.Client, st.MarginBytes = hub.New(h.URL, ""), 1<<20
	st.Client.Backoff, st.Client.MaxBackoff = time.Millisecond, time.Millisecond
	// Automatic updates download through a second view of the store whose
	// transport is rate limited (virtual time: the test never sleeps).
	bg, err := store.Open(st.Root)
	if err != nil {
		t.Fatal(err)
	}
	bg.Client, bg.MarginBytes = hub.New(h.URL, ""), 1<<20
	bg.Client.Backoff, bg.Client.MaxBackoff = time.Millisecond, time.Millisecond
	var slept atomic.Int64 // virtual nanoseconds
	lim := &updater.Limiter{Rate: func() int64 { return 1 << 20 }, Now: func() time.Time { return time.Unix(0, slept.Load()) },
		Sleep: func(_ context.Context, d time.Duration) error { slept.Add(int64(d)); return nil }}
	bg.Client.HTTP.Transport = lim.Transport(bg.Client.HTTP.Transport)
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := ts.ServeStore(ctx, daemon.Bundles{Store: st, Background: bg, Repo: repo, KeepAlive: -1,
		Open: func(dir, commit string) (daemon.Backend, error) {
			if _, err := os.Stat(filepath.Join(dir, "release.json")); err != nil {
				return nil, err
			}
			return fakeengine.New(fakeengine.Options{Revision: commit, TokenDelay: 10 * time.Millisecond}), nil
		}}); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(ctx, ts.path, client.Options{Name: "updates-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Pull(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	revision := func() string {
		t.Helper()
		n, prompt := uint64(2), "hi"
		s := c.Generate(ctx, wire.GenerateArgs{Prompt: &prompt, MaxTokens: &n})
		for _, err := range s.Tokens() {
			if err != nil {
				t.Fatal(err)
			}
		}
		res, err := s.Result()
		if err != nil {
			t.Fatal(err)
		}
		return res.Revision
	}
	if r := revision(); r != c1 {
		t.Fatalf("serving %q, want %s", r, c1)
	}
	events := make(chan string, 64)
	go func() {
		for ev, err := range c.Subscribe(ctx) {
			if err != nil {
				return
			}
			events <- ev.Reason
		}
	}()
	waitEvent := func(want string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case r := <-events:
				if strings.Contains(r, want) {
					return
				}
			case <-timeout:
				t.Fatalf("no event mentioning %q", want)
			}
		}
	}
	wake := make(chan struct{})
	policy := func() updater.Policy { return updater.Policy{Auto: true, Interval: time.Hour} }
	loopDone := make(chan struct{})
	go func() { defer close(loopDone); ts.RunUpdates(ctx, policy, wake) }()

	if d := slept.Load(); d != 0 {
		t.Fatalf("the admin pull went through the background limiter (%s)", time.Duration(d))
	}
	// A stream running when the update lands finishes on the old revision.
	n, prompt := uint64(40), "a long answer"
	long := c.Generate(ctx, wire.GenerateArgs{Prompt: &prompt, MaxTokens: &n})
	next, stopTokens := iter.Pull2(long.Tokens())
	if _, err, ok := next(); !ok || err != nil {
		t.Fatalf("the long stream did not start: %v", err)
	}
	c2 := publish(2)
	wake <- struct{}{}
	for {
		if _, err, ok := next(); !ok || err != nil {
			break
		}
	}
	stopTokens()
	if res, err := long.Result(); err != nil || res.Revision != c1 {
		t.Fatalf("the stream running during the update: %+v %v, want it finished on %s", res, err, c1)
	}
	waitEvent("now serving " + c2)
	if slept.Load() == 0 {
		t.Fatal("the automatic update did not download through the rate-limited store")
	}
	if r := revision(); r != c2 {
		t.Fatalf("after the update the reply names %q, want %s", r, c2)
	}
	c3 := publish(3)
	wake <- struct{}{}
	waitEvent("now serving " + c3)
	if r := revision(); r != c3 {
		t.Fatalf("after the second update the reply names %q, want %s", r, c3)
	}
	if _, err := os.Stat(st.SnapshotDir(repo, c1)); !os.IsNotExist(err) {
		t.Errorf("gc kept %s (neither current nor previous): %v", c1, err)
	}
	if _, err := os.Stat(st.SnapshotDir(repo, c2)); err != nil {
		t.Errorf("gc removed the previous revision %s: %v", c2, err)
	}

	// A revision whose files arrive corrupted never goes live.
	c4 := publish(4)
	h.Inject(hubtest.Fault{Kind: hubtest.FlipByte, N: 3})
	wake <- struct{}{}
	waitEvent("automatic update failed (retry in 1m0s)")
	if r := revision(); r != c3 {
		t.Fatalf("after a failed update to %s the reply names %q, want %s", c4, r, c3)
	}
	cancel()
	<-loopDone
}
