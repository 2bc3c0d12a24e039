package ops

import (
	"context"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
	"github.com/forgedaemon/forged/daemon/residency"
	"github.com/forgedaemon/forged/daemon/state"
)

// occupancy is what is in memory now, for admission: the model, the
// drafter, the context entries of idle sessions holding state and of
// admitted requests (except the session asking, re-counted at its entry).
func (s *Handlers) occupancy(r *state.Residency, except string) residency.Occupancy {
	o := residency.Occupancy{Models: 1}
	o.Drafter = r.DrafterLoaded()
	s.sessions.ForEach(func(_ *state.Owner, sess *state.Session) {
		if sess.Context > 0 && !sess.Busy && sess.ID != except { // a busy one is counted by its generation
			o.Sessions = append(o.Sessions, sess.Context)
		}
	})
	s.mu.Lock()
	for g := range s.gens {
		if e := g.entry.Load(); e > 0 {
			o.Sessions = append(o.Sessions, int(e))
		}
	}
	s.mu.Unlock()
	return o
}

// admit waits until the request fits in the memory budget, sending queued
// events with its position; one that could never fit, or that asked not to
// wait (if_busy: busy), is busy at once.
func (c *call) admit(ctx context.Context, id uint64, g *generation, prompt, maxTokens int, drafter, noWait bool) error {
	s := c.s
	r := s.Residency()
	f := s.footprint()
	if r == nil || f == nil || r.Budget() <= 0 {
		return nil
	}
	ticket := new(int)
	defer r.LeaveQueue(ticket)
	for {
		changed := r.MemoryChanged()
		d, err := f.Decide(r.Budget(), s.occupancy(r, g.session), residency.Request{Prompt: prompt, MaxTokens: maxTokens, Drafter: drafter})
		if err != nil {
			return err
		}
		switch d.Verdict {
		case residency.Admit:
			g.entry.Store(int64(d.Entry))
			return nil
		case residency.Never:
			return wire.Errorf(wire.CodeBusy, "not enough memory: %s", d.Reason)
		}
		if s.parkLeastRecent(g.session) {
			continue // an idle session's state left memory: decide again
		}
		if noWait {
			return wire.Errorf(wire.CodeBusy, "not enough memory now (if_busy: busy, so not queued): %s", d.Reason)
		}
		pos := r.QueuePosition(ticket)
		if err := c.event(id, wire.EventQueued, wire.QueuedEvent{Reason: d.Reason, Position: uint64(pos)}); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// parkLeastRecent parks the least recently used idle session holding
// state in memory (other than except), when the backend can park: a
// request that would fit without it does not wait for it. False when the
// backend cannot park or no such session exists.
func (s *Handlers) parkLeastRecent(except string) bool {
	if _, ok := s.Backend().(backend.SessionParker); !ok {
		return false
	}
	var o *state.Owner
	var id string
	var last time.Time
	s.sessions.ForEach(func(oo *state.Owner, sess *state.Session) {
		if sess.Context > 0 && !sess.Busy && sess.ID != except && (o == nil || sess.LastUsed.Before(last)) {
			o, id, last = oo, sess.ID, sess.LastUsed
		}
	})
	if o == nil || !o.FreeState(id, s.Backend(), s.log) {
		return false
	}
	s.log.Info("parked an idle session to admit a request", "session", id)
	s.MemoryFreed()
	return true
}
