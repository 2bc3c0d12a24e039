package modelbackend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/modelbackend"
)

// openTiny serves the tiny checkpoint with the default drafter (prompt
// lookup); the test's cleanup closes it.
func openTiny(t *testing.T) *modelbackend.Backend {
	t.Helper()
	b, err := modelbackend.Open(tinyDir(t), modelbackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// streamed is one generation as a client sees it over the socket.
type streamed struct {
	ids    []uint32
	events int // token events that carry ids: one per engine call
	multi  int // of which carried more than one id
	res    *wire.GenerationResult
}

func generateOver(t *testing.T, c *client.Client, prompt []uint32, max uint64, speculative bool) streamed {
	t.Helper()
	args := greedy(prompt, max, "")
	args.Speculative = &speculative
	st := c.Generate(context.Background(), args)
	var out streamed
	for ev, err := range st.Tokens() {
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.IDs) > 0 {
			out.events++
			if len(ev.IDs) > 1 {
				out.multi++
			}
		}
		out.ids = append(out.ids, ev.IDs...)
	}
	res, err := st.Result()
	if err != nil {
		t.Fatal(err)
	}
	out.res = res
	return out
}

func sum(h []uint64) (n uint64) {
	for _, v := range h {
		n += v
	}
	return n
}

// repetitive is a prompt that repeats a 12-token phrase, the case prompt
// lookup drafts for.
func repetitive() []uint32 {
	phrase := promptIDs(12, 3)
	var p []uint32
	for range 4 {
		p = append(p, phrase...)
	}
	return p
}

// checkSpeculative compares speculative: true with false on one prompt:
// same text and ids; the histogram has k = 0..7 and one count per draft
// cycle (each engine call is one token event; the first comes from the
// prefill, and 24 tokens are too few for auto mode to pause).
func checkSpeculative(t *testing.T, c *client.Client, prompt []uint32) (on streamed) {
	t.Helper()
	const max = 24
	off := generateOver(t, c, prompt, max, false)
	on = generateOver(t, c, prompt, max, true)
	if on.res.Text != off.res.Text || !slices.Equal(on.ids, off.ids) || on.res.FinishReason != off.res.FinishReason {
		t.Fatalf("speculative %v %q (%s) != plain %v %q (%s)", on.ids, on.res.Text, on.res.FinishReason, off.ids, off.res.Text, off.res.FinishReason)
	}
	if len(off.res.Usage.Acceptance) != 0 || off.events != len(off.ids) {
		t.Fatalf("plain decoding: acceptance %v, %d events for %d ids", off.res.Usage.Acceptance, off.events, len(off.ids))
	}
	acc := on.res.Usage.Acceptance
	if len(acc) != speculative.MaxDrafts+1 || sum(acc) == 0 || sum(acc) != uint64(on.events-1) {
		t.Fatalf("acceptance %v (sum %d): want 8 counts summing to the %d draft cycles", acc, sum(acc), on.events-1)
	}
	accepted := 0
	for k, n := range acc {
		accepted += k * int(n)
	}
	if len(on.ids) != on.events+accepted {
		t.Fatalf("%d ids over %d events with %d accepted drafts: the histogram does not account for the output", len(on.ids), on.events, accepted)
	}
	if on.multi > 0 != (accepted > 0) {
		t.Fatalf("%d events carried several ids, %d drafts accepted", on.multi, accepted)
	}
	return on
}

// Over the socket with the prompt-lookup drafter: speculative greedy
// output equals plain greedy output, and the acceptance histogram counts
// every draft cycle.
func TestSpeculativeLookupOverSocket(t *testing.T) {
	b := openTiny(t)
	if b.Speculation() != "prompt lookup" {
		t.Fatalf("speculation %q, want prompt lookup", b.Speculation())
	}
	c := serve(t, b)
	on := checkSpeculative(t, c, repetitive())
	t.Logf("prompt lookup: acceptance %v over %d tokens", on.res.Usage.Acceptance, len(on.ids))
}

// replayDrafter proposes the plain greedy continuation it was given, with
// every wrongEvery-th draft wrong: drafts get accepted, and rejected.
type replayDrafter struct {
	trace      []int // prompt + plain greedy output, by position
	wrongEvery int
	n          int
}

func (d *replayDrafter) Propose(_, pos int) (speculative.Proposal, error) {
	var drafts []int
	for i := pos + 1; i < len(d.trace) && len(drafts) < speculative.MaxDrafts; i++ {
		t := d.trace[i]
		if d.n++; d.n%d.wrongEvery == 0 {
			t = (t + 1) % 512
		}
		drafts = append(drafts, t)
	}
	return speculative.Proposal{Tokens: drafts}, nil
}
func (*replayDrafter) AddContext([]float32, []int) error { return nil }

// A drafter that is mostly right: events carry several ids, the
// histogram has counts above k = 0, and the output is still the plain one.
func TestSpeculativeAcceptedDraftsOverSocket(t *testing.T) {
	b := openTiny(t)
	c := serve(t, b)
	prompt := promptIDs(20, 2)
	plain := generateOver(t, c, prompt, 24, false)
	trace := intIDs(append(slices.Clone(prompt), plain.ids...))
	modelbackend.SetRequestDrafter(b, func([]int) speculative.Drafter { return &replayDrafter{trace: trace, wrongEvery: 4} })
	on := checkSpeculative(t, c, prompt)
	if acc := on.res.Usage.Acceptance; acc[0] == sum(acc) || on.multi == 0 {
		t.Fatalf("acceptance %v, %d multi-token events: the replayed drafts were not accepted", acc, on.multi)
	}
	t.Logf("replay: acceptance %v, %d events for %d tokens", on.res.Usage.Acceptance, on.events, len(on.ids))
}

// neverDrafter proposes seven copies of one id the greedy target never
// picks here (the test checks that every cycle accepted nothing).
type neverDrafter struct{ id int }

func (d neverDrafter) Propose(int, int) (speculative.Proposal, error) {
	return speculative.Proposal{Tokens: slices.Repeat([]int{d.id}, speculative.MaxDrafts)}, nil
}
func (neverDrafter) AddContext([]float32, []int) error { return nil }

// A drafter whose drafts are never accepted leaves the output identical;
// every cycle lands in acceptance[0].
func TestSpeculativeZeroAcceptance(t *testing.T) {
	b := openTiny(t)
	modelbackend.SetRequestDrafter(b, func([]int) speculative.Drafter { return neverDrafter{id: 511} })
	c := serve(t, b)
	on := checkSpeculative(t, c, repetitive())
	if acc := on.res.Usage.Acceptance; acc[0] != sum(acc) {
		t.Fatalf("acceptance %v: the never-right drafter had drafts accepted", acc)
	}
}

// synthDrafter writes the synthetic DFlash2 drafter of the tiny target.
func synthDrafter(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "drafter")
	if _, err := dflash.GenerateSynthetic(tinyDir(t), "", dir, 3); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The synthetic DFlash2 drafter given with Options.Drafter: it pairs, the
// engine taps its layers, and speculative output equals plain output.
func TestSpeculativeDFlashDrafter(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a drafter")
	}
	target, dir := tinyDir(t), synthDrafter(t)
	b, err := modelbackend.Open(target, modelbackend.Options{Drafter: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Speculation() != "dflash2 "+dir {
		t.Fatalf("speculation %q", b.Speculation())
	}
	c := serve(t, b)
	on := checkSpeculative(t, c, promptIDs(20, 1))
	t.Logf("dflash2: acceptance %v", on.res.Usage.Acceptance)

	// A session's second turn continues the engine and its drafter (only
	// the new tokens prefilled) and generates what a stateless request for
	// the whole conversation generates.
	ctx := context.Background()
	sess, err := c.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	history := promptIDs(20, 4)
	var turns [2]streamed
	for i := range turns {
		args := greedy(history, 10, sess)
		st := c.Generate(ctx, args)
		for ev, err := range st.Tokens() {
			if err != nil {
				t.Fatal(err)
			}
			turns[i].ids = append(turns[i].ids, ev.IDs...)
		}
		if turns[i].res, err = st.Result(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			history = append(append(history, turns[0].ids...), promptIDs(7, 5)...)
		}
	}
	if want := uint64(20 + len(turns[0].ids) - 1); turns[1].res.Usage.CachedTokens != want || len(turns[1].res.Usage.Acceptance) == 0 {
		t.Fatalf("second turn: %d cached tokens (want %d), acceptance %v", turns[1].res.Usage.CachedTokens, want, turns[1].res.Usage.Acceptance)
	}
	if stateless := generateOver(t, c, history, 10, true); !slices.Equal(stateless.ids, turns[1].ids) {
		t.Fatalf("session turn %v, stateless %v", turns[1].ids, stateless.ids)
	}
}

// A drafter that does not pair is refused with the rule named, in the log
// and in Speculation; the backend still loads and serves, plainly.
func TestUnpairedDrafterServesWithoutSpeculation(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a drafter")
	}
	target, dir := tinyDir(t), synthDrafter(t)
	cfgPath := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["hidden_size"] = cfg["hidden_size"].(float64) * 2
	data, _ = json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	b, err := modelbackend.Open(target, modelbackend.Options{Drafter: dir, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("an unpaired drafter failed the whole load: %v", err)
	}
	defer b.Close()
	for what, s := range map[string]string{"speculation": b.Speculation(), "log": logs.String()} {
		if !strings.Contains(s, "drafter.config") || !strings.Contains(s, "hidden_size") {
			t.Errorf("%s %q does not name the failed rule drafter.config (hidden_size)", what, s)
		}
	}
	if !strings.HasPrefix(b.Speculation(), "off: ") {
		t.Errorf("speculation %q, want off", b.Speculation())
	}
	c := serve(t, b)
	st, err := c.Status(context.Background())
	if err != nil || st.Speculation != b.Speculation() {
		t.Errorf("status speculation %q (%v), want the backend's %q", st.Speculation, err, b.Speculation())
	}
	res := generateOver(t, c, promptIDs(20, 1), 8, true)
	if len(res.res.Usage.Acceptance) != 0 || len(res.ids) == 0 {
		t.Fatalf("without a drafter: acceptance %v, %d ids", res.res.Usage.Acceptance, len(res.ids))
	}
}

// failingDrafter's Propose fails, mid-generation.
type failingDrafter struct{}

func (failingDrafter) Propose(int, int) (speculative.Proposal, error) {
	return speculative.Proposal{}, errors.New("drafter exploded")
}
func (failingDrafter) AddContext([]float32, []int) error { return nil }

// A generation that fails mid-way (here the drafter) leaves no partial
// state: the session's next turn starts over (cached_tokens 0) and
// generates what a stateless request generates.
func TestFailedGenerationLeavesNoPartialState(t *testing.T) {
	b := openTiny(t)
	c := serve(t, b)
	ctx := context.Background()
	sess, err := c.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prompt := promptIDs(30, 6)
	modelbackend.SetRequestDrafter(b, func([]int) speculative.Drafter { return failingDrafter{} })
	_, err = c.Generate(ctx, greedy(prompt, 8, sess)).Result()
	var ce *client.Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "drafter exploded") {
		t.Fatalf("failing drafter: %v", err)
	}
	modelbackend.SetRequestDrafter(b, func(p []int) speculative.Drafter { return speculative.NewLookupDrafter(p) })
	res, err := c.Generate(ctx, greedy(prompt, 8, sess)).Result()
	if err != nil {
		t.Fatal(err)
	}
	stateless := generateOver(t, c, prompt, 8, true)
	if res.Usage.CachedTokens != 0 || res.Text != stateless.res.Text {
		t.Fatalf("after the failure: cached %d, text %q; stateless %q", res.Usage.CachedTokens, res.Text, stateless.res.Text)
	}
}

// Bad generation input is refused by name, with the right code, before
// anything runs.
func TestBadGenerateInput(t *testing.T) {
	b, err := modelbackend.Open(tinyDir(t), modelbackend.Options{Ladder: []int{64}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		req  daemon.GenerateRequest
		code string
		msg  string
	}{
		{"top_p", daemon.GenerateRequest{Prompt: []int{1, 2}, MaxTokens: 4, Sampling: wire.Sampling{TopP: 1.5}}, wire.CodeBadRequest, "top_p"},
		{"temperature", daemon.GenerateRequest{Prompt: []int{1, 2}, MaxTokens: 4, Sampling: wire.Sampling{Temperature: math.NaN()}}, wire.CodeBadRequest, "temperature"},
		{"vocabulary", daemon.GenerateRequest{Prompt: []int{1, 1 << 20}, MaxTokens: 4}, wire.CodeBadRequest, "(index 1) is outside the vocabulary"},
		{"context", daemon.GenerateRequest{Prompt: []int{1, 2}, MaxTokens: 100, Speculative: true}, wire.CodeContextExceeded, "exceed"},
	} {
		called := false
		_, err := b.Generate(ctx, c.req, func([]int) error { called = true; return nil })
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != c.code || !strings.Contains(we.Message, c.msg) || called {
			t.Errorf("%s: %v (tokens emitted: %v), want %s naming %q", c.name, err, called, c.code, c.msg)
		}
	}
}

// Sampled speculative generation is reproducible from its seed (no drafter
// or generator state leaks between requests) and stays in the vocabulary.
func TestSampledSpeculativeReproducible(t *testing.T) {
	b := openTiny(t)
	c := serve(t, b)
	on := true
	gen := func(seed uint64) *wire.GenerationResult {
		max := uint64(20)
		res, err := c.Generate(context.Background(), wire.GenerateArgs{IDs: repetitive(), MaxTokens: &max, Speculative: &on,
			Sampling: &wire.Sampling{Temperature: 0.9, TopK: 40, Seed: seed}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, again := gen(7), gen(7)
	if first.Text != again.Text || len(first.Usage.Acceptance) != 8 || !slices.Equal(first.Usage.Acceptance, again.Usage.Acceptance) {
		t.Fatalf("seed 7 twice: %q %v, then %q %v", first.Text, first.Usage.Acceptance, again.Text, again.Usage.Acceptance)
	}
	if other := gen(8); other.Text == first.Text {
		t.Errorf("seeds 7 and 8 sampled the same 20 tokens: %q", other.Text)
	}
}

// A generation cancelled mid-way keeps what its engine committed: the
// session's next turn reuses it and generates what a stateless request
// for the same conversation generates.
func TestCancelledTurnKeepsSessionState(t *testing.T) {
	b := openTiny(t)
	ctx, cancel := context.WithCancel(context.Background())
	prompt := intIDs(promptIDs(25, 7))
	var got []int
	_, err := b.Generate(ctx, daemon.GenerateRequest{Prompt: prompt, MaxTokens: 20, Speculative: true, Session: "s"}, func(step []int) error {
		if got = append(got, step...); len(got) >= 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled generation: %v", err)
	}
	next := append(append(slices.Clone(prompt), got...), intIDs(promptIDs(5, 8))...)
	run := func(session string) ([]int, daemon.Outcome) {
		var ids []int
		out, err := b.Generate(context.Background(), daemon.GenerateRequest{Prompt: next, MaxTokens: 10, Speculative: true, Session: session},
			func(step []int) error { ids = append(ids, step...); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return ids, out
	}
	resumed, out := run("s")
	if out.CachedTokens < len(prompt) || out.CachedTokens >= len(next) {
		t.Fatalf("after the cancel: %d cached tokens, want the prompt (%d) and any committed output", out.CachedTokens, len(prompt))
	}
	if stateless, _ := run(""); !slices.Equal(resumed, stateless) {
		t.Fatalf("resumed %v, stateless %v", resumed, stateless)
	}
}

func intIDs(ids []uint32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}
