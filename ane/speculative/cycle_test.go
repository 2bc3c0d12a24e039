package speculative

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/sample"
)

type drafterCase struct {
	name string
	make func(t *toyTarget, seed uint64) Drafter
}

func drafterCases() []drafterCase {
	oracle := func(hit float64) func(*toyTarget, uint64) Drafter {
		return func(t *toyTarget, seed uint64) Drafter {
			return &oracleDrafter{t: t, hit: hit, rng: rand.New(rand.NewPCG(seed, 1))}
		}
	}
	return []drafterCase{
		{"oracle100", oracle(1)},
		{"oracle90", oracle(0.9)},
		{"oracle50", oracle(0.5)},
		{"oracle0", oracle(0)},
		{"random", func(t *toyTarget, seed uint64) Drafter {
			return &randomDrafter{vocab: t.vocab, rng: rand.New(rand.NewPCG(seed, 2))}
		}},
		{"bad-ids", func(t *toyTarget, seed uint64) Drafter {
			return &badIDDrafter{oracleDrafter{t: t, hit: 0.8, rng: rand.New(rand.NewPCG(seed, 3))}}
		}},
		{"q", func(t *toyTarget, seed uint64) Drafter {
			return &qDrafter{t: t, rng: rand.New(rand.NewPCG(seed, 4))}
		}},
	}
}

// run generates from prompt and returns the output ids, the finish reason,
// the speculator and the target.
func run(t testing.TB, vocab int, seed uint64, prompt []int, opts sample.Options, d func(*toyTarget, uint64) Drafter, cfg Config, con ...Constraint) ([]int, sample.FinishReason, *Speculator, *toyTarget) {
	t.Helper()
	target := newToyTarget(vocab, 77)
	first := target.Feed(prompt)
	var drafter Drafter
	if d != nil {
		drafter = d(target, seed)
		if err := drafter.AddContext(target.promptFeatures()); err != nil {
			t.Fatal(err)
		}
	}
	opts.Seed = seed
	s, err := sample.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := sample.NewStopper(opts)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := New(target, drafter, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(con) > 0 {
		sp.SetConstraint(con[0])
	}
	var out []int
	fin, err := sp.Generate(first, len(prompt), stop, nil, func(tok Token) error {
		if !tok.Stop {
			out = append(out, tok.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, fin, sp, target
}

func randomPrompt(r *rand.Rand, vocab int) []int {
	p := make([]int, 1+r.IntN(12))
	for i := range p {
		p[i] = r.IntN(vocab)
	}
	return p
}

func TestGreedySpeculativeEqualsPlain(t *testing.T) {
	const vocab = 48
	r := rand.New(rand.NewPCG(2026, 11))
	opts := sample.Options{Temperature: 0, MaxTokens: 60, StopTokens: []int{5}, LoopGuard: 6}
	for i := 0; i < 50; i++ {
		prompt := randomPrompt(r, vocab)
		want, wantFin, _, _ := run(t, vocab, uint64(i), prompt, opts, nil, Config{})
		for _, dc := range drafterCases() {
			got, fin, sp, target := run(t, vocab, uint64(i), prompt, opts, dc.make, Config{Mode: ModeOn})
			if !slices.Equal(got, want) || fin != wantFin {
				t.Fatalf("prompt %d, drafter %s: speculative %v (%s), plain %v (%s)", i, dc.name, got, fin, want, wantFin)
			}
			// What the target committed is the prompt plus a stretch of the
			// output: never a token the output does not have.
			committed := target.committed[len(prompt):]
			n := min(len(committed), len(got))
			if !slices.Equal(committed[:n], got[:n]) {
				t.Fatalf("prompt %d, drafter %s: target committed %v for output %v", i, dc.name, committed, got)
			}
			if st := sp.Stats(); dc.name == "bad-ids" && st.InvalidDrafts == 0 && st.Cycles > 3 {
				t.Fatalf("prompt %d: bad-ids drafter produced no invalid drafts in %d cycles", i, st.Cycles)
			}
		}
	}
}

// With a drafter that always guesses right, every greedy cycle accepts all
// seven drafts: this is what proves the features reach the drafter at the
// right positions.
func TestOracleAcceptsEverything(t *testing.T) {
	opts := sample.Options{Temperature: 0, MaxTokens: 200}
	oracle := func(tt *toyTarget, seed uint64) Drafter {
		return &oracleDrafter{t: tt, hit: 1, rng: rand.New(rand.NewPCG(seed, 1))}
	}
	out, fin, sp, target := run(t, 40, 1, []int{1, 2, 3}, opts, oracle, Config{Mode: ModeOn})
	st := sp.Stats()
	if fin != sample.FinishLength || len(out) != 200 {
		t.Fatalf("finish %q with %d tokens", fin, len(out))
	}
	if st.Histogram[MaxDrafts] != st.Cycles || st.TokensPerCycle() != 8 || st.AcceptRate() != 1 {
		t.Fatalf("stats %+v: want every cycle to accept 7 (8 tokens per cycle)", st)
	}
	if target.calls != st.Cycles || st.Cycles != 25 {
		t.Fatalf("%d target calls, %d cycles; want 25 for 200 tokens", target.calls, st.Cycles)
	}
}

func TestStopTokenInsideDrafts(t *testing.T) {
	// Find what greedy plain decoding produces, then make its 10th token a
	// stop token: the oracle drafts it mid-cycle and the cycle must end there.
	opts := sample.Options{Temperature: 0, MaxTokens: 40}
	prompt := []int{3, 1, 4}
	plain, _, _, _ := run(t, 40, 1, prompt, opts, nil, Config{})
	stopTok := plain[9]
	first := slices.Index(plain, stopTok)
	opts.StopTokens = []int{stopTok}
	oracle := func(tt *toyTarget, seed uint64) Drafter {
		return &oracleDrafter{t: tt, hit: 1, rng: rand.New(rand.NewPCG(seed, 1))}
	}
	out, fin, _, target := run(t, 40, 1, prompt, opts, oracle, Config{Mode: ModeOn})
	if fin != sample.FinishStop || !slices.Equal(out, plain[:first]) {
		t.Fatalf("got %v (%s), want %v (stop)", out, fin, plain[:first])
	}
	if slices.Contains(target.committed[len(prompt):], stopTok) {
		t.Fatalf("the stop token %d was committed: %v", stopTok, target.committed)
	}
}

func TestAutoPausesAndRetries(t *testing.T) {
	opts := sample.Options{Temperature: 0, MaxTokens: 1000}
	random := func(tt *toyTarget, seed uint64) Drafter {
		return &randomDrafter{vocab: tt.vocab, rng: rand.New(rand.NewPCG(seed, 2))}
	}
	auto := Auto{Window: 4, RetryAfter: 100}
	out, _, sp, _ := run(t, 40, 1, []int{1}, opts, random, Config{Mode: ModeAuto, Auto: auto})
	st := sp.Stats()
	if len(out) != 1000 {
		t.Fatalf("%d tokens", len(out))
	}
	// Random drafts over 40 tokens are almost never right: drafting pauses
	// after 4 cycles each time and is retried every 100 plain steps.
	if st.AutoPauses < 8 || st.Cycles > 4*(st.AutoPauses+1)+4 || st.PlainSteps < 900 {
		t.Fatalf("stats %+v: want drafting paused repeatedly and mostly plain steps", st)
	}
	oracle := func(tt *toyTarget, seed uint64) Drafter {
		return &oracleDrafter{t: tt, hit: 0.9, rng: rand.New(rand.NewPCG(seed, 1))}
	}
	_, _, sp, _ = run(t, 40, 1, []int{1}, opts, oracle, Config{Mode: ModeAuto, Auto: auto})
	if st := sp.Stats(); st.AutoPauses != 0 || st.PlainSteps != 0 {
		t.Fatalf("good drafter paused: %+v", st)
	}
	// With the default policy a drafter right half the time (≈1 accepted
	// draft per cycle, worth 1.8× on the ANE) is kept over a long run.
	half := func(tt *toyTarget, seed uint64) Drafter {
		return &oracleDrafter{t: tt, hit: 0.5, rng: rand.New(rand.NewPCG(seed, 1))}
	}
	opts.MaxTokens = 3000
	_, _, sp, _ = run(t, 40, 1, []int{1}, opts, half, Config{Mode: ModeAuto})
	if st := sp.Stats(); st.AutoPauses != 0 {
		t.Fatalf("50%% drafter paused by the default policy: %+v", st)
	}
}

// A drafter that will never be used (mode off, or auto on a backend where
// drafting cannot pay) is not even fed context.
func TestUnusedDrafterIsNotCalled(t *testing.T) {
	opts := sample.Options{Temperature: 0, MaxTokens: 20}
	for _, cfg := range []Config{{Mode: ModeOff}, {Mode: ModeAuto, Auto: Auto{CycleCost: 9}}} {
		target := newToyTarget(30, 77)
		first := target.Feed([]int{1, 2})
		s, _ := sample.New(opts)
		stop, _ := sample.NewStopper(opts)
		sp, err := New(target, failingContext{&scriptedDrafter{err: errScripted}}, s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sp.Generate(first, 2, stop, nil, func(Token) error { return nil }); err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		if st := sp.Stats(); st.PlainSteps != 19 || st.Cycles != 0 {
			t.Fatalf("%+v: stats %+v", cfg, st)
		}
	}
}

// failingContext is a drafter whose every call fails.
type failingContext struct{ Drafter }

func (failingContext) AddContext([]float32, []int) error { return errScripted }

func TestPolicyTransitions(t *testing.T) {
	p, err := newPolicy(Config{Mode: ModeAuto, Auto: Auto{MinAccepted: 2, Window: 4, RetryAfter: 5}}, true)
	if err != nil {
		t.Fatal(err)
	}
	// No decision before a full window; then the mean of the last 4.
	for i, k := range []int{0, 0, 0, 8, 1, 0} { // means: -, -, -, 2, 2.25, 2.25
		p.cycle(k)
		if !p.drafting() {
			t.Fatalf("paused after cycle %d (mean %v)", i, p.mean())
		}
	}
	p.cycle(0) // last 4: 8 1 0 0 → 2.25; then 1 0 0 0 → 0.25
	p.cycle(0)
	if p.drafting() {
		t.Fatalf("still drafting with rolling mean %v below 2", p.mean())
	}
	for i := 0; i < 4; i++ {
		p.plainStep()
	}
	if p.drafting() {
		t.Fatal("retried before 5 plain steps")
	}
	p.plainStep()
	if !p.drafting() {
		t.Fatal("no retry after 5 plain steps")
	}
	for i := 0; i < 3; i++ { // a fresh window: three bad cycles decide nothing yet
		p.cycle(0)
	}
	if !p.drafting() {
		t.Fatal("paused before the retry window filled")
	}
	p.cycle(0)
	if p.drafting() || p.pauses != 2 {
		t.Fatalf("after a bad retry window: drafting %v, pauses %d", p.drafting(), p.pauses)
	}
	// Modes on and off never change.
	for _, m := range []Mode{ModeOn, ModeOff} {
		q, _ := newPolicy(Config{Mode: m}, true)
		for i := 0; i < 100; i++ {
			q.cycle(0)
		}
		if q.drafting() != (m == ModeOn) {
			t.Fatalf("mode %s: drafting %v", m, q.drafting())
		}
	}
	if got := BreakEven(1.18, 1); got < 0.179 || got > 0.181 {
		t.Fatalf("BreakEven(1.18, 1) = %v", got)
	}
	// Defaults follow the cycle cost.
	for _, c := range []struct {
		cost       float64
		minAcc     float64
		retryAfter int
		on         bool
	}{{0, 0.28, 256, true}, {3, 2.1, 1280, true}, {9, 8.1, 5120, false}} {
		q, err := newPolicy(Config{Mode: ModeAuto, Auto: Auto{CycleCost: c.cost}}, true)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(q.auto.MinAccepted-c.minAcc) > 1e-9 || q.auto.RetryAfter != c.retryAfter || q.drafting() != c.on {
			t.Errorf("cycle cost %v: min_accepted %v retry_after %d drafting %v", c.cost, q.auto.MinAccepted, q.auto.RetryAfter, q.drafting())
		}
	}
}

func TestConfigErrors(t *testing.T) {
	s, _ := sample.New(sample.Options{})
	target := newToyTarget(10, 1)
	d := &randomDrafter{vocab: 10, rng: rand.New(rand.NewPCG(1, 1))}
	cases := []struct {
		cfg     Config
		drafter Drafter
		want    string
	}{
		{Config{Mode: ModeOn}, nil, "needs a drafter"},
		{Config{Mode: "fast"}, d, `mode "fast"`},
		{Config{Auto: Auto{MinAccepted: 9}}, d, "min_accepted"},
		{Config{Auto: Auto{CycleCost: 0.5}}, d, "cycle_cost"},
		{Config{Auto: Auto{Window: -1}}, d, "window"},
		{Config{Auto: Auto{RetryAfter: -1}}, d, "retry_after"},
	}
	for _, c := range cases {
		if _, err := New(target, c.drafter, s, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil {
		t.Error("ParseMode accepted sometimes")
	}
	if m, err := ParseMode("auto"); err != nil || m != ModeAuto {
		t.Errorf("ParseMode(auto) = %v, %v", m, err)
	}
}

// Bad drafters and targets get errors that say what broke, not a panic or
// a corrupt output.
func TestBadDrafterAndTarget(t *testing.T) {
	s, _ := sample.New(sample.Options{Temperature: 1})
	cases := []struct {
		prop Proposal
		err  error
		want string
	}{
		{Proposal{Tokens: make([]int, 8)}, nil, "proposed 8 tokens, at most 7"},
		{Proposal{Tokens: []int{1, 2}, Q: []Dist{{}}}, nil, "1 draft distributions for 2 drafts"},
		{Proposal{}, errScripted, "scripted failure"},
	}
	for _, c := range cases {
		target := newToyTarget(10, 1)
		target.Feed([]int{1})
		sp, err := New(target, &scriptedDrafter{prop: c.prop, err: c.err}, s, Config{Mode: ModeOn})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sp.Step(3, 1, []int{3}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.prop, err, c.want)
		}
	}
	target := newToyTarget(10, 1)
	sp, _ := New(target, nil, s, Config{})
	if _, err := sp.Step(10, 0, []int{10}); err == nil || !strings.Contains(err.Error(), "anchor token 10") {
		t.Errorf("out-of-vocabulary anchor: err = %v", err)
	}
	sp, _ = New(shortTarget{target}, nil, s, Config{})
	if _, err := sp.Step(1, 0, []int{1}); err == nil || !strings.Contains(err.Error(), "returned 9 logits, want 10") {
		t.Errorf("short verify: err = %v", err)
	}
	// A drafter whose q is not a probability falls back to the token-only
	// rule rather than failing: q with NaN must not break the cycle.
	target = newToyTarget(10, 1)
	target.Feed([]int{1})
	q := Dist{IDs: []int{2}, Probs: []float64{math.NaN()}}
	sp, _ = New(target, &scriptedDrafter{prop: Proposal{Tokens: []int{2}, Q: []Dist{q}}}, s, Config{Mode: ModeOn})
	if out, err := sp.Step(3, 1, []int{3}); err != nil || len(out) < 1 {
		t.Errorf("NaN q: %v, %v", out, err)
	}
}

type shortTarget struct{ *toyTarget }

func (s shortTarget) Verify(tokens []int) ([]float32, error) {
	rows, err := s.toyTarget.Verify(tokens)
	return rows[:len(rows)-1], err
}

func TestEmitErrorAborts(t *testing.T) {
	target := newToyTarget(10, 1)
	first := target.Feed([]int{1})
	s, _ := sample.New(sample.Options{Temperature: 0})
	stop, _ := sample.NewStopper(sample.Options{})
	sp, _ := New(target, nil, s, Config{})
	stopErr := errors.New("client went away")
	n := 0
	_, err := sp.Generate(first, 1, stop, nil, func(Token) error {
		if n++; n == 3 {
			return stopErr
		}
		return nil
	})
	if !errors.Is(err, stopErr) || n != 3 {
		t.Fatalf("err %v after %d tokens", err, n)
	}
}
