// Package backend is the contract between the daemon and a model runtime:
// the Backend interface, its optional extensions (Describer, SessionParker,
// Footprinter) and the request and outcome types; Unavailable is the backend
// of a daemon with nothing to serve.
package backend

import (
	"context"

	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/residency"
)

// Backend is everything the server needs from the model runtime. The real
// engine (ane/ref or ane/coreai plus ane/text/tokenizer and ane/text/chat) plugs in
// through a small adapter; tests use daemon/fakeengine.
//
// Errors may be *wire.Error to choose the code the caller sees (for example
// context_exceeded); any other error is reported as internal.
type Backend interface {
	// Model describes what is served, for hello, status and every reply.
	Model() ModelInfo
	Tokenize(text string) ([]int, error)
	Detokenize(ids []int) (string, error)
	// NewStreamDecoder turns a token stream into text incrementally.
	NewStreamDecoder() StreamDecoder
	// RenderChat renders a conversation with the model's chat template,
	// ending with the assistant generation prompt.
	RenderChat(p ChatPrompt) (string, error)
	// Generate runs one generation, calling emit once per engine step with
	// the tokens that step produced, until a stop token, MaxTokens, an emit
	// error or ctx ends. It must return promptly once ctx is done.
	Generate(ctx context.Context, req GenerateRequest, emit func(ids []int) error) (Outcome, error)
	// CloseSession frees the state kept for a session id.
	CloseSession(id string)
	Memory() wire.Memory
}

// Describer is a Backend that names the engine serving the model (hello
// and status show it as backend).
type Describer interface {
	BackendInfo() *wire.BackendInfo
}

// SessionParker is a Backend that can move an idle session's engine state
// out of the model's memory and resume it on its next turn without
// prefilling again (Core AI). ParkSession reports false when it cannot
// (the daemon then drops the state instead).
type SessionParker interface {
	ParkSession(id string) (bool, error)
}

// Footprinter is a Backend that knows its memory model (daemon/residency).
// Without it the daemon still picks context entries from Model's ladder,
// but cannot estimate memory.
type Footprinter interface {
	Footprint() *residency.Footprint
}

// Info is what b says about its engine, or nil.
func Info(b Backend) *wire.BackendInfo {
	if d, ok := b.(Describer); ok {
		return d.BackendInfo()
	}
	return nil
}

// StreamDecoder matches ane/text/tokenizer's StreamDecoder.
type StreamDecoder interface {
	Add(id int) string
	Flush() string
}

// ModelInfo names the served bundle and its context ladder.
type ModelInfo struct {
	Bundle         wire.Bundle
	ContextEntries []int // ascending; the last is the largest context a request may use
}

// ChatPrompt is what a chat template needs. Tools (and messages' tool
// calls) marshal to JSON in the caller's key order, which tojson must
// reproduce.
type ChatPrompt struct {
	Messages       []wire.Message
	Tools          []wire.Object
	Thinking       bool
	ThinkingBudget int
}

// GenerateRequest is one generation as the backend sees it.
type GenerateRequest struct {
	Prompt         []int
	MaxTokens      int
	Sampling       wire.Sampling
	Speculative    bool
	ThinkingBudget int    // 0 = no budget; enforced by the engine's thinking control
	Session        string // "" for a stateless request; otherwise reuse that session's state
	// Constraint, when set, is the grammar every sampled token must keep
	// the output in (a format or a forced tool call, ane/grammar). A
	// backend that cannot enforce it must refuse the request, never
	// ignore it.
	Constraint *grammar.Grammar
}

// Outcome is what the backend knows about a finished generation.
type Outcome struct {
	FinishReason string   // wire.FinishStop or wire.FinishLength
	CachedTokens int      // prompt tokens reused from the session's state
	ContextEntry int      // the context entry (KV rows) used
	Revision     string   // the bundle revision that produced the tokens
	Acceptance   []uint64 // speculative acceptance histogram
}
