package generate

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/ane/text/chat"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/synth"
)

// The synthetic tiny pair: a qwen3_5 checkpoint from internal/synth and the
// synthetic DFlash2 drafter from ane/speculative/dflash, generated once per process.
var fixture struct {
	once                sync.Once
	root, target, draft string
	err                 error
}

func tinyDirs(tb testing.TB) (string, string) {
	tb.Helper()
	fixture.once.Do(func() {
		if fixture.root, fixture.err = os.MkdirTemp("", "generate-"); fixture.err != nil {
			return
		}
		fixture.target, fixture.draft = filepath.Join(fixture.root, "tiny"), filepath.Join(fixture.root, "drafter")
		if fixture.err = synth.Generate(fixture.target, synth.Options{Preset: "tiny", Seed: 7}); fixture.err == nil {
			_, fixture.err = dflash.GenerateSynthetic(fixture.target, "", fixture.draft, 3)
		}
	})
	if fixture.err != nil {
		tb.Fatal(fixture.err)
	}
	return fixture.target, fixture.draft
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixture.root != "" {
		os.RemoveAll(fixture.root)
	}
	os.Exit(code)
}

// newGenerator opens the tiny target tapped at the drafter's layers, its
// tokenizer and template, and the real drafter.
func newGenerator(tb testing.TB) (*Generator, *dflash.Drafter) {
	tb.Helper()
	return newGeneratorMode(tb, false)
}

// newGeneratorMode is newGenerator with the engine in the fast numeric
// mode or the exact one.
func newGeneratorMode(tb testing.TB, fast bool) (*Generator, *dflash.Drafter) {
	tb.Helper()
	targetDir, drafterDir := tinyDirs(tb)
	dcfg, err := hfconfig.LoadDrafter(drafterDir)
	if err != nil {
		tb.Fatal(err)
	}
	if err := drafter.CheckDirs(drafterDir, targetDir, "", dcfg.DFlash.TargetLayerIDs); err != nil {
		tb.Fatal(err)
	}
	m, err := ref.Open(targetDir, ref.Options{Taps: dcfg.DFlash.TargetLayerIDs, Threads: 1, Fast: fast})
	if err != nil {
		tb.Fatal(err)
	}
	sess := m.NewSession()
	d, err := dflash.Load(drafterDir, m, 1)
	if err != nil {
		tb.Fatal(err)
	}
	tok, err := tokenizer.Load(targetDir)
	if err != nil {
		tb.Fatal(err)
	}
	tpl, err := chat.LoadTemplate(targetDir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close(); sess.Close(); m.Close() })
	return &Generator{Engine: sess, Vocab: m.Config().Vocab, Tokenizer: tok, Template: tpl, Drafter: d}, d
}

func greedy(max int) *sample.Options {
	return &sample.Options{Temperature: 0, MaxTokens: max}
}

func collect(tb testing.TB, g *Generator, req Request) (*Summary, []Event) {
	tb.Helper()
	var evs []Event
	sum, err := g.Run(context.Background(), req, func(e Event) error { evs = append(evs, e); return nil })
	if err != nil {
		tb.Fatal(err)
	}
	return sum, evs
}

// Greedy speculative decoding with the real (synthetic) drafter gives the
// plain greedy output token for token, over 50 prompts.
func TestGreedySpeculativeEqualsPlain(t *testing.T) {
	g, _ := newGenerator(t)
	rng := rand.New(rand.NewPCG(5, 5))
	var cycles, accepted int
	for p := 0; p < 50; p++ {
		prompt := make([]int, 2+rng.IntN(30))
		for i := range prompt {
			prompt[i] = rng.IntN(g.Tokenizer.VocabSize())
		}
		plain, _ := collect(t, g, Request{IDs: prompt, Sampling: greedy(12), Speculative: speculative.ModeOff})
		fast, _ := collect(t, g, Request{IDs: prompt, Sampling: greedy(12), Speculative: speculative.ModeOn})
		if !slices.Equal(plain.IDs, fast.IDs) || plain.Text != fast.Text || plain.Finish != fast.Finish {
			t.Fatalf("prompt %d: speculative %v (%s) != plain %v (%s)", p, fast.IDs, fast.Finish, plain.IDs, plain.Finish)
		}
		if plain.Stats.Cycles != 0 || fast.Stats.Cycles == 0 {
			t.Fatalf("prompt %d: cycles plain %d, speculative %d", p, plain.Stats.Cycles, fast.Stats.Cycles)
		}
		cycles += fast.Stats.Cycles
		accepted += fast.Stats.Accepted
	}
	t.Logf("50 prompts: %d speculative cycles, %d drafts accepted", cycles, accepted)
}

// feedRecorder records the sizes of the Feeds it passes on.
type feedRecorder struct {
	ane.Engine
	sizes []int
}

func (f *feedRecorder) FeedRows() int { return ane.FeedRows(f.Engine) }

func (f *feedRecorder) Feed(ids []int) ([]float32, error) {
	f.sizes = append(f.sizes, len(ids))
	return f.Engine.Feed(ids)
}

// A prompt goes to the engine in blocks of its ane.FeedRows (the fast
// mode's 256 rows here), each block's features to the drafter, and the
// greedy speculative output is still the plain one.
func TestPromptFedInEngineBlocks(t *testing.T) {
	g, _ := newGeneratorMode(t, true)
	rec := &feedRecorder{Engine: g.Engine}
	g.Engine = rec
	block := ane.FeedRows(rec)
	if block <= ane.PrefillRows {
		t.Fatalf("the fast engine prefills in blocks of %d, want more than %d", block, ane.PrefillRows)
	}
	rng := rand.New(rand.NewPCG(8, 8))
	prompt := make([]int, block+44)
	for i := range prompt {
		prompt[i] = rng.IntN(g.Tokenizer.VocabSize())
	}
	plain, _ := collect(t, g, Request{IDs: prompt, Sampling: greedy(12), Speculative: speculative.ModeOff})
	rec.sizes = nil
	fast, _ := collect(t, g, Request{IDs: prompt, Sampling: greedy(12), Speculative: speculative.ModeOn})
	if len(rec.sizes) < 2 || rec.sizes[0] != block || rec.sizes[1] != 44 {
		t.Fatalf("Feeds of %v rows, want %d then 44 for a %d-token prompt", rec.sizes, block, len(prompt))
	}
	if !slices.Equal(plain.IDs, fast.IDs) || fast.Stats.Cycles == 0 {
		t.Fatalf("speculative %v (%d cycles) != plain %v", fast.IDs, fast.Stats.Cycles, plain.IDs)
	}
}

// oovDrafter wraps the real drafter and corrupts some drafts with ids
// outside the vocabulary.
type oovDrafter struct {
	*dflash.Drafter
	vocab, n int
}

func (o *oovDrafter) Propose(anchor, pos int) (speculative.Proposal, error) {
	p, err := o.Drafter.Propose(anchor, pos)
	if err == nil {
		o.n++
		switch o.n % 3 {
		case 0:
			p.Tokens[o.n%len(p.Tokens)] = o.vocab + o.n
		case 1:
			p.Tokens[0] = -1
		}
	}
	return p, err
}

func TestOutOfVocabDraftsCannotCorruptOutput(t *testing.T) {
	g, d := newGenerator(t)
	prompt := []int{3, 14, 15, 92, 65, 35}
	plain, _ := collect(t, g, Request{IDs: prompt, Sampling: greedy(30), Speculative: speculative.ModeOff})
	g.Drafter = &oovDrafter{Drafter: d, vocab: g.Vocab}
	bad, _ := collect(t, g, Request{IDs: prompt, Sampling: greedy(30), Speculative: speculative.ModeOn})
	if !slices.Equal(plain.IDs, bad.IDs) {
		t.Fatalf("out-of-vocabulary drafts changed the output: %v, want %v", bad.IDs, plain.IDs)
	}
	if bad.Stats.InvalidDrafts == 0 {
		t.Errorf("no invalid drafts were counted: %+v", bad.Stats)
	}
	for _, id := range bad.IDs {
		if id < 0 || id >= g.Vocab {
			t.Errorf("output token %d outside the vocabulary", id)
		}
	}
}

// A chat request streams events whose texts add up to the summary's text,
// which is the detokenized output ids; counts and the chat split agree.
func TestChatStreamMatchesSummary(t *testing.T) {
	g, _ := newGenerator(t)
	req, err := chat.ParseRequest([]byte(`{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Name three colours."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	opts := sample.Defaults(true)
	opts.Seed, opts.MaxTokens = 11, 40
	sum, evs := collect(t, g, Request{Chat: req, Sampling: &opts, Speculative: speculative.ModeOn})
	c := *req
	c.AddGenerationPrompt = true
	rendered, err := g.Template.Render(&c)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(g.Tokenizer.Encode(rendered)); sum.PromptTokens != want {
		t.Errorf("prompt tokens %d, want %d", sum.PromptTokens, want)
	}
	var text, reasoning, content strings.Builder
	var ids []int
	for i, e := range evs {
		text.WriteString(e.Text)
		reasoning.WriteString(e.Reasoning)
		content.WriteString(e.Content)
		if e.Final != (i == len(evs)-1) {
			t.Fatalf("event %d: final=%v", i, e.Final)
		}
		if !e.Final && !slices.Contains(g.stopTokens(), e.ID) {
			ids = append(ids, e.ID)
		}
	}
	if !slices.Equal(ids, sum.IDs) || sum.GeneratedTokens != len(ids) {
		t.Errorf("streamed ids %v, summary %v (%d)", ids, sum.IDs, sum.GeneratedTokens)
	}
	if text.String() != sum.Text {
		t.Errorf("streamed text %q != summary text %q", text.String(), sum.Text)
	}
	if sum.Finish == sample.FinishLength {
		if dec := g.Tokenizer.Decode(sum.IDs); dec != sum.Text {
			t.Errorf("text %q != detokenized ids %q", sum.Text, dec)
		}
	}
	if sum.Output == nil || sum.Output.Reasoning != reasoning.String() {
		t.Errorf("output %+v, streamed reasoning %q", sum.Output, reasoning.String())
	}
	if !strings.Contains(sum.Text, content.String()) || reasoning.Len() == 0 {
		t.Errorf("prompt opened <think>, so the output starts with reasoning: reasoning %q content %q", reasoning.String(), content.String())
	}
	var hist int
	for _, n := range sum.Stats.Histogram {
		hist += n
	}
	if hist != sum.Stats.Cycles || sum.Stats.Cycles == 0 {
		t.Errorf("histogram %v sums to %d, cycles %d", sum.Stats.Histogram, hist, sum.Stats.Cycles)
	}
	if sum.TimeToFirst <= 0 || sum.TimeToFirst > sum.Prefill+sum.Decode+sum.TimeToFirst || sum.TokensPerSecond <= 0 {
		t.Errorf("times: prefill %v first %v decode %v rate %v", sum.Prefill, sum.TimeToFirst, sum.Decode, sum.TokensPerSecond)
	}
}

// The thinking budget forces the stop text after exactly budget reasoning
// tokens; with speculation the engine is restored to before the cycle, so
// the output equals plain decoding's.
func TestThinkingBudget(t *testing.T) {
	g, _ := newGenerator(t)
	req, _ := chat.ParseRequest([]byte(`{"messages":[{"role":"user","content":"Think about it."}]}`))
	const budget = 6
	var runs [2]*Summary
	for i, mode := range []speculative.Mode{speculative.ModeOff, speculative.ModeOn} {
		sum, _ := collect(t, g, Request{Chat: req, Sampling: greedy(budget + 80), Speculative: mode, ThinkingBudget: budget})
		runs[i] = sum
		if !sum.ForcedThinkStop || sum.ThinkingTokens != budget {
			t.Fatalf("%s: forced %v after %d thinking tokens, want after %d", mode, sum.ForcedThinkStop, sum.ThinkingTokens, budget)
		}
		stop := g.Tokenizer.Encode(chat.ThinkStop)
		if len(sum.IDs) < budget+len(stop) || !slices.Equal(sum.IDs[budget:budget+len(stop)], stop) {
			t.Fatalf("%s: ids %v do not hold the stop text %v after %d tokens", mode, sum.IDs, stop, budget)
		}
		if sum.Output == nil || !strings.Contains(sum.Output.Reasoning, "limited time") {
			t.Errorf("%s: the forced text is not part of the reasoning: %+v", mode, sum.Output)
		}
	}
	if !slices.Equal(runs[0].IDs, runs[1].IDs) {
		t.Errorf("speculative %v != plain %v under a thinking budget", runs[1].IDs, runs[0].IDs)
	}
}

// The stream decoder is flushed at a max-tokens finish: a character cut
// in half is released (as U+FFFD) in the final event.
func TestFinishFlushesPartialCharacter(t *testing.T) {
	g, _ := newGenerator(t)
	// "é" is two bytes; its first byte alone is a byte-level token.
	ids := g.Tokenizer.Encode("é")
	var first int
	found := false
	for id := 0; id < g.Tokenizer.VocabSize() && !found; id++ {
		if s, ok := g.Tokenizer.TokenString(id); ok && s == "Ã" && len(ids) > 0 {
			first, found = id, true
		}
	}
	if !found {
		t.Skip("no lone lead-byte token in the synthetic vocabulary")
	}
	stopper, _ := sample.NewStopper(sample.Options{MaxTokens: 1})
	var evs []Event
	r := &run{g: g, stopper: stopper, dec: g.Tokenizer.NewStreamDecoder(), sum: &Summary{},
		emit: func(e Event) error { evs = append(evs, e); return nil },
		sp:   mustSpec(t, g)}
	finish, _, err := r.take(first, false, true)
	if err != nil || finish != sample.FinishLength {
		t.Fatalf("take: %v %v", finish, err)
	}
	if err := r.finish(finish); err != nil {
		t.Fatal(err)
	}
	if evs[0].Text != "" || !evs[1].Final || evs[1].Text != "\uFFFD" || r.sum.Text != "\uFFFD" {
		t.Errorf("events %+v, text %q: want the partial character flushed as U+FFFD", evs, r.sum.Text)
	}
}

func mustSpec(t *testing.T, g *Generator) *speculative.Speculator {
	s, _ := sample.New(sample.Options{})
	sp, err := speculative.New(speculative.NewEngineTarget(g.Engine, g.Vocab), nil, s, speculative.Config{Mode: speculative.ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func TestBadRequests(t *testing.T) {
	g, _ := newGenerator(t)
	req, _ := chat.ParseRequest([]byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	noDrafter := *g
	noDrafter.Drafter = nil
	noTemplate := *g
	noTemplate.Template = nil
	for _, c := range []struct {
		name  string
		g     *Generator
		req   Request
		inMsg string
	}{
		{"both", g, Request{IDs: []int{1}, Chat: req}, "exactly one"},
		{"neither", g, Request{}, "exactly one"},
		{"empty", g, Request{IDs: []int{}}, "empty prompt"},
		{"oov", g, Request{IDs: []int{1, g.Vocab}}, "outside the vocabulary"},
		{"negative", g, Request{IDs: []int{-3}}, "index 0"},
		{"no drafter", &noDrafter, Request{IDs: []int{1}, Speculative: speculative.ModeOn}, "needs a drafter"},
		{"mode", g, Request{IDs: []int{1}, Speculative: "sometimes"}, "sometimes"},
		{"no template", &noTemplate, Request{Chat: req}, "no chat template"},
		{"top_p", g, Request{IDs: []int{1}, Sampling: &sample.Options{TopP: 1.5}}, "top_p"},
	} {
		_, err := c.g.Run(context.Background(), c.req, func(Event) error { return nil })
		var re *RequestError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.inMsg) {
			t.Errorf("%s: %v, want a RequestError mentioning %q", c.name, err, c.inMsg)
		}
	}
}

// Auto mode with the real drafter, whose drafts are rarely accepted, stops
// drafting after its trial window and keeps the plain output.
func TestAutoPausesFailingDrafter(t *testing.T) {
	g, _ := newGenerator(t)
	g.Auto = speculative.Auto{CycleCost: 4.7, Window: 8}
	prompt := []int{9, 8, 7, 6, 5}
	plain, _ := collect(t, g, Request{IDs: prompt, Sampling: greedy(60), Speculative: speculative.ModeOff})
	auto, _ := collect(t, g, Request{IDs: prompt, Sampling: greedy(60)})
	if auto.Speculative != speculative.ModeAuto || !slices.Equal(plain.IDs, auto.IDs) {
		t.Fatalf("auto (%s) %v != plain %v", auto.Speculative, auto.IDs, plain.IDs)
	}
	if auto.Stats.AutoPauses == 0 || auto.Stats.PlainSteps == 0 || auto.Stats.Cycles > 16 {
		t.Errorf("auto kept drafting a failing drafter: %+v", auto.Stats)
	}
}

// Cancelling the context stops the run before the next engine call.
func TestCancel(t *testing.T) {
	g, _ := newGenerator(t)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := g.Run(ctx, Request{IDs: []int{1, 2, 3}, Sampling: greedy(50), Speculative: speculative.ModeOn}, func(Event) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if err != context.Canceled || n > 3+speculative.MaxDrafts {
		t.Errorf("after cancel: %v, %d events", err, n)
	}
	cancel()
	if _, err := g.Run(ctx, Request{IDs: []int{1}}, func(Event) error { return nil }); err != context.Canceled {
		t.Errorf("cancelled before the prefill: %v", err)
	}
}
