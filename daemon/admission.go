package daemon

import (
	"context"
	"slices"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/residency"
)

// EventQueued and QueuedEvent live in wire; these names keep callers unchanged.
const EventQueued = wire.EventQueued

// QueuedEvent is wire.QueuedEvent.
type QueuedEvent = wire.QueuedEvent

// occupancy is what is in memory now, for admission: the model, the
// drafter, the context entries of idle sessions holding state and of
// admitted requests (except the session asking, re-counted at its entry).
func (s *Server) occupancy(r *Residency, except string) residency.Occupancy {
	o := residency.Occupancy{Models: 1}
	r.mu.Lock()
	o.Drafter = r.drafter
	r.mu.Unlock()
	s.sessions.forEach(func(_ *sessionOwner, sess *session) {
		if sess.context > 0 && !sess.busy && sess.id != except { // a busy one is counted by its generation
			o.Sessions = append(o.Sessions, sess.context)
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
func (c *conn) admit(ctx context.Context, id uint64, g *generation, prompt, maxTokens int, drafter, noWait bool) error {
	s := c.s
	s.mu.Lock()
	r := s.res
	s.mu.Unlock()
	f := s.footprint()
	if r == nil || f == nil || r.opts.Budget <= 0 {
		return nil
	}
	ticket := new(int)
	defer r.leaveQueue(ticket)
	for {
		changed := r.memoryChanged()
		d, err := f.Decide(r.opts.Budget, s.occupancy(r, g.session), residency.Request{Prompt: prompt, MaxTokens: maxTokens, Drafter: drafter})
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
		pos := r.queuePosition(ticket)
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
func (s *Server) parkLeastRecent(except string) bool {
	if _, ok := s.Backend().(SessionParker); !ok {
		return false
	}
	var o *sessionOwner
	var id string
	var last time.Time
	s.sessions.forEach(func(oo *sessionOwner, sess *session) {
		if sess.context > 0 && !sess.busy && sess.id != except && (o == nil || sess.lastUsed.Before(last)) {
			o, id, last = oo, sess.id, sess.lastUsed
		}
	})
	if o == nil || !o.freeState(id, s.Backend(), s.log) {
		return false
	}
	s.log.Info("parked an idle session to admit a request", "session", id)
	s.memoryFreed()
	return true
}

// memoryChanged is closed the next time memory may have been freed.
func (r *Residency) memoryChanged() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.freed == nil {
		r.freed = make(chan struct{})
	}
	return r.freed
}

// memoryFreed wakes requests waiting for memory.
func (r *Residency) memoryFreed() {
	r.mu.Lock()
	if r.freed != nil {
		close(r.freed)
		r.freed = nil
	}
	r.mu.Unlock()
}

func (r *Residency) queuePosition(t *int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.waiting, t)
	if i < 0 {
		r.waiting = append(r.waiting, t)
		i = len(r.waiting) - 1
	}
	return i + 1
}

func (r *Residency) leaveQueue(t *int) {
	r.mu.Lock()
	r.waiting = slices.DeleteFunc(r.waiting, func(w *int) bool { return w == t })
	r.mu.Unlock()
}
