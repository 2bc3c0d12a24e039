package modelbackend_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/synth"
	"github.com/forgedaemon/forged/internal/sysinfo"
)

var tinyOnce struct {
	sync.Once
	dir string
	err error
}

// tinyDir is the tiny synthetic checkpoint, generated once per test binary.
func tinyDir(t testing.TB) string {
	t.Helper()
	tinyOnce.Do(func() {
		tinyOnce.dir, tinyOnce.err = os.MkdirTemp("", "forged-tiny")
		if tinyOnce.err == nil {
			tinyOnce.err = synth.Generate(tinyOnce.dir, synth.Options{Preset: "tiny", Seed: 1})
		}
	})
	if tinyOnce.err != nil {
		t.Fatal(tinyOnce.err)
	}
	return tinyOnce.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tinyOnce.dir != "" {
		os.RemoveAll(tinyOnce.dir)
	}
	os.Exit(code)
}

func serveServer(t testing.TB, b daemon.Backend) (*daemon.Server, *client.Client) {
	t.Helper()
	return serveServerSlots(t, b, 0)
}

// serveServerSlots serves b with slots generations at once (0: the default).
func serveServerSlots(t testing.TB, b daemon.Backend, slots int) (*daemon.Server, *client.Client) {
	t.Helper()
	sockDir, _ := os.MkdirTemp("", "frr")
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	ln, err := daemon.Listen(filepath.Join(sockDir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := daemon.New(b, daemon.Config{Slots: slots})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(context.Background(), ln); close(done) }()
	t.Cleanup(func() { srv.Shutdown(); <-done })
	c, err := client.Dial(context.Background(), filepath.Join(sockDir, "s"), client.Options{Name: "residency-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c
}

func greedy(ids []uint32, max uint64, session string) wire.GenerateArgs {
	return wire.GenerateArgs{IDs: ids, MaxTokens: &max, Session: session, Sampling: &wire.Sampling{Temperature: 0}}
}

func promptIDs(n, salt int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(10 + (i*37+salt*101)%200)
	}
	return out
}

// The memory model's estimate and the engine's measured account agree
// within 10%, for the total and for the per-session parts, with sessions at
// different context entries.
func TestMemoryEstimateMatchesEngine(t *testing.T) {
	b, err := modelbackend.Open(tinyDir(t), modelbackend.Options{Ladder: ane.Ladder{64, 128, 256}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv, c := serveServer(t, b)
	ctx := context.Background()
	for i, n := range []int{20, 90, 200} { // 64, 128 and 256 entries
		s, err := c.OpenSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Generate(ctx, greedy(promptIDs(n, i), 4, s)).Result()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("session %s: %d prompt tokens at context %d", s, n, res.Context)
	}
	checkEstimate(t, srv, b)
}

// checkEstimate checks the memory model's estimate against the backend's
// measured account: within 10% for the total, KV, state and weights.
func checkEstimate(t *testing.T, srv *daemon.Server, b daemon.Backend) {
	t.Helper()
	est, ok := srv.MemoryEstimate()
	if !ok {
		t.Fatal("the backend has no memory model")
	}
	got := b.Memory()
	for _, part := range []struct {
		name     string
		est, got uint64
	}{{"total", est.Total, got.Total}, {"kv", est.KV, got.KV}, {"state", est.State, got.State}, {"weights", est.Weights, got.Weights}} {
		t.Logf("%-7s estimate %10d measured %10d", part.name, part.est, part.got)
		if part.got == 0 || math.Abs(float64(part.est)-float64(part.got))/float64(part.got) > 0.10 {
			t.Errorf("%s: estimate %d vs measured %d: more than 10%% apart", part.name, part.est, part.got)
		}
	}
}

// A conversation crossing the smallest entry moves to the next one without
// changing its tokens (compared with a backend that starts at the large
// entry); past the largest entry the reply is context_exceeded naming the
// limit, never a truncation.
func TestContextGrowthKeepsTokens(t *testing.T) {
	run := func(ladder ane.Ladder) (contexts []uint64, tokens [][]uint32, err error) {
		b, err := modelbackend.Open(tinyDir(t), modelbackend.Options{Ladder: ladder})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		_, c := serveServer(t, b)
		ctx := context.Background()
		s, err := c.OpenSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var history []uint32
		for turn, n := range []int{30, 20, 60} {
			history = append(history, promptIDs(n, turn)...)
			st := c.Generate(ctx, greedy(history, 10, s))
			var ids []uint32
			for ev, err := range st.Tokens() {
				if err != nil {
					break
				}
				ids = append(ids, ev.IDs...)
			}
			res, err := st.Result()
			if err != nil {
				return contexts, tokens, err
			}
			contexts = append(contexts, res.Context)
			tokens = append(tokens, ids)
			history = append(history, ids...)
		}
		return contexts, tokens, nil
	}
	gotCtx, gotTokens, err := run(ane.Ladder{64, 128})
	if err == nil {
		t.Fatalf("a 3rd turn of ~130 positions on a 128 ladder succeeded (contexts %v)", gotCtx)
	}
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeContextExceeded || !strings.Contains(we.Message, "limit 128") {
		t.Fatalf("3rd turn: %v, want context_exceeded naming the 128 limit", err)
	}
	if !slices.Equal(gotCtx, []uint64{64, 128}) {
		t.Fatalf("contexts %v, want the 1st turn at 64 and the 2nd grown to 128", gotCtx)
	}
	wantCtx, wantTokens, err := run(ane.Ladder{256})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(wantCtx, []uint64{256, 256, 256}) {
		t.Fatalf("reference run contexts %v", wantCtx)
	}
	for i := range gotTokens {
		if !slices.Equal(gotTokens[i], wantTokens[i]) {
			t.Fatalf("turn %d: %v after growing, %v without growing", i, gotTokens[i], wantTokens[i])
		}
	}
}

// A session whose state memory pressure dropped continues with exactly the
// tokens it would have produced (its conversation is prefilled again:
// cached_tokens is 0 where the undisturbed session reuses its state).
func TestPressureDroppedSessionContinuesIdentically(t *testing.T) {
	dir := tinyDir(t)
	turns := func(t *testing.T, drop bool) (tokens [][]uint32, cached []uint64) {
		b, err := modelbackend.Open(dir, modelbackend.Options{Ladder: ane.Ladder{64, 128, 256}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		srv, c := serveServer(t, b)
		r := srv.EnableResidency(daemon.ResidencyOptions{Bundle: "tiny", Load: func(context.Context) (daemon.Backend, error) { return b, nil }})
		ctx := context.Background()
		s, err := c.OpenSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var history []uint32
		for turn := range 2 {
			if turn == 1 && drop {
				if steps := r.Pressure(sysinfo.Warning); len(steps) != 1 || steps[0].Session != s {
					t.Fatalf("warning pressure steps %v, want the idle session %s dropped", steps, s)
				}
			}
			history = append(history, promptIDs(25, turn)...)
			st := c.Generate(ctx, greedy(history, 8, s))
			var ids []uint32
			for ev, err := range st.Tokens() {
				if err != nil {
					break
				}
				ids = append(ids, ev.IDs...)
			}
			res, err := st.Result()
			if err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, ids)
			cached = append(cached, res.Usage.CachedTokens)
			history = append(history, ids...)
		}
		return tokens, cached
	}
	want, wantCached := turns(t, false)
	got, gotCached := turns(t, true)
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("turn %d after the drop: %v, undisturbed %v", i, got[i], want[i])
		}
	}
	if wantCached[1] == 0 || gotCached[1] != 0 {
		t.Fatalf("cached tokens on turn 2: undisturbed %d (want > 0), dropped %d (want 0)", wantCached[1], gotCached[1])
	}
}
