// Package refbackend serves a Hugging Face qwen3_5 checkpoint directory with
// the pure-Go runtime: ane/tokenizer for tokens, ane/chat for the chat
// template, ane/ref for the forward pass and ane/sample for sampling. It is
// the adapter between daemon.Backend and the engine packages.
//
// Not yet wired: the DFlash2 drafter (requests run plain decoding and report
// an empty acceptance histogram). A thinking budget is enforced with
// ane/chat's ThinkingGuard.
package refbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/chat"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/tokenizer"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/residency"
)

// Options name what is served.
type Options struct {
	Repo, Revision string
	// TokenizerOnly loads only the tokenizer and chat template: tokenize and
	// detokenize work, generation answers unavailable.
	TokenizerOnly bool
	// Ladder is the context ladder (default ane.DefaultLadder).
	Ladder ane.Ladder
}

// Backend implements daemon.Backend.
type Backend struct {
	tok  *tokenizer.Tokenizer
	tmpl *chat.Template // nil when the directory has no chat template
	// turnStart is the chat template's turn-start token (<|im_start|>), -1 if none.
	turnStart int
	model     *ref.Model // nil when TokenizerOnly
	info      daemon.ModelInfo

	mu       sync.Mutex
	sessions map[string]*sessionState

	footprintOnce sync.Once // Footprint measures once
	footprint     *residency.Footprint
}

type sessionState struct {
	engine *ref.Session
	tokens []int // what the engine state holds, in order
	// The state before the last prompt's final turn-start token (see prefill).
	snap       ane.Snapshot
	snapTokens []int
}

// Open loads dir: tokenizer.json, tokenizer_config.json (chat template) and,
// unless opts.TokenizerOnly, the BF16 checkpoint.
func Open(dir string, opts Options) (*Backend, error) {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, err
	}
	b := &Backend{tok: tok, sessions: map[string]*sessionState{}, turnStart: -1}
	if id, ok := tok.TokenID("<|im_start|>"); ok {
		b.turnStart = id
	}
	if t, err := chat.LoadTemplate(dir); err == nil {
		b.tmpl = t
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("chat template in %s: %w", dir, err)
	}
	if opts.Revision == "" {
		opts.Revision = "local"
	}
	if opts.Repo == "" {
		opts.Repo = "local/" + filepath.Base(dir)
	}
	b.info = daemon.ModelInfo{Bundle: wire.Bundle{Repo: opts.Repo, Revision: opts.Revision, Model: filepath.Base(dir)}}
	if !opts.TokenizerOnly {
		if opts.Ladder == nil {
			opts.Ladder = ane.DefaultLadder
		}
		if b.model, err = ref.Open(dir, ref.Options{Ladder: opts.Ladder}); err != nil {
			return nil, err
		}
		b.info.ContextEntries = append([]int(nil), opts.Ladder...)
	}
	return b, nil
}

// Close releases the model.
func (b *Backend) Close() error {
	if b.model != nil {
		return b.model.Close()
	}
	return nil
}

// Model implements daemon.Backend.
func (b *Backend) Model() daemon.ModelInfo { return b.info }

// Tokenize implements daemon.Backend.
func (b *Backend) Tokenize(text string) ([]int, error) { return b.tok.Encode(text), nil }

// Detokenize implements daemon.Backend; ids outside the vocabulary are a bad request.
func (b *Backend) Detokenize(ids []int) (string, error) {
	for i, id := range ids {
		if _, ok := b.tok.TokenString(id); !ok {
			return "", wire.Errorf(wire.CodeBadRequest, "detokenize: ids[%d] = %d is not in the vocabulary (%d tokens)", i, id, b.tok.VocabSize())
		}
	}
	return b.tok.Decode(ids), nil
}

// NewStreamDecoder implements daemon.Backend.
func (b *Backend) NewStreamDecoder() daemon.StreamDecoder { return b.tok.NewStreamDecoder() }

// RenderChat renders with the checkpoint's own template.
func (b *Backend) RenderChat(p daemon.ChatPrompt) (string, error) {
	if b.tmpl == nil {
		return "", wire.Errorf(wire.CodeUnavailable, "chat: the model directory has no chat template")
	}
	doc := map[string]any{"messages": p.Messages, "add_generation_prompt": true, "enable_thinking": p.Thinking}
	if len(p.Tools) > 0 {
		doc["tools"] = p.Tools
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	req, err := chat.ParseRequest(data)
	if err != nil {
		return "", wire.Errorf(wire.CodeBadRequest, "chat: %v", err)
	}
	return b.tmpl.Render(req)
}

// Generate runs plain (non-speculative) decoding on a ref session.
func (b *Backend) Generate(ctx context.Context, req daemon.GenerateRequest, emit func([]int) error) (_ daemon.Outcome, err error) {
	out := daemon.Outcome{Revision: b.info.Bundle.Revision, FinishReason: wire.FinishLength}
	if b.model == nil {
		return out, wire.Errorf(wire.CodeUnavailable, "generation: this daemon serves only the tokenizer (no model loaded)")
	}
	for i, id := range req.Prompt {
		if id < 0 || id >= b.model.Config().Vocab {
			return out, wire.Errorf(wire.CodeBadRequest, "prompt token %d (id %d) is outside the model's vocabulary", i, id)
		}
	}
	st, cached := b.session(req.Session, req.Prompt)
	if req.Session == "" {
		defer st.engine.Close()
	} else {
		defer func() {
			// A failed engine call may leave the state half-advanced: the next
			// turn starts over rather than trusting it. (Cancellation and stop
			// strings keep the state: every fed token is recorded.)
			if errors.Is(err, errEngine) {
				st.engine.Reset()
				st.tokens, st.snap, st.snapTokens = st.tokens[:0], nil, nil
			}
		}()
	}
	out.CachedTokens = cached
	if err := st.engine.Fit(len(req.Prompt) + req.MaxTokens); err != nil {
		return out, wire.Errorf(wire.CodeContextExceeded, "%v", err)
	}
	out.ContextEntry = st.engine.Context()
	logits, err := b.prefill(st, req.Prompt, cached, req.Session != "")
	if err != nil {
		return out, engineError(err)
	}
	sampler, err := sample.New(sample.Options{Temperature: req.Sampling.Temperature, TopK: int(req.Sampling.TopK),
		TopP: req.Sampling.TopP, Seed: req.Sampling.Seed, StopTokens: b.model.EOS, MaxTokens: req.MaxTokens})
	if err != nil {
		return out, wire.Errorf(wire.CodeBadRequest, "sampling: %v", err)
	}
	guard, guardText := b.newThinkingGuard(req), b.tok.NewStreamDecoder()
	var generated []int
	for len(generated) < req.MaxTokens {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		id, err := sampler.Sample(logits, generated)
		if err != nil {
			return out, err
		}
		step := []int{id}
		if stop := guard.Observe(guardText.Add(id)); stop != "" {
			// The thinking budget is spent: close the reasoning in the model's voice.
			forced := b.tok.Encode(stop)
			step = append(step, forced[:min(len(forced), req.MaxTokens-len(generated)-1)]...)
		}
		generated = append(generated, step...)
		if err := emit(step); err != nil {
			return out, err
		}
		if isStop(b.model.EOS, id) {
			out.FinishReason = wire.FinishStop
			break
		}
		if logits, err = st.engine.Feed(step); err != nil {
			return out, engineError(err)
		}
		st.tokens = append(st.tokens, step...)
	}
	return out, nil
}

// newThinkingGuard follows the reasoning of one generation (ane/chat's
// ThinkingGuard, which forces the published THINK_STOP text at the budget).
func (b *Backend) newThinkingGuard(req daemon.GenerateRequest) *chat.ThinkingGuard {
	start := 0
	for i := len(req.Prompt) - 1; i >= 0; i-- {
		if req.Prompt[i] == b.turnStart {
			start = i
			break
		}
	}
	open := chat.PromptOpensThinking(b.tok.Decode(req.Prompt[start:]))
	return chat.NewThinkingGuard(req.ThinkingBudget, open)
}

// prefill feeds prompt[cached:]. For a session it snapshots the state just
// before the last turn-start token: the next turn's prompt repeats the
// conversation up to there, while the generation prompt after it (e.g.
// "assistant\n<think>\n") is re-rendered differently once answered.
func (b *Backend) prefill(st *sessionState, prompt []int, cached int, keep bool) ([]float32, error) {
	cut := -1
	if keep && b.turnStart >= 0 {
		for i := len(prompt) - 1; i > cached; i-- {
			if prompt[i] == b.turnStart {
				cut = i
				break
			}
		}
	}
	if cut > cached {
		if _, err := st.engine.Feed(prompt[cached:cut]); err != nil {
			return nil, err
		}
		if snap, err := st.engine.Snapshot(); err == nil {
			st.snap, st.snapTokens = snap, append(st.snapTokens[:0], prompt[:cut]...)
		}
		cached = cut
	}
	logits, err := st.engine.Feed(prompt[cached:])
	if err != nil {
		return nil, err
	}
	st.tokens = append(st.tokens[:0], prompt...)
	return logits, nil
}

// session returns the engine to run on and how many prompt tokens its state
// already holds. A stateless request gets a fresh engine; a session reuses
// its state when the prompt extends it (or extends the last prompt, via the
// snapshot), and starts over otherwise.
func (b *Backend) session(id string, prompt []int) (*sessionState, int) {
	if id == "" {
		return &sessionState{engine: b.model.NewSession()}, 0
	}
	b.mu.Lock()
	st, ok := b.sessions[id]
	if !ok {
		st = &sessionState{engine: b.model.NewSession()}
		b.sessions[id] = st
	}
	b.mu.Unlock()
	switch {
	case isPrefix(st.tokens, prompt):
		return st, len(st.tokens)
	case st.snap != nil && isPrefix(st.snapTokens, prompt) && st.engine.Restore(st.snap) == nil:
		st.tokens = append(st.tokens[:0], st.snapTokens...)
		return st, len(st.tokens)
	}
	st.engine.Reset()
	st.tokens = st.tokens[:0]
	return st, 0
}

// isPrefix reports whether p is a proper prefix of s (at least one token of
// s must be left to feed, for its logits).
func isPrefix(p, s []int) bool {
	if len(p) >= len(s) {
		return false
	}
	for i := range p {
		if p[i] != s[i] {
			return false
		}
	}
	return true
}

var errEngine = errors.New("engine")

func engineError(err error) error { return fmt.Errorf("%w: %w", errEngine, err) }

func isStop(eos []int, id int) bool {
	for _, e := range eos {
		if e == id {
			return true
		}
	}
	return false
}

// CloseSession implements daemon.Backend.
func (b *Backend) CloseSession(id string) {
	b.mu.Lock()
	st := b.sessions[id]
	delete(b.sessions, id)
	b.mu.Unlock()
	if st != nil {
		st.engine.Close()
	}
}

// Memory implements daemon.Backend.
func (b *Backend) Memory() wire.Memory {
	var m wire.Memory
	if b.model == nil {
		return m
	}
	m.Weights = uint64(b.model.WeightBytes() + b.model.EmbeddingBytes())
	b.mu.Lock()
	for _, st := range b.sessions {
		r := st.engine.Memory()
		m.KV += uint64(r.KV)
		m.State += uint64(r.Recurrent)
		m.Scratch += uint64(r.Scratch)
	}
	b.mu.Unlock()
	m.Total = m.Weights + m.KV + m.State + m.Scratch
	return m
}
