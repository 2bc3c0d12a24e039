package daemon

import (
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
	"github.com/forgedaemon/forged/daemon/residency"
	"github.com/forgedaemon/forged/daemon/state"
)

// Footprinter is backend.Footprinter.
type Footprinter = backend.Footprinter

// footprint is the served backend's memory model, or nil.
func (s *Server) footprint() *residency.Footprint { return state.FootprintOf(s.Backend()) }

// MemoryEstimate is the memory model's account of what the served model and
// its sessions hold (the backend's Memory is the measured account). ok is
// false when the backend has no memory model.
func (s *Server) MemoryEstimate() (m wire.Memory, ok bool) {
	f := s.footprint()
	if f == nil {
		return m, false
	}
	m.Weights = uint64(f.Model(false))
	s.sessions.ForEach(func(_ *state.Owner, si *state.Session) {
		if si.Context == 0 {
			return // opened but never run (or parked): the backend holds nothing in memory
		}
		m.KV += uint64(f.KVPerRow * int64(f.Rows(si.Context)))
		m.State += uint64(f.Recurrent)
		m.Scratch += uint64(f.SessionScratch)
	})
	m.Scratch += uint64(f.Scratch)
	m.Weights -= uint64(f.Scratch)
	m.Total = m.Weights + m.KV + m.State + m.Scratch
	return m, true
}
