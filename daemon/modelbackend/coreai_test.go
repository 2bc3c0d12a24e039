package modelbackend_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/daemon/residency"
	"github.com/forgedaemon/forged/internal/sysinfo"
	"github.com/forgedaemon/forged/internal/testbundle"
)

// The Core AI tests serve a synthetic Core AI bundle (its coreai/ chunk and
// head packages are stand-in packages whose functions refchunk computes
// from the export's effective weights) through daemon/modelbackend,
// ane/coreai's purego binding and the stand-in bridge's real cai_* C ABI,
// over a real Unix socket — and compare with the reference engine serving
// the same bundle's export/.

// Contexts of the test bundles: small, so one prompt crosses an entry.
var coreaiContexts = []int{1024, 2048}

var (
	caiOnce   sync.Once
	caiBridge string
	caiErr    error
)

func bridgeOrSkip(t testing.TB) string {
	t.Helper()
	caiOnce.Do(func() { caiBridge, caiErr = standin.Shared() })
	if errors.Is(caiErr, standin.ErrNoCompiler) {
		t.Skip(caiErr)
	}
	if caiErr != nil {
		t.Fatal(caiErr)
	}
	return caiBridge
}

// coreaiOnly copies a bundle without its export/: what a Mac pulls.
func coreaiOnly(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "snapshot")
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "export" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(out, rel), 0o755)
		}
		return os.Link(p, filepath.Join(out, rel))
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func openCoreAI(t testing.TB, dir string, opts modelbackend.Options) *modelbackend.Backend {
	t.Helper()
	opts.Bridge = bridgeOrSkip(t)
	b, err := modelbackend.OpenCoreAIBundle(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chatIDs streams one greedy chat and returns the token ids of its events
// and the final result.
func chatIDs(t testing.TB, c *client.Client, session string, text string, max uint64, speculative bool) ([]uint32, *wire.GenerationResult) {
	t.Helper()
	return streamIDs(t, c.Chat(context.Background(), wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: text}}, MaxTokens: &max,
		Thinking: "off", Session: session, Speculative: &speculative, Sampling: &wire.Sampling{Temperature: 0}}))
}

// streamIDs collects a stream's token ids and its result.
func streamIDs(t testing.TB, st *client.Stream) ([]uint32, *wire.GenerationResult) {
	t.Helper()
	var ids []uint32
	for ev, err := range st.Tokens() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.IDs...)
	}
	res, err := st.Result()
	if err != nil {
		t.Fatal(err)
	}
	return ids, res
}

// sessionParked asks status whether session s is parked.
func sessionParked(t testing.TB, c *client.Client, s string) bool {
	t.Helper()
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range st.Sessions {
		if si.Session == s {
			return si.Parked && si.Context == 0 && si.Tokens > 0
		}
	}
	return false
}

// Prompts: two short, one whose prompt plus max_tokens crosses the 256
// entry into the 512 one.
var coreaiPrompts = []string{
	"Write one sentence about the Neural Engine.",
	"List three colours.",
	strings.Repeat("The daemon keeps the model resident and streams tokens to every app. ", 40),
}

// TestCoreAIServesLikeTheReference: over a real Unix socket, the daemon
// serving a Core AI bundle without export/ gives the greedy chat output
// of the reference engine serving the same model's export, token for
// token, for three prompts, one of which crosses a context entry; status
// and hello name the backend.
func TestCoreAIServesLikeTheReference(t *testing.T) {
	bridgeOrSkip(t)
	full := testbundle.TinyCoreAI(t, 5, testbundle.CoreAIOptions{Contexts: coreaiContexts})
	// The exact mode, which the stand-in bridge matches token for token;
	// the serving default (fast: integer products) is within a measured KL
	// bound of it, not token for token (ane/ref BenchmarkFastNumericsKL).
	ref, err := modelbackend.OpenRefBundle(full, modelbackend.Options{Ladder: coreaiContexts, ExactNumerics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	cai := openCoreAI(t, coreaiOnly(t, full), modelbackend.Options{})
	defer cai.Close()
	_, rc := serveServer(t, ref)
	_, cc := serveServer(t, cai)
	if h := cc.Hello(); h.Backend == nil || h.Backend.Name != wire.BackendCoreAI || !strings.Contains(h.Backend.BridgeRelease, "stand-in") || len(h.Backend.PackageMPSGraph) == 0 {
		t.Errorf("hello backend %+v, want coreai naming the stand-in bridge and the packages", h.Backend)
	}
	if h := rc.Hello(); h.Backend == nil || h.Backend.Name != wire.BackendRef || h.Backend.Kernels == "" || h.Backend.Numerics != "exact" {
		t.Errorf("hello backend %+v, want ref with its kernel level, in the exact numerics it was opened with", h.Backend)
	}
	crossed := false
	for i, p := range coreaiPrompts {
		want, wres := chatIDs(t, rc, "", p, 24, false)
		got, gres := chatIDs(t, cc, "", p, 24, false)
		if len(want) == 0 || !slices.Equal(got, want) || gres.Text != wres.Text {
			t.Fatalf("prompt %d: Core AI %v %q, reference %v %q", i, got, gres.Text, want, wres.Text)
		}
		if gres.Context != wres.Context {
			t.Errorf("prompt %d: Core AI ran at context %d, the reference at %d", i, gres.Context, wres.Context)
		}
		crossed = crossed || gres.Context > uint64(coreaiContexts[0])
	}
	if !crossed {
		t.Error("no prompt crossed from the first entry into the second")
	}
	st, err := cc.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Backend == nil || st.Backend.Name != wire.BackendCoreAI || st.Backend.KV != "v8" {
		t.Errorf("status backend %+v", st.Backend)
	}
}

// TestCoreAISpeculativeEqualsGreedy: with the bundle's DFlash2 drafter
// package on Core AI, speculative greedy output equals plain greedy, the
// drafter is the one named in status, and the acceptance histogram counts
// the cycles.
func TestCoreAISpeculativeEqualsGreedy(t *testing.T) {
	bridgeOrSkip(t)
	dir := coreaiOnly(t, testbundle.TinyCoreAI(t, 6, testbundle.CoreAIOptions{Contexts: coreaiContexts, Drafter: true}))
	b := openCoreAI(t, dir, modelbackend.Options{})
	defer b.Close()
	if sp := b.Speculation(); !strings.HasPrefix(sp, "dflash2 ") {
		t.Fatalf("speculation %q, want the bundle's DFlash2 drafter", sp)
	}
	_, c := serveServer(t, b)
	for i, p := range coreaiPrompts[:2] {
		plain, _ := chatIDs(t, c, "", p, 32, false)
		spec, res := chatIDs(t, c, "", p, 32, true)
		if !slices.Equal(spec, plain) {
			t.Fatalf("prompt %d: speculative %v, plain %v", i, spec, plain)
		}
		var cycles uint64
		for _, n := range res.Usage.Acceptance {
			cycles += n
		}
		if cycles == 0 {
			t.Errorf("prompt %d: no speculative cycle was counted (acceptance %v)", i, res.Usage.Acceptance)
		}
	}
}

// TestCoreAISessionsShareTheModel: two sessions generating at once on one
// loaded set of chunk programs give the tokens each gives alone, and a
// session parked by memory pressure resumes without prefilling again
// (cached tokens) and continues with the tokens of an undisturbed run.
func TestCoreAISessionsShareTheModel(t *testing.T) {
	bridgeOrSkip(t)
	dir := coreaiOnly(t, testbundle.TinyCoreAI(t, 5, testbundle.CoreAIOptions{Contexts: coreaiContexts}))
	ctx := context.Background()
	alone := map[string][]uint32{}
	{
		b := openCoreAI(t, dir, modelbackend.Options{})
		_, c := serveServer(t, b)
		for _, p := range coreaiPrompts[:2] {
			alone[p], _ = chatIDs(t, c, "", p, 24, false)
		}
		b.Close()
	}
	b := openCoreAI(t, dir, modelbackend.Options{SpillDir: t.TempDir()})
	defer b.Close()
	srv, c := serveServerSlots(t, b, 2)
	var wg sync.WaitGroup
	got := make([][]uint32, 2)
	for i, p := range coreaiPrompts[:2] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.OpenSession(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			got[i], _ = chatIDs(t, c, s, p, 24, false)
		}()
	}
	wg.Wait()
	for i, p := range coreaiPrompts[:2] {
		if !slices.Equal(got[i], alone[p]) {
			t.Errorf("concurrent session %d: %v, alone %v", i, got[i], alone[p])
		}
	}

	// Parking: two turns of one session, with and without a park between.
	r := srv.EnableResidency(daemon.ResidencyOptions{Bundle: "tiny", Load: func(context.Context) (daemon.Backend, error) { return b, nil }})
	turns := func(park bool) (ids [][]uint32, cached uint64) {
		s, err := c.OpenSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		history := []uint32{}
		for turn := range 2 {
			if turn == 1 && park {
				steps := r.Pressure(sysinfo.Warning)
				if !slices.ContainsFunc(steps, func(st residency.Step) bool { return st.Session == s }) {
					t.Fatalf("warning pressure steps %v do not free session %s", steps, s)
				}
				if st, _ := c.Status(ctx); !sessionParked(t, c, s) {
					t.Logf("status sessions %+v", st.Sessions)
					t.Fatalf("session %s is not parked after the pressure step", s)
				}
			}
			history = append(history, promptIDs(40, turn)...)
			out, res := streamIDs(t, c.Generate(ctx, greedy(history, 8, s)))
			ids = append(ids, out)
			history = append(history, out...)
			if turn == 1 {
				cached = res.Usage.CachedTokens
			}
		}
		return ids, cached
	}
	want, _ := turns(false)
	parked, cached := turns(true)
	for i := range want {
		if !slices.Equal(parked[i], want[i]) {
			t.Fatalf("turn %d after parking: %v, undisturbed %v", i, parked[i], want[i])
		}
	}
	if cached == 0 {
		t.Error("the parked session prefilled its history again (0 cached tokens on the turn after resuming)")
	}
}

// TestCoreAIMemoryEstimateMatchesBridge: the memory model from the
// manifest and what the bridge actually allocated (status memory) agree
// within 10%, with sessions at both context entries.
func TestCoreAIMemoryEstimateMatchesBridge(t *testing.T) {
	bridgeOrSkip(t)
	dir := coreaiOnly(t, testbundle.TinyCoreAI(t, 5, testbundle.CoreAIOptions{Contexts: coreaiContexts}))
	b := openCoreAI(t, dir, modelbackend.Options{})
	defer b.Close()
	srv, c := serveServer(t, b)
	ctx := context.Background()
	for i, n := range []int{20, 1100} { // the 1024 and 2048 entries
		s, err := c.OpenSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Generate(ctx, greedy(promptIDs(n, i), 4, s)).Result(); err != nil {
			t.Fatal(err)
		}
	}
	checkEstimate(t, srv, b) // b.Memory() is what the bridge allocated
}

// serveResident serves the Core AI bundle dir under residency control,
// loading it on the first request (and again after an unload).
func serveResident(t *testing.T, dir string, opts modelbackend.Options, ro daemon.ResidencyOptions) (*daemon.Server, *daemon.Residency, *client.Client) {
	t.Helper()
	if opts.Bridge == "" {
		opts.Bridge = bridgeOrSkip(t)
	}
	srv, c := serveServer(t, daemon.Unavailable{Reason: "not loaded"})
	ro.Bundle = "tiny-coreai"
	ro.Load = func(context.Context) (daemon.Backend, error) { return modelbackend.OpenCoreAIBundle(dir, opts) }
	r := srv.EnableResidency(ro)
	t.Cleanup(func() { r.Unload(true, "test over") })
	return srv, r, c
}

// TestCoreAIResidencyReleasesTheBridge: unload, keep-alive and the
// critical step of the pressure ladder each release every bridge object
// the model held (the stand-in bridge's live counts return to where they
// were), and the next request loads it again and gets the same tokens.
func TestCoreAIResidencyReleasesTheBridge(t *testing.T) {
	bridgeOrSkip(t)
	dir := coreaiOnly(t, testbundle.TinyCoreAI(t, 5, testbundle.CoreAIOptions{Contexts: coreaiContexts, Drafter: true}))
	before := standin.Live()
	if before != [4]int64{} {
		t.Fatalf("live bridge objects before the test %v: an earlier test leaked", before)
	}
	now := time.Unix(1000, 0)
	var clock sync.Mutex
	tick := func(d time.Duration) { clock.Lock(); now = now.Add(d); clock.Unlock() }
	_, r, c := serveResident(t, dir, modelbackend.Options{}, daemon.ResidencyOptions{KeepAlive: time.Minute,
		Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	ctx := context.Background()
	s, err := c.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := chatIDs(t, c, s, coreaiPrompts[0], 16, true)
	loaded := standin.Live()
	if loaded[0] <= before[0] || loaded[2] <= before[2] {
		t.Fatalf("live bridge objects while loaded %v, before %v: nothing was allocated?", loaded, before)
	}
	release := func(how string, f func()) {
		t.Helper()
		f()
		if st, _ := r.State(); st != residency.Ready {
			t.Fatalf("%s: the bundle is %s, want unloaded (ready)", how, st)
		}
		if got := standin.Live(); got != before {
			t.Fatalf("%s: live bridge models, functions, buffers, bindings %v, want none", how, got)
		}
		got, _ := chatIDs(t, c, "", coreaiPrompts[0], 16, true)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: after reloading %v, before %v", how, got, want)
		}
	}
	release("unload", func() {
		if err := r.Unload(false, "test"); err != nil {
			t.Fatal(err)
		}
	})
	release("keep-alive", func() { tick(2 * time.Minute); r.Tick() })
	release("critical pressure", func() {
		steps := r.Pressure(sysinfo.Critical)
		if !slices.ContainsFunc(steps, func(st residency.Step) bool { return st.Kind == residency.Unload }) {
			t.Fatalf("critical pressure steps %v do not unload", steps)
		}
	})
}

// libraryCopy is a fresh instance of the stand-in bridge (a library is
// loaded once per path): environment switches of the C file apply to it
// from its first call.
func libraryCopy(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(bridgeOrSkip(t))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "libcopy.so")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadFails serves dir and checks the model cannot load: the daemon keeps
// answering, the bundle is unavailable, and the reason names each of want.
func loadFails(t *testing.T, dir string, opts modelbackend.Options, want ...string) {
	t.Helper()
	srv, r, c := serveResident(t, dir, opts, daemon.ResidencyOptions{})
	_, err := c.Chat(context.Background(), wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "hi"}}}).Result()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnavailable {
		t.Fatalf("chat on a model that cannot load: %v, want unavailable", err)
	}
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatalf("the daemon stopped answering after a failed load: %v", err)
	}
	if !strings.HasPrefix(st.Reason, "loading failed: ") {
		t.Errorf("state reason %q, want loading failed: …", st.Reason)
	}
	for _, w := range want {
		if !strings.Contains(st.Reason, w) || !strings.Contains(we.Message, w) {
			t.Errorf("state %s, reason %q / error %q: want it to name %q", st.State, st.Reason, we.Message, w)
		}
	}
	if st.State != wire.StateUnavailable {
		t.Errorf("state %s, want unavailable", st.State)
	}
	_, _ = srv, r
}

// TestCoreAINativeFailuresAreStates: a missing bridge, a bridge of another
// ABI version, a chunk package that fails to load and an OS MPSGraph
// older than the packages' each leave the daemon up with the bundle
// unavailable and a reason naming the cause; a run failing in the middle
// of a stream ends that request with internal naming the chunk and entry,
// and the next request is served.
func TestCoreAINativeFailuresAreStates(t *testing.T) {
	bridgeOrSkip(t)
	full := testbundle.TinyCoreAI(t, 5, testbundle.CoreAIOptions{Contexts: coreaiContexts})
	dir := coreaiOnly(t, full)
	t.Run("missing bridge", func(t *testing.T) {
		loadFails(t, dir, modelbackend.Options{Bridge: filepath.Join(t.TempDir(), "libCoreAIBridge.dylib")}, "backend coreai", "no Core AI bridge was found")
	})
	t.Run("ABI mismatch", func(t *testing.T) {
		t.Setenv("TB_ABI_VERSION", "7")
		loadFails(t, dir, modelbackend.Options{Bridge: libraryCopy(t)}, "has ABI version 7, this build needs 1")
	})
	t.Run("chunk fails to load", func(t *testing.T) {
		broken := coreaiOnly(t, full)
		man, err := os.ReadDir(filepath.Join(broken, "coreai"))
		if err != nil {
			t.Fatal(err)
		}
		var chunk string
		for _, e := range man {
			if strings.HasPrefix(e.Name(), "chunk_") {
				chunk = e.Name()
				break
			}
		}
		fn := filepath.Join(broken, "coreai", chunk, "functions.txt")
		text, err := os.ReadFile(fn)
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(fn) // a hard link into the other copy: replace, do not edit
		if err := os.WriteFile(fn, append([]byte("fail_if_exists /\n"), text...), 0o644); err != nil {
			t.Fatal(err)
		}
		loadFails(t, broken, modelbackend.Options{}, chunk)
	})
	t.Run("MPSGraph refused", func(t *testing.T) {
		t.Setenv("TB_OS_MPSGRAPH_VERSION", "1.0")
		loadFails(t, dir, modelbackend.Options{}, "MPSGraph")
	})
	t.Run("run fails mid-stream", func(t *testing.T) {
		_, _, c := serveResident(t, dir, modelbackend.Options{}, daemon.ResidencyOptions{})
		want, _ := chatIDs(t, c, "", coreaiPrompts[1], 16, false)
		var runs int
		var mu sync.Mutex
		standin.SetFault(func(model, fn string) error {
			mu.Lock()
			defer mu.Unlock()
			if runs++; runs > 6 && strings.Contains(model, "chunk_") {
				return errors.New("injected ANE failure")
			}
			return nil
		})
		max := uint64(16)
		st := c.Chat(context.Background(), wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: coreaiPrompts[1]}}, MaxTokens: &max, Thinking: "off"})
		n := 0
		var streamErr error
		for _, err := range st.Tokens() {
			if err != nil {
				streamErr = err
				break
			}
			n++
		}
		if streamErr == nil {
			_, streamErr = st.Result()
		}
		standin.SetFault(nil)
		var we *wire.Error
		if !errors.As(streamErr, &we) || we.Code != wire.CodeInternal || !strings.Contains(we.Message, "chunk_") ||
			!strings.Contains(we.Message, "entry v8_") || !strings.Contains(we.Message, "injected ANE failure") {
			t.Fatalf("after %d streamed tokens: %v, want internal naming the chunk, the entry and the bridge's message", n, streamErr)
		}
		if n == 0 {
			t.Errorf("the failure came before any token: it was not mid-stream")
		}
		got, _ := chatIDs(t, c, "", coreaiPrompts[1], 16, false)
		if !slices.Equal(got, want) {
			t.Errorf("the request after the failure: %v, want %v", got, want)
		}
	})
}
