package backend

import (
	"context"

	"github.com/forgedaemon/forged/client/wire"
)

// Unavailable is the backend of a daemon with nothing to serve yet (still
// loading, or the model failed): every model operation answers unavailable
// with Reason, while status, subscribe and admin ops keep working.
type Unavailable struct {
	Reason string
	Bundle wire.Bundle
	// Backend is the engine that served before (an unloaded model), so
	// status still names it; nil when none has.
	Backend *wire.BackendInfo
}

// BackendInfo implements Describer.
func (u Unavailable) BackendInfo() *wire.BackendInfo { return u.Backend }

func (u Unavailable) err() error { return wire.Errorf(wire.CodeUnavailable, "%s", u.Reason) }

// Model implements Backend.
func (u Unavailable) Model() ModelInfo { return ModelInfo{Bundle: u.Bundle} }

// Tokenize implements Backend.
func (u Unavailable) Tokenize(string) ([]int, error) { return nil, u.err() }

// Detokenize implements Backend.
func (u Unavailable) Detokenize([]int) (string, error) { return "", u.err() }

// NewStreamDecoder implements Backend.
func (u Unavailable) NewStreamDecoder() StreamDecoder { return noDecoder{} }

// RenderChat implements Backend.
func (u Unavailable) RenderChat(ChatPrompt) (string, error) { return "", u.err() }

// Generate implements Backend.
func (u Unavailable) Generate(context.Context, GenerateRequest, func([]int) error) (Outcome, error) {
	return Outcome{}, u.err()
}

// CloseSession implements Backend.
func (u Unavailable) CloseSession(string) {}

// Memory implements Backend.
func (u Unavailable) Memory() wire.Memory { return wire.Memory{} }

type noDecoder struct{}

func (noDecoder) Add(int) string { return "" }
func (noDecoder) Flush() string  { return "" }
