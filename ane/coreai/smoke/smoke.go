package smoke

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai"
	"github.com/forgedaemon/forged/ane/coreai/draft"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/bundle"
)

// Options configure Run.
type Options struct {
	Bridge string // bridge dylib (required)
	Prompt string // raw prompt, no chat template (default "The capital of France is")
	Tokens int    // greedy tokens to generate, 2..64 (default 16)
	Ctx    int    // context entry (default the smallest)
	KV     ane.KVFormat
	// Drafter proposes the drafts (default: the bundle's DFlash2 drafter on
	// Core AI when the bundle has one, else a prompt-lookup drafter).
	Drafter speculative.Drafter
}

// Drafters the smoke report names.
const (
	DFlash2 = "dflash2" // the bundle's drafter package, driven by draft.Drafter
	Lookup  = "lookup"  // prompt lookup: the bundle has no drafter
	Custom  = "custom"  // Options.Drafter
)

// Report is what the hardware smoke test measured.
type Report struct {
	Bridge            string  `json:"bridge_release"`
	Drafter           string  `json:"drafter"`
	LoadSeconds       float64 `json:"load_seconds"`
	GenerationSeconds float64 `json:"generation_seconds"`
	PromptTokens      int     `json:"prompt_tokens"`
	GeneratedTokens   int     `json:"generated_tokens"`
	TokensPerSecond   float64 `json:"tokens_per_second"`
	Tokens            []int   `json:"tokens"`
	Text              string  `json:"text"`
	VerifyCalls       int     `json:"verify_calls"`
	DraftsProposed    int     `json:"drafts_proposed"`
	DraftsAccepted    int     `json:"accepted_draft_tokens"`
	AcceptRate        float64 `json:"accept_rate"`
	FiniteLogits      bool    `json:"finite_logits"`
}

// Run loads the bundle's Core AI runtime (bundleDir/coreai, the
// embedding and tokenizer from bundleDir/model) and the bundle's DFlash2
// drafter, feeds the raw prompt and decodes greedily with speculation,
// checking every logits row is finite — the published quick-test. On Linux
// it runs against the test bridge only.
func Run(bundleDir string, opts Options) (Report, error) {
	var rep Report
	if opts.Prompt == "" {
		opts.Prompt = "The capital of France is"
	}
	if opts.Tokens == 0 {
		opts.Tokens = 16
	}
	if opts.Tokens < 2 || opts.Tokens > 64 {
		return rep, fmt.Errorf("smoke: %d tokens, want 2..64", opts.Tokens)
	}
	tok, err := tokenizer.Load(filepath.Join(bundleDir, "model", "tokenizer.json"))
	if err != nil {
		return rep, err
	}
	emb, err := tensor.OpenF16Table(filepath.Join(bundleDir, "model", tensor.EmbeddingNPY))
	if err != nil {
		return rep, fmt.Errorf("smoke: %w", err)
	}
	defer emb.Close()
	ids := tok.Encode(opts.Prompt)
	if len(ids) == 0 {
		return rep, errors.New("smoke: the prompt encodes to no tokens")
	}
	var ladder []int
	if opts.Ctx > 0 {
		ladder = []int{opts.Ctx}
	}
	t0 := time.Now()
	e, err := coreai.Open(filepath.Join(bundleDir, "coreai"), coreai.Options{Bridge: opts.Bridge, Embedding: emb, Ladder: ladder, KV: opts.KV})
	if err != nil {
		return rep, err
	}
	defer e.Close()
	drafter, name, err := smokeDrafter(bundleDir, opts, emb, e.Model().Taps(), ids)
	if err != nil {
		return rep, err
	}
	if c, ok := drafter.(*draft.Drafter); ok {
		defer c.Close()
	}
	rep.LoadSeconds = time.Since(t0).Seconds()
	rep.Bridge, rep.Drafter = e.Model().Info().BridgeRelease, name
	if need := len(ids) + opts.Tokens + ane.VerifyRows; need > e.Model().KVLen(e.Ladder().Largest()) {
		return rep, fmt.Errorf("smoke: %d prompt + %d new + 8 positions exceed the context (%d)", len(ids), opts.Tokens, e.Model().KVLen(e.Ladder().Largest()))
	}
	rep.PromptTokens = len(ids)
	stops := []int{}
	for _, s := range []string{"<|im_end|>", "<|endoftext|>"} {
		if id, ok := tok.TokenID(s); ok {
			stops = append(stops, id)
		}
	}
	t1 := time.Now()
	e.FeatureSink = drafter.AddContext
	first, err := e.Feed(ids)
	e.FeatureSink = nil
	if err != nil {
		return rep, err
	}
	if err := finite(first); err != nil {
		return rep, fmt.Errorf("smoke: prompt logits: %w", err)
	}
	sopts := sample.Options{Temperature: 0, MaxTokens: opts.Tokens, StopTokens: stops}
	smp, err := sample.New(sopts)
	if err != nil {
		return rep, err
	}
	stop, err := sample.NewStopper(sopts)
	if err != nil {
		return rep, err
	}
	target := &finiteTarget{EngineTarget: speculative.NewEngineTarget(e, e.Vocab())}
	sp, err := speculative.New(target, drafter, smp, speculative.Config{Mode: speculative.ModeOn})
	if err != nil {
		return rep, err
	}
	if _, err := sp.Generate(first, len(ids), stop, nil, func(t speculative.Token) error {
		if !t.Stop {
			rep.Tokens = append(rep.Tokens, t.ID)
		}
		return nil
	}); err != nil {
		return rep, fmt.Errorf("smoke: %w", err)
	}
	rep.GenerationSeconds = time.Since(t1).Seconds()
	st := sp.Stats()
	rep.GeneratedTokens = len(rep.Tokens)
	rep.TokensPerSecond = float64(rep.GeneratedTokens) / max(rep.GenerationSeconds, 1e-9)
	rep.Text = tok.Decode(rep.Tokens)
	rep.VerifyCalls = st.Cycles + st.PlainSteps
	rep.DraftsProposed, rep.DraftsAccepted, rep.AcceptRate = st.Proposed, st.Accepted, st.AcceptRate()
	rep.FiniteLogits = true
	if rep.GeneratedTokens == 0 {
		return rep, errors.New("smoke: no token was generated")
	}
	return rep, nil
}

// smokeDrafter opens the bundle's DFlash2 drafter on Core AI when the
// bundle has one (release.json's drafter path, else drafter/); a drafter
// that is present but cannot be opened, or whose taps are not the
// runtime's, fails the smoke test rather than falling back.
func smokeDrafter(bundleDir string, opts Options, emb coreai.Embedding, taps, prompt []int) (speculative.Drafter, string, error) {
	if opts.Drafter != nil {
		return opts.Drafter, Custom, nil
	}
	dir := filepath.Join(bundleDir, "drafter")
	if r, err := bundle.LoadRelease(bundleDir); err == nil && r.Drafter != nil {
		dir = filepath.Join(bundleDir, filepath.FromSlash(r.Drafter.Path))
	}
	if _, err := os.Stat(filepath.Join(dir, bundle.DrafterModel)); err != nil {
		return speculative.NewLookupDrafter(prompt), Lookup, nil
	}
	d, err := draft.Open(dir, draft.Options{Bridge: opts.Bridge, Embedding: emb})
	if err != nil {
		return nil, "", fmt.Errorf("smoke: drafter: %w", err)
	}
	if want := d.Model().Config().DFlash.TargetLayerIDs; !slices.Equal(want, taps) {
		d.Close()
		return nil, "", fmt.Errorf("smoke: the drafter reads target layers %v, the Core AI runtime taps %v", want, taps)
	}
	return d, DFlash2, nil
}

// finiteTarget fails a verify whose logits hold NaN or ±Inf.
type finiteTarget struct{ *speculative.EngineTarget }

func (t *finiteTarget) Verify(tokens []int) ([]float32, error) {
	l, err := t.EngineTarget.Verify(tokens)
	if err == nil {
		err = finite(l)
	}
	return l, err
}

func finite(v []float32) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("logit %d is %v", i, x)
		}
	}
	return nil
}
