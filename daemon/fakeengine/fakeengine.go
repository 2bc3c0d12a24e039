// Package fakeengine is the instant, deterministic daemon.Backends for tests,
// benchmarks and the fairness harness. Engine has no model: its vocabulary
// is the 256 byte values plus an end token, and it "generates" a fixed reply
// cycle. Scripted writes given model text through a real tokenizer and chat
// template, for tests of what follows the engine (the output parser). They
// exist because the real engine's throughput would hide the protocol's, and
// its tiny test models write random text.
package fakeengine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
)

// EOS is the end-of-text token id.
const EOS = 256

// Reply is the text the engine generates, cycled: multibyte characters make
// tokens that end inside a UTF-8 sequence (ids are bytes).
const Reply = "héllo wörld → 世界 "

// Options shape the fake's behaviour.
type Options struct {
	TokenDelay  time.Duration // per generated token (0: instant)
	StopAfter   int           // emit EOS after this many tokens (0: never, run to max_tokens)
	Revision    string
	ContextSize []int  // the context ladder (default 8192, 16384, 32768, 65536)
	PanicText   string // Tokenize panics on exactly this text (to test the daemon's recovery)
	// Gate, when set, holds every generation before its first token until
	// it is closed: a test freezes the scheduler's queue (no step ends, so
	// no slot is yielded) while it arranges who waits.
	Gate <-chan struct{}
}

// Engine implements daemon.Backend.
type Engine struct {
	opts Options

	mu       sync.Mutex
	sessions map[string][]int // tokens in each session's state
	closed   []string
}

// New returns a fake engine.
func New(opts Options) *Engine {
	if opts.Revision == "" {
		opts.Revision = "0000000000000000000000000000000000000fake"
	}
	if len(opts.ContextSize) == 0 {
		opts.ContextSize = []int{8192, 16384, 32768, 65536}
	}
	return &Engine{opts: opts, sessions: map[string][]int{}}
}

// Model implements daemon.Backend.
func (e *Engine) Model() daemon.ModelInfo {
	return daemon.ModelInfo{
		Bundle:         wire.Bundle{Repo: "fake/instant", Revision: e.opts.Revision, Model: "fake-bytes"},
		ContextEntries: e.opts.ContextSize,
	}
}

// Tokenize maps each byte to its own id.
func (e *Engine) Tokenize(text string) ([]int, error) {
	if e.opts.PanicText != "" && text == e.opts.PanicText {
		panic("fakeengine: asked to panic")
	}
	ids := make([]int, len(text))
	for i := range len(text) {
		ids[i] = int(text[i])
	}
	return ids, nil
}

// Detokenize is the inverse of Tokenize; EOS decodes to nothing.
func (e *Engine) Detokenize(ids []int) (string, error) {
	b := make([]byte, 0, len(ids))
	for i, id := range ids {
		switch {
		case id >= 0 && id < 256:
			b = append(b, byte(id))
		case id == EOS:
		default:
			return "", wire.Errorf(wire.CodeBadRequest, "detokenize: ids[%d] = %d is outside the vocabulary (0–%d)", i, id, EOS)
		}
	}
	return string(b), nil
}

type byteDecoder struct{}

func (byteDecoder) Add(id int) string {
	if id >= 0 && id < 256 {
		return string([]byte{byte(id)}) // may be half a character: the daemon must hold it back
	}
	return ""
}
func (byteDecoder) Flush() string { return "" }

// NewStreamDecoder implements daemon.Backend.
func (e *Engine) NewStreamDecoder() daemon.StreamDecoder { return byteDecoder{} }

// RenderChat writes a ChatML-like transcript.
func (e *Engine) RenderChat(p daemon.ChatPrompt) (string, error) {
	var b strings.Builder
	for _, m := range p.Messages {
		fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", m.Role, m.Content)
	}
	b.WriteString("<|im_start|>assistant\n")
	if !p.Thinking {
		b.WriteString("<think>\n\n</think>\n\n")
	}
	return b.String(), nil
}

// errNoConstraint refuses a constrained request: a fake's output is
// canned, so it cannot follow a format, and must not pretend to.
var errNoConstraint = wire.Errorf(wire.CodeBadRequest, "fakeengine: this backend cannot constrain output (format, forced tool_choice)")

// Generate emits Reply's bytes one token per step (three per step when
// speculative, recording an acceptance of 2 drafts per cycle).
func (e *Engine) Generate(ctx context.Context, req daemon.GenerateRequest, emit func([]int) error) (daemon.Outcome, error) {
	out := daemon.Outcome{FinishReason: wire.FinishLength, Revision: e.opts.Revision}
	if req.Constraint != nil { // it cannot mask its canned text
		return out, errNoConstraint
	}
	total := len(req.Prompt) + req.MaxTokens
	for _, c := range e.opts.ContextSize {
		if c >= total {
			out.ContextEntry = c
			break
		}
	}
	if req.Session != "" {
		e.mu.Lock()
		out.CachedTokens = commonPrefix(e.sessions[req.Session], req.Prompt)
		e.mu.Unlock()
	}
	step := 1
	if req.Speculative {
		step = 3
		out.Acceptance = make([]uint64, 3)
	}
	if e.opts.Gate != nil {
		select {
		case <-e.opts.Gate:
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
	reply := []byte(Reply)
	generated := make([]int, 0, req.MaxTokens)
	for len(generated) < req.MaxTokens {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		n := min(step, req.MaxTokens-len(generated))
		ids := make([]int, 0, n)
		for range n {
			id := int(reply[len(generated)%len(reply)])
			if e.opts.StopAfter > 0 && len(generated) == e.opts.StopAfter {
				id = EOS
			}
			ids = append(ids, id)
			generated = append(generated, id)
			if id == EOS {
				out.FinishReason = wire.FinishStop
				break
			}
		}
		if e.opts.TokenDelay > 0 {
			select {
			case <-time.After(e.opts.TokenDelay * time.Duration(len(ids))):
			case <-ctx.Done():
				return out, ctx.Err()
			}
		}
		if out.Acceptance != nil {
			out.Acceptance[len(ids)-1]++
		}
		if err := emit(ids); err != nil {
			return out, err
		}
		if out.FinishReason == wire.FinishStop {
			break
		}
	}
	if req.Session != "" {
		e.mu.Lock()
		e.sessions[req.Session] = append(append([]int(nil), req.Prompt...), generated...)
		e.mu.Unlock()
	}
	return out, nil
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// CloseSession implements daemon.Backend.
func (e *Engine) CloseSession(id string) {
	e.mu.Lock()
	delete(e.sessions, id)
	e.closed = append(e.closed, id)
	e.mu.Unlock()
}

// ClosedSessions lists the sessions closed so far, for tests.
func (e *Engine) ClosedSessions() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.closed...)
}

// OpenSessions counts sessions holding state, for tests.
func (e *Engine) OpenSessions() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.sessions)
}

// Memory implements daemon.Backend.
func (e *Engine) Memory() wire.Memory {
	e.mu.Lock()
	defer e.mu.Unlock()
	var kv uint64
	for _, s := range e.sessions {
		kv += uint64(len(s)) * 64
	}
	return wire.Memory{KV: kv, Total: kv}
}
