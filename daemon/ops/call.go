package ops

import (
	"context"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/state"
	"github.com/forgedaemon/forged/daemon/transport"
)

// call is one chat or generate request as the generation path sees it: who
// asks (for authorisation, fairness and status) and where its events go. A
// msgpack connection makes one per request (conn.call); the HTTP API makes
// one through Handlers.Chat and Handlers.Generate. Both then run the same
// admission, scheduler and generation code.
type call struct {
	s        *Handlers
	peer     transport.Peer
	client   string
	sessions *state.Owner                                 // nil: no sessions (HTTP)
	sink     func(id uint64, name string, data any) error // the request's events
}

func (c *call) clientName() string { return c.client }

func (c *call) event(id uint64, name string, data any) error { return c.sink(id, name, data) }

// call is a request of this connection: its events are frames on it.
func (c *conn) call() *call {
	return &call{s: c.s, peer: c.peer, client: c.clientName(), sessions: c.sessions, sink: c.event}
}

// result turns a typed generation result into a handler's (nil stays an
// untyped nil, so an error reply carries no result).
func result(r *wire.GenerationResult, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Caller is who runs a request that does not come from a msgpack
// connection (the HTTP API) and where its events go.
type Caller struct {
	ID     uint64         // the request id shown in status (unique among the caller's requests)
	Peer   transport.Peer // from the kernel (Unix socket) or the token's record (TCP)
	Client string         // the app name: with Peer.UID, the caller identity for fairness
	// Event receives the request's events (wire.EventToken with a
	// wire.TokenEvent, parsed keys included for a chat; wire.EventQueued
	// with a wire.QueuedEvent); an error stops the generation.
	Event func(name string, data any) error
}

func (s *Handlers) callFor(who Caller, session string) (*call, error) {
	if session != "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "sessions belong to msgpack connections; this caller has none")
	}
	return &call{s: s, peer: who.Peer, client: who.Client,
		sink: func(_ uint64, name string, data any) error { return who.Event(name, data) }}, nil
}

// Chat runs a chat request exactly as the chat op does (validation,
// admission, scheduling, generation). a.Session must be empty: HTTP callers
// have no sessions.
func (s *Handlers) Chat(ctx context.Context, who Caller, a wire.ChatArgs) (*wire.GenerationResult, error) {
	c, err := s.callFor(who, a.Session)
	if err != nil {
		return nil, err
	}
	return c.chat(ctx, wire.Request{ID: who.ID, Op: wire.OpChat}, a)
}

// Generate runs a raw completion exactly as the generate op does.
func (s *Handlers) Generate(ctx context.Context, who Caller, a wire.GenerateArgs) (*wire.GenerationResult, error) {
	c, err := s.callFor(who, a.Session)
	if err != nil {
		return nil, err
	}
	return c.gen(ctx, wire.Request{ID: who.ID, Op: wire.OpGenerate}, a)
}

// Models is the models op's result.
func (s *Handlers) Models() wire.ModelsResult {
	m := s.Backend().Model()
	state, _, _ := s.CurrentState()
	info := wire.ModelInfo{Model: m.Bundle.Model, Repo: m.Bundle.Repo, Revision: m.Bundle.Revision, State: state, ContextEntries: []uint64{}}
	for _, e := range m.ContextEntries {
		info.ContextEntries = append(info.ContextEntries, uint64(e))
	}
	return wire.ModelsResult{Models: []wire.ModelInfo{info}}
}
