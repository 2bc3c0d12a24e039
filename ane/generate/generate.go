// Package generate is the one generation API above the backends: a prompt
// (token ids or a chat request) goes in, a stream of tokens with text
// deltas and a final summary come out. It composes an ane.Engine, the
// speculative cycle (ane/speculative) with an optional drafter, the sampler and
// stopper (ane/sample), the tokenizer's streaming detokenizer and the chat
// template, output parser and thinking budget (ane/text/chat). The daemon and
// forgectl run both use it; docs/GENERATE.md describes it.
package generate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/text/chat"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
)

// Generator is one session's generation stack. A Run starts the engine
// (and drafter) from an empty state, or with Request.Continue from what
// earlier Runs left in it. It is not safe for concurrent use. Drafter may
// be replaced between Runs (the daemon makes a prompt-lookup drafter per
// request from its prompt).
type Generator struct {
	Engine ane.Engine
	// Vocab is the width of the engine's logits rows.
	Vocab     int
	Tokenizer *tokenizer.Tokenizer
	// Template renders chat requests; nil refuses them.
	Template *chat.Template
	// Drafter proposes drafts; nil decodes plainly. Its context is the
	// engine's tap features, so the engine must tap the drafter's layers.
	Drafter speculative.Drafter
	// Auto tunes auto mode (CycleCost: what a draft cycle costs in plain
	// steps on this backend; see docs/SAMPLING.md).
	Auto speculative.Auto
	// StopTokens are always stop tokens (default: <|im_end|> and
	// <|endoftext|> from the tokenizer).
	StopTokens []int

	// held is what the engine holds after the last Run (nil: unknown, the
	// next Run resets); snap, when set, is the engine at snapTokens.
	held       []int
	snap       ane.Snapshot
	snapTokens []int
}

// Request is one generation.
type Request struct {
	// Exactly one of IDs (a raw prompt) and Chat (rendered with the
	// template, generation prompt added) is set.
	IDs  []int
	Chat *chat.Request
	// Sampling overrides the defaults for the mode (sample.Defaults with
	// thinking = the prompt opened <think>); nil keeps them. Stop tokens
	// listed here are added to the generator's.
	Sampling *sample.Options
	// Speculative: speculative.ModeOn, ModeOff or ModeAuto; "" is auto with a
	// drafter and off without.
	Speculative speculative.Mode
	// MaxTokens and StopStrings override Sampling's when set.
	MaxTokens   int
	StopStrings []string
	// ThinkingBudget bounds reasoning tokens (≤ 0: none); when reached
	// inside unfinished reasoning, chat.ThinkStop is forced into the output.
	ThinkingBudget int
	// Continue reuses what earlier Runs left in the engine: when the tokens
	// it holds, or the state kept by SnapshotAt, are a proper prefix of the
	// prompt, only the rest is prefilled. Otherwise (and without Continue)
	// the engine and drafter start from Reset.
	Continue bool
	// SnapshotAt > 0 keeps the engine state after prompt[:SnapshotAt] (when
	// that position is prefilled by this Run), for a later Continue whose
	// prompt shares only that prefix — e.g. a chat's next turn, which
	// re-renders what follows the last turn start.
	SnapshotAt int
	// Constraint, when set, restricts the output to the grammar's language
	// (ane/grammar; e.g. a JSON Schema compiled by ane/grammar/jsonschema,
	// or a forced tool call): every sampled token is masked. With thinking
	// on it applies to the answer after the reasoning closes (</think>);
	// the reasoning itself is free. Generation can stop (stop tokens) only
	// where the grammar's output is complete.
	Constraint *grammar.Grammar
}

// ErrContextExceeded wraps the engine's refusal to hold the prompt plus
// the most tokens the request may generate.
var ErrContextExceeded = errors.New("generate: the prompt and max tokens exceed the largest context")

// Event is one output token.
type Event struct {
	ID int `json:"id"`
	// Text is the text this token made visible (may be empty: a partial
	// UTF-8 character or a possible stop string is held back).
	Text string `json:"text"`
	// Reasoning and Content split Text for chat requests (ane/text/chat's
	// streaming parser); a tool call being written shows up in neither
	// until it is complete (then in Summary.Output).
	Reasoning string `json:"reasoning,omitempty"`
	Content   string `json:"content,omitempty"`
	// Forced marks the tokens of the thinking-budget stop text.
	Forced bool `json:"forced,omitempty"`
	// StepEnd marks the last token one engine call produced (a speculative
	// cycle yields up to 8): a caller streaming per call groups on it.
	StepEnd bool `json:"step_end,omitempty"`
	// Final marks the last event: text released at the finish (no token;
	// ID is -1).
	Final bool `json:"final,omitempty"`
}

// Summary describes a finished generation.
type Summary struct {
	PromptTokens int `json:"prompt_tokens"`
	// CachedTokens of the prompt were already in the engine (Continue).
	CachedTokens    int                 `json:"cached_tokens"`
	Context         int                 `json:"context"`          // the engine's context entry
	GeneratedTokens int                 `json:"generated_tokens"` // output tokens (stop token excluded)
	IDs             []int               `json:"ids"`
	Text            string              `json:"text"` // every Event's Text, concatenated
	Finish          sample.FinishReason `json:"finish_reason"`
	Speculative     speculative.Mode    `json:"speculative"`
	// Times: prefill, time to the first output token (from the start),
	// decode (first token to finish), and output tokens per second over
	// the decode.
	Prefill         time.Duration     `json:"prefill_ns"`
	TimeToFirst     time.Duration     `json:"time_to_first_token_ns"`
	Decode          time.Duration     `json:"decode_ns"`
	TokensPerSecond float64           `json:"tokens_per_second"`
	Stats           speculative.Stats `json:"stats"`
	AcceptRate      float64           `json:"draft_accept_rate"`
	TokensPerCycle  float64           `json:"tokens_per_cycle"`
	ThinkingTokens  int               `json:"thinking_tokens,omitempty"`
	ForcedThinkStop bool              `json:"forced_think_stop,omitempty"`
	// Output is the parsed chat response (chat requests only).
	Output *chat.Output `json:"output,omitempty"`
}

// rewinder is a drafter that can forget context past a position (the
// thinking budget restores the engine to before a cycle).
type rewinder interface{ Rewind(pos int) }

// resetter is a drafter that can start over.
type resetter interface{ Reset() }

// RequestError is a request refused before any engine call: its prompt,
// sampling options, speculative mode or chat template rendering (a caller
// serving requests answers it as the client's mistake).
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// Run generates for req, calling emit for every output token and once more
// with the final released text. An error from emit, or ctx ending (checked
// before every engine call), aborts the run with that error. A bad request
// is a *RequestError.
func (g *Generator) Run(ctx context.Context, req Request, emit func(Event) error) (*Summary, error) {
	if g.Engine == nil || g.Tokenizer == nil || g.Vocab <= 0 {
		return nil, errors.New("generate: the generator needs an engine, its vocabulary size and a tokenizer")
	}
	r, prompt, err := g.newRun(req)
	if err != nil {
		return nil, err
	}
	r.ctx, r.emit = ctx, emit
	err = r.generate(prompt)
	if err != nil && r.con != nil && r.con.m.Err() != nil {
		// The grammar's states are built as the output reaches them: a
		// limit hit there ended the run (the masks allowed nothing more).
		err = fmt.Errorf("generate: constrained output: %w", r.con.m.Err())
	}
	if r.engineFailed {
		g.forget() // the engine may be half-advanced: the next Run starts over
	}
	if err != nil {
		return nil, err
	}
	return r.sum, nil
}

// newRun checks req and sets up its sampler, stopper, speculator, guard
// and parser.
func (g *Generator) newRun(req Request) (*run, []int, error) {
	bad := func(err error) (*run, []int, error) { return nil, nil, &RequestError{err} }
	prompt, thinking, parseOpts, err := g.prompt(req)
	if err != nil {
		return bad(err)
	}
	for i, id := range prompt {
		if id < 0 || id >= g.Vocab {
			return bad(fmt.Errorf("generate: prompt token %d (index %d) is outside the vocabulary [0, %d)", id, i, g.Vocab))
		}
	}
	opts := sample.Defaults(thinking)
	if req.Sampling != nil {
		opts = *req.Sampling
	}
	opts.StopTokens = append(append([]int(nil), g.stopTokens()...), opts.StopTokens...)
	if req.MaxTokens > 0 {
		opts.MaxTokens = req.MaxTokens
	}
	if req.StopStrings != nil {
		opts.StopStrings = req.StopStrings
	}
	sampler, err := sample.New(opts)
	if err != nil {
		return bad(err)
	}
	stopper, err := sample.NewStopper(opts)
	if err != nil {
		return bad(err)
	}
	mode := req.Speculative
	drafter := g.Drafter
	switch {
	case mode == "" && drafter != nil:
		mode = speculative.ModeAuto
	case mode == "" || mode == speculative.ModeOff:
		mode, drafter = speculative.ModeOff, nil
	case drafter == nil:
		return bad(fmt.Errorf("generate: speculative %q needs a drafter, and none is loaded", mode))
	}
	if _, err := speculative.ParseMode(string(mode)); err != nil {
		return bad(err)
	}
	var capped *cappedDrafter
	if drafter != nil {
		capped = &cappedDrafter{Drafter: drafter}
		drafter = capped
	}
	sp, err := speculative.New(speculative.NewEngineTarget(g.Engine, g.Vocab), drafter, sampler, speculative.Config{Mode: mode, Auto: g.Auto})
	if err != nil {
		return nil, nil, err
	}
	r := &run{g: g, req: req, drafter: drafter, capped: capped, sp: sp, sampler: sampler, stopper: stopper,
		maxTokens: sampler.Options().MaxTokens, dec: g.Tokenizer.NewStreamDecoder(),
		sum: &Summary{PromptTokens: len(prompt), Speculative: mode}}
	if req.Constraint != nil {
		thinkEnd := -1
		if thinking {
			id, ok := g.Tokenizer.TokenID(chat.ThinkClose)
			if !ok {
				return bad(fmt.Errorf("generate: a constraint after reasoning needs the %s token, which the tokenizer lacks", chat.ThinkClose))
			}
			thinkEnd = id
		}
		r.con = newConstraint(req.Constraint, grammar.VocabFor(g.Tokenizer), opts.StopTokens, thinkEnd)
		sp.SetConstraint(r.con)
	}
	if req.ThinkingBudget > 0 {
		r.guard = chat.NewThinkingGuard(req.ThinkingBudget, thinking)
	}
	if req.Chat != nil {
		r.parser = chat.NewParser(parseOpts)
	}
	return r, prompt, nil
}

// forget drops what the generator knows about its engine's state.
func (g *Generator) forget() { g.held, g.snap, g.snapTokens = nil, nil, nil }

// prompt encodes the request; thinking reports a prompt that opened <think>.
func (g *Generator) prompt(req Request) ([]int, bool, chat.ParseOptions, error) {
	var po chat.ParseOptions
	switch {
	case (req.IDs != nil) == (req.Chat != nil):
		return nil, false, po, errors.New("generate: give exactly one of prompt ids and a chat request")
	case req.IDs != nil:
		if len(req.IDs) == 0 {
			return nil, false, po, errors.New("generate: empty prompt")
		}
		return req.IDs, g.idsOpenThinking(req.IDs), po, nil
	}
	if g.Template == nil {
		return nil, false, po, errors.New("generate: chat request, but the model has no chat template")
	}
	c := *req.Chat
	c.AddGenerationPrompt = true
	text, err := g.Template.Render(&c)
	if err != nil {
		return nil, false, po, fmt.Errorf("generate: rendering the chat template: %w", err)
	}
	ids := g.Tokenizer.Encode(text)
	if len(ids) == 0 {
		return nil, false, po, errors.New("generate: the rendered prompt is empty")
	}
	po = chat.ParseOptions{InThinking: chat.PromptOpensThinking(text), Tools: req.Chat.Tools}
	return ids, po.InThinking, po, nil
}

// idsOpenThinking: a token prompt ends inside an open <think> block (a
// chat prompt rendered by the caller); its last few tokens tell.
func (g *Generator) idsOpenThinking(ids []int) bool {
	return chat.PromptOpensThinking(g.Tokenizer.Decode(ids[max(0, len(ids)-8):]))
}

func (g *Generator) stopTokens() []int {
	if g.StopTokens != nil {
		return g.StopTokens
	}
	return DefaultStopTokens(g.Tokenizer)
}

// DefaultStopTokens are the stop tokens of a Generator without StopTokens:
// the tokenizer's <|im_end|> and <|endoftext|>.
func DefaultStopTokens(t *tokenizer.Tokenizer) []int {
	var ids []int
	for _, s := range []string{"<|im_end|>", "<|endoftext|>"} {
		if id, ok := t.TokenID(s); ok {
			ids = append(ids, id)
		}
	}
	return ids
}
