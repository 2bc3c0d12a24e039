// Package modelbackend is the daemon's model backend: it serves one loaded
// model through any ane.Engine. What every engine shares lives here — the
// tokenizer (ane/text/tokenizer), the chat template (ane/text/chat), generation
// through ane/generate (sampling, speculative decoding, the thinking
// budget; the same API forgectl run uses), one engine session per
// conversation, parking, and the memory account. Only opening the model
// differs: the pure-Go reference engine (ane/ref) from a checkpoint or a
// bundle's export/ (ref.go), or the published Core AI packages through the
// cai_* bridge (ane/coreai, coreai.go). OpenSnapshot (open.go) chooses
// between them (select.go).
//
// Speculation uses the bundle's DFlash2 drafter when it passes the pairing
// rules (a refused drafter is logged, and status says why), prompt lookup
// otherwise.
package modelbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/generate"
	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/text/chat"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
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
	// Ladder restricts the context ladder (default: ane.DefaultLadder for
	// the reference engine, every manifest context for Core AI).
	Ladder ane.Ladder
	// Drafter is a DFlash2 drafter directory to speculate with (reference
	// engine, --model); "" uses the bundle's drafter/ or prompt lookup.
	Drafter string
	// ExactNumerics serves the reference engine in its exact numeric mode
	// (ref.Options.Fast off: bit-identical to ref.Open's default, what a
	// comparison against it needs); serving defaults to the fast mode.
	ExactNumerics bool
	// Backend is the engine to serve with: wire.BackendCoreAI,
	// wire.BackendRef, or "" / "auto" to choose (Choose).
	Backend string
	// Bridge is the Core AI bridge library ("": FindBridge).
	Bridge string
	// SpillDir is where parked Core AI sessions are written ("": kept in
	// host memory).
	SpillDir string
	// Log receives the drafter decision (default slog.Default()).
	Log *slog.Logger
}

func (o *Options) log() *slog.Logger {
	if o.Log == nil {
		return slog.Default()
	}
	return o.Log
}

// modelRuntime is one loaded model of an engine family: everything the backend
// needs that differs between ane/ref and ane/coreai.
type modelRuntime interface {
	// newSession makes one conversation's engine and, with a DFlash2
	// drafter, its drafter.
	newSession() (sessionEngine, speculative.Drafter, error)
	// requestDrafter makes a request's drafter from its prompt (prompt
	// lookup), or is nil.
	requestDrafter() func(prompt []int) speculative.Drafter
	vocab() int
	stopTokens() []int
	// cycleCost is what a speculative cycle costs in plain steps (auto mode).
	cycleCost() float64
	// weightBytes is what the model holds besides its sessions: weights,
	// embedding, the drafter's weights.
	weightBytes() int64
	footprint() *residency.Footprint
	describe() wire.BackendInfo
	speculation() string
	close() error
}

// sessionEngine is an engine session the backend owns.
type sessionEngine interface {
	ane.Engine
	Close() error
}

// parker is an engine session that can move its state out of the
// model's memory and back (coreai.Engine).
type parker interface {
	Park(spillDir string) error
	Parked() bool
}

// Backend implements daemon.Backend for one loaded model.
type Backend struct {
	tok  *tokenizer.Tokenizer
	tmpl *chat.Template // nil when the model directory has no chat template
	// turnStart is the chat template's turn-start token (<|im_start|>), -1 if none.
	turnStart int
	rt        modelRuntime // nil when TokenizerOnly
	// perRequest, when set, makes each request's drafter from its prompt
	// (prompt lookup); tests replace it.
	perRequest func(prompt []int) speculative.Drafter
	info       daemon.ModelInfo
	why        string // how the backend was chosen
	spillDir   string

	mu       sync.Mutex
	sessions map[string]*sessionState

	footprintOnce sync.Once
	fp            *residency.Footprint
}

// sessionState is one conversation's generation stack: the engine, its
// DFlash2 drafter (a lookup drafter is made per request from the prompt)
// and the generator that knows what they hold.
type sessionState struct {
	engine  sessionEngine
	drafter speculative.Drafter
	gen     *generate.Generator
}

func (st *sessionState) close() {
	if c, ok := st.drafter.(interface{ Close() error }); ok {
		c.Close()
	} else if c, ok := st.drafter.(interface{ Close() }); ok {
		c.Close()
	}
	st.engine.Close()
}

// openText loads the tokenizer and chat template of a model directory and
// names what is served.
func openText(dir string, opts Options, model string) (*Backend, error) {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, err
	}
	b := &Backend{tok: tok, sessions: map[string]*sessionState{}, turnStart: -1, spillDir: opts.SpillDir}
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
		opts.Repo = "local/" + model
	}
	b.info = daemon.ModelInfo{Bundle: wire.Bundle{Repo: opts.Repo, Revision: opts.Revision, Model: model}}
	return b, nil
}

// serve installs a loaded model.
func (b *Backend) serve(rt modelRuntime, ladder []int, why string) {
	b.rt, b.why = rt, why
	b.perRequest = rt.requestDrafter()
	b.info.ContextEntries = append([]int(nil), ladder...)
}

func (b *Backend) newSession() (*sessionState, error) {
	e, d, err := b.rt.newSession()
	if err != nil {
		return nil, err
	}
	st := &sessionState{engine: e, drafter: d}
	st.gen = &generate.Generator{Engine: e, Vocab: b.rt.vocab(), Tokenizer: b.tok, Template: b.tmpl,
		StopTokens: b.rt.stopTokens(), Auto: speculative.Auto{CycleCost: b.rt.cycleCost()}}
	if d != nil {
		st.gen.Drafter = d
	}
	return st, nil
}

// Speculation says how generations draft: "dflash2 DIR", "prompt lookup",
// or "off: " and why the drafter was refused ("" without a model).
func (b *Backend) Speculation() string {
	if b.rt == nil {
		return ""
	}
	return b.rt.speculation()
}

// BackendInfo names the engine serving the model (nil: only the tokenizer
// is loaded).
func (b *Backend) BackendInfo() *wire.BackendInfo {
	if b.rt == nil {
		return nil
	}
	info := b.rt.describe()
	info.Why = b.why
	return &info
}

// Footprint is the memory model of the loaded model for the residency
// policy (nil when only the tokenizer is loaded).
func (b *Backend) Footprint() *residency.Footprint {
	if b.rt == nil {
		return nil
	}
	b.footprintOnce.Do(func() { b.fp = b.rt.footprint() })
	return b.fp
}

// Close releases the sessions (each holds engine state and, on the
// reference engine, worker goroutines) and the model. Nothing may be
// generating: the daemon closes a backend only once its requests have
// returned.
func (b *Backend) Close() error {
	b.mu.Lock()
	sessions := b.sessions
	b.sessions = map[string]*sessionState{}
	b.mu.Unlock()
	for _, st := range sessions {
		st.close()
	}
	if b.rt != nil {
		return b.rt.close()
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

// NewStreamDecoder implements daemon.Backend. A stop token (the <|im_end|>
// that ends a turn, which the engine step that sampled it reports) shows no
// text, as in ane/generate's own events.
func (b *Backend) NewStreamDecoder() daemon.StreamDecoder {
	var stops []int
	if b.rt != nil {
		stops = b.rt.stopTokens()
	}
	if stops == nil {
		stops = generate.DefaultStopTokens(b.tok) // what the generator stops on without its own
	}
	return outputDecoder{b.tok.NewStreamDecoder(), stops}
}

type outputDecoder struct {
	*tokenizer.StreamDecoder
	stops []int
}

func (d outputDecoder) Add(id int) string {
	if slices.Contains(d.stops, id) {
		return ""
	}
	return d.StreamDecoder.Add(id)
}

// RenderChat renders with the model's own template.
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
// engine: speculatively with the drafter when req.Speculative (auto mode:
// drafting stops where it does not pay), plainly otherwise. Each engine
// call's tokens (a cycle's accepted drafts plus one, or the thinking
// budget's forced stop text) reach emit together.
func (b *Backend) Generate(ctx context.Context, req daemon.GenerateRequest, emit func([]int) error) (daemon.Outcome, error) {
	out := daemon.Outcome{Revision: b.info.Bundle.Revision, FinishReason: wire.FinishLength}
	if b.rt == nil {
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
	mode := speculative.ModeOff
	if req.Speculative && st.gen.Drafter != nil {
		mode = speculative.ModeAuto
	}
	var step []int
	sum, err := st.gen.Run(ctx, generate.Request{IDs: req.Prompt, Sampling: &opts, Speculative: mode,
		MaxTokens: req.MaxTokens, ThinkingBudget: req.ThinkingBudget, Constraint: req.Constraint,
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
	var limit *grammar.LimitError
	switch {
	case errors.As(err, &bad):
		return out, wire.Errorf(wire.CodeBadRequest, "%v", err)
	case errors.As(err, &limit): // the format's automaton outgrew its limit while being built lazily
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

// ParkSession moves an idle session's engine state out of the model's
// memory (to host memory, or a file in Options.SpillDir) where the engine
// can; its next turn resumes it without prefilling again. It reports
// whether the session was parked; false means the engine cannot park (the
// caller then drops the state instead) or the session holds none. The
// daemon calls it only for sessions with no request running.
func (b *Backend) ParkSession(id string) (bool, error) {
	b.mu.Lock()
	st := b.sessions[id]
	b.mu.Unlock()
	if st == nil {
		return false, nil
	}
	p, ok := st.engine.(parker)
	if !ok {
		return false, nil
	}
	if err := p.Park(b.spillDir); err != nil {
		return false, err
	}
	// The drafter's ring is a cache of the target's features: a parked
	// conversation's drafter starts over (draft.Drafter.Park; the target
	// verifies every draft, so what is generated is unchanged).
	if d, ok := st.drafter.(interface{ Park() error }); ok {
		if err := d.Park(); err != nil {
			return true, err
		}
	}
	return true, nil
}

// Memory implements daemon.Backend: the weights once, and what each
// session's engine and drafter hold (for Core AI, the bridge's buffers).
func (b *Backend) Memory() wire.Memory {
	var m wire.Memory
	if b.rt == nil {
		return m
	}
	m.Weights = uint64(b.rt.weightBytes())
	b.mu.Lock()
	for _, st := range b.sessions {
		r := st.engine.Memory()
		m.KV += uint64(r.KV)
		m.State += uint64(r.Recurrent)
		m.Scratch += uint64(r.Scratch)
		m.State += uint64(drafterStateBytes(st.drafter))
	}
	b.mu.Unlock()
	m.Total = m.Weights + m.KV + m.State + m.Scratch
	return m
}

// drafterStateBytes is a session drafter's own memory (ring, buffers).
func drafterStateBytes(d speculative.Drafter) int64 {
	switch d := d.(type) {
	case interface{ StateBytes() int64 }:
		return d.StateBytes()
	case interface{ Memory() ane.MemoryReport }:
		return d.Memory().Session()
	}
	return 0
}

// modelName is what status calls a served directory: a bundle snapshot by
// its repository's last path element, a checkpoint by its directory.
func modelName(repo, dir string) string {
	if repo != "" {
		return filepath.Base(repo)
	}
	return filepath.Base(dir)
}
