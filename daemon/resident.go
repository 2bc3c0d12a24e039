package daemon

import (
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/state"
)

// Residency and its options live in daemon/state; these names keep
// callers unchanged.
type (
	Residency        = state.Residency
	ResidencyOptions = state.ResidencyOptions
)

// Wire states the residency machine adds to protocol 1's list (docs/PROTOCOL.md
// §5), kept here for existing callers; they live in wire.
const (
	StateUnloaded  = wire.StateUnloaded
	StateUnloading = wire.StateUnloading
)

// EventQueued and QueuedEvent live in wire; these names keep callers unchanged.
const EventQueued = wire.EventQueued

// QueuedEvent is wire.QueuedEvent.
type QueuedEvent = wire.QueuedEvent

// EnableResidency puts the server's model under residency control. The
// model starts unloaded (state "unloaded"); call Load to preload it.
func (s *Server) EnableResidency(opts ResidencyOptions) *Residency {
	r := state.NewResidency(state.Host{
		Log: s.log, Backend: s.Backend, SetBackend: s.SetBackend, SetState: s.SetState,
		State:    func() string { st, _, _ := s.currentState(); return st },
		Sessions: s.sessions,
	}, opts)
	s.mu.Lock()
	s.res = r
	s.mu.Unlock()
	return r
}
