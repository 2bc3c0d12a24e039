// Package modelbackend serves a Hugging Face qwen3_5 checkpoint directory (or
// a bundle's model/ and export/) with the pure-Go runtime: ane/tokenizer
// for tokens, ane/chat for the chat template, ane/ref for the forward pass
// and ane/generate — the one generation API, shared with forgectl run — for
// sampling, speculative decoding and the thinking budget. It is the adapter
// between daemon.Backend and the engine packages.
//
// Speculation uses a DFlash2 drafter directory when one is given (checked
// against the pairing rules; a refused drafter is logged and the backend
// serves without speculation), and otherwise the prompt-lookup drafter.
package modelbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/chat"
	"github.com/forgedaemon/forged/ane/config"
	"github.com/forgedaemon/forged/ane/dflash"
	"github.com/forgedaemon/forged/ane/generate"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/spec"
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
	// Drafter is a DFlash2 drafter directory (config.json,
	// model.safetensors, selector.safetensors, the sidecar) to speculate
	// with; "" speculates with prompt lookup.
	Drafter string
	// Log receives the drafter decision (default slog.Default()).
	Log *slog.Logger
}

// CPUCycleCost is what a speculative cycle costs in plain steps on this
// engine: a verify of 8 rows costs about 4.6 single-row steps on the CPU
// (docs/SAMPLING.md §6), so auto mode drafts only while a drafter averages
// more than about 3.8 accepted drafts per cycle (break-even 3.7 plus a margin).
const CPUCycleCost = 4.7

// Backend implements daemon.Backend.
type Backend struct {
	tok  *tokenizer.Tokenizer
	tmpl *chat.Template // nil when the directory has no chat template
	// turnStart is the chat template's turn-start token (<|im_start|>), -1 if none.
	turnStart int
	model     *ref.Model // nil when TokenizerOnly
	// engines makes the sessions: model itself, or a view of it tapping
	// the drafter's layers.
	engines *ref.Model
	// drafter: the DFlash2 weights shared by every session's drafter. Else
	// perRequest, when set, makes each request's drafter from its prompt
	// (prompt lookup). Neither: no speculation.
	drafter    *dflash.Weights
	perRequest func(prompt []int) spec.Drafter
	drafting   string // see Speculation
	info       daemon.ModelInfo

	mu       sync.Mutex
	sessions map[string]*sessionState

	footprintOnce sync.Once // Footprint measures once
	footprint     *residency.Footprint
}

// sessionState is one conversation's generation stack: the engine, its
// drafter (DFlash2 only; a lookup drafter is made per request from the
// prompt) and the generator that knows what they hold.
type sessionState struct {
	engine  *ref.Session
	drafter *dflash.Drafter
	gen     *generate.Generator
}

func (st *sessionState) close() {
	if st.drafter != nil {
		st.drafter.Close()
	}
	st.engine.Close()
}

func (b *Backend) newSession() (*sessionState, error) {
	st := &sessionState{engine: b.engines.NewSession()}
	st.gen = &generate.Generator{Engine: st.engine, Vocab: b.model.Config().Vocab, Tokenizer: b.tok,
		Template: b.tmpl, StopTokens: b.model.EOS, Auto: spec.Auto{CycleCost: CPUCycleCost}}
	if b.drafter != nil {
		d, err := dflash.New(b.drafter, b.engines, 0)
		if err != nil {
			st.engine.Close()
			return nil, fmt.Errorf("drafter: %w", err)
		}
		st.drafter, st.gen.Drafter = d, d
	}
	return st, nil
}

// Open loads dir: tokenizer.json, tokenizer_config.json (chat template) and,
// unless opts.TokenizerOnly, the BF16 checkpoint and the drafter.
func Open(dir string, opts Options) (*Backend, error) {
	b, err := openText(dir, opts)
	if err != nil || opts.TokenizerOnly {
		return b, err
	}
	if opts.Ladder == nil {
		opts.Ladder = ane.DefaultLadder
	}
	m, err := ref.Open(dir, ref.Options{Ladder: opts.Ladder})
	if err != nil {
		return nil, err
	}
	b.serve(m, opts, dir, "")
	return b, nil
}

// openText loads the tokenizer and chat template of a checkpoint directory.
func openText(dir string, opts Options) (*Backend, error) {
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
	return b, nil
}

// serve installs the loaded model and chooses the drafter: the DFlash2
// directory in opts if it pairs with the target (modelDir, exportDir),
// otherwise no speculation; prompt lookup when none is given.
func (b *Backend) serve(m *ref.Model, opts Options, modelDir, exportDir string) {
	b.model, b.engines = m, m
	b.info.ContextEntries = append([]int(nil), opts.Ladder...)
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	if opts.Drafter == "" {
		// The speculative cycle hands every drafter the committed rows'
		// features; prompt lookup uses only their positions, so one tap
		// layer keeps that cheap.
		tapped, err := m.WithTaps([]int{0})
		if err != nil {
			b.drafting = "off: " + err.Error()
			return
		}
		b.engines, b.drafting = tapped, "prompt lookup"
		b.perRequest = func(prompt []int) spec.Drafter { return spec.NewLookupDrafter(prompt) }
		return
	}
	w, engines, err := loadDrafter(m, opts.Drafter, modelDir, exportDir)
	if err != nil {
		b.drafting = "off: " + err.Error()
		log.Warn("serving without speculation: the drafter is refused", "drafter", opts.Drafter, "err", err)
		return
	}
	b.drafter, b.engines, b.drafting = w, engines, "dflash2 "+opts.Drafter
	log.Info("speculating with the DFlash2 drafter", "drafter", opts.Drafter, "taps", w.Config.DFlash.TargetLayerIDs)
}

// loadDrafter applies the pairing rules (a *dflash.PairError names each
// failed rule) and loads the drafter's weights, returning them with a
// view of m tapping the drafter's layers.
func loadDrafter(m *ref.Model, dir, modelDir, exportDir string) (*dflash.Weights, *ref.Model, error) {
	cfg, err := config.LoadDrafter(dir)
	if err != nil {
		return nil, nil, err
	}
	taps := cfg.DFlash.TargetLayerIDs
	if err := dflash.CheckDirs(dir, modelDir, exportDir, taps); err != nil {
		return nil, nil, err
	}
	w, err := dflash.LoadWeights(dir)
	if err != nil {
		return nil, nil, err
	}
	tapped, err := m.WithTaps(taps)
	if err != nil {
		return nil, nil, err
	}
	return w, tapped, nil
}

// Speculation says how generations draft: "dflash2 DIR", "prompt lookup",
// or "off: " and why the drafter was refused ("" without a model).
func (b *Backend) Speculation() string { return b.drafting }

// Close releases the sessions (each holds worker goroutines and its
// state) and the model. Nothing may be generating: the daemon closes a
// backend only once its requests have returned.
func (b *Backend) Close() error {
	b.mu.Lock()
	sessions := b.sessions
	b.sessions = map[string]*sessionState{}
	b.mu.Unlock()
	for _, st := range sessions {
		st.close()
	}
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

// Generate runs one generation through ane/generate on the session's
// engine: speculatively with the backend's drafter when req.Speculative
// (auto mode: drafting stops where it does not pay), plainly otherwise.
// Each engine call's tokens (a cycle's accepted drafts plus one, or the
// thinking budget's forced stop text) reach emit together.
func (b *Backend) Generate(ctx context.Context, req daemon.GenerateRequest, emit func([]int) error) (daemon.Outcome, error) {
	out := daemon.Outcome{Revision: b.info.Bundle.Revision, FinishReason: wire.FinishLength}
	if b.model == nil {
		return out, wire.Errorf(wire.CodeUnavailable, "generation: this daemon serves only the tokenizer (no model loaded)")
	}
	opts := sample.Options{Temperature: req.Sampling.Temperature, TopK: int(req.Sampling.TopK),
		TopP: req.Sampling.TopP, Seed: req.Sampling.Seed, MaxTokens: req.MaxTokens}
	st, err := b.session(req.Session)
	if err != nil {
		return out, err
	}
	if req.Session == "" {
		defer st.close()
	}
	if b.perRequest != nil {
		st.gen.Drafter = b.perRequest(req.Prompt)
	}
	mode := spec.ModeOff
	if req.Speculative && st.gen.Drafter != nil {
		mode = spec.ModeAuto
	}
	var step []int
	sum, err := st.gen.Run(ctx, generate.Request{IDs: req.Prompt, Sampling: &opts, Speculative: mode,
		MaxTokens: req.MaxTokens, ThinkingBudget: req.ThinkingBudget,
		Continue: req.Session != "", SnapshotAt: b.lastTurnStart(req.Prompt, req.Session != "")},
		func(e generate.Event) error {
			if !e.Final {
				step = append(step, e.ID)
			}
			if (!e.StepEnd && !e.Final) || len(step) == 0 {
				return nil
			}
			ids := step
			step = nil
			return emit(ids)
		})
	var bad *generate.RequestError
	switch {
	case errors.As(err, &bad):
		return out, wire.Errorf(wire.CodeBadRequest, "%v", err)
	case errors.Is(err, generate.ErrContextExceeded):
		return out, wire.Errorf(wire.CodeContextExceeded, "%v", err)
	case err != nil:
		return out, err
	}
	out.CachedTokens, out.ContextEntry = sum.CachedTokens, sum.Context
	if sum.Finish == sample.FinishStop || sum.Finish == sample.FinishLoop {
		out.FinishReason = wire.FinishStop
	}
	if sum.Stats.Cycles > 0 {
		out.Acceptance = make([]uint64, len(sum.Stats.Histogram))
		for k, n := range sum.Stats.Histogram {
			out.Acceptance[k] = uint64(n)
		}
	}
	return out, nil
}

// lastTurnStart is where a session keeps a snapshot: just before the
// prompt's last turn-start token. The next turn's prompt repeats the
// conversation up to there, while the generation prompt after it (e.g.
// "assistant\n<think>\n") is re-rendered differently once answered.
func (b *Backend) lastTurnStart(prompt []int, session bool) int {
	if !session || b.turnStart < 0 {
		return 0
	}
	for i := len(prompt) - 1; i > 0; i-- {
		if prompt[i] == b.turnStart {
			return i
		}
	}
	return 0
}

// session returns the generation stack to run on: a fresh one for a
// stateless request, else the session's (created on first use), whose
// generator reuses what its engine holds when the prompt extends it.
func (b *Backend) session(id string) (*sessionState, error) {
	if id == "" {
		return b.newSession()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if st, ok := b.sessions[id]; ok {
		return st, nil
	}
	st, err := b.newSession()
	if err == nil {
		b.sessions[id] = st
	}
	return st, err
}

// CloseSession implements daemon.Backend.
func (b *Backend) CloseSession(id string) {
	b.mu.Lock()
	st := b.sessions[id]
	delete(b.sessions, id)
	b.mu.Unlock()
	if st != nil {
		st.close()
	}
}

// Memory implements daemon.Backend.
func (b *Backend) Memory() wire.Memory {
	var m wire.Memory
	if b.model == nil {
		return m
	}
	m.Weights = uint64(b.model.WeightBytes() + b.model.EmbeddingBytes())
	if b.drafter != nil {
		m.Weights += uint64(b.drafter.Bytes())
	}
	b.mu.Lock()
	for _, st := range b.sessions {
		r := st.engine.Memory()
		m.KV += uint64(r.KV)
		m.State += uint64(r.Recurrent)
		m.Scratch += uint64(r.Scratch)
		if st.drafter != nil {
			m.State += uint64(st.drafter.StateBytes())
		}
	}
	b.mu.Unlock()
	m.Total = m.Weights + m.KV + m.State + m.Scratch
	return m
}
