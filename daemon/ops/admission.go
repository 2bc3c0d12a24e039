package ops

import (
	"context"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/residency"
	"github.com/forgedaemon/forged/daemon/scheduler"
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
		if s.freeLeastRecent(g.session) {
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

// freeLeastRecent frees the memory of the least recently used idle
// session holding state in memory (other than except), as the pressure
// ladder does (docs/RESIDENCY.md): parked where the backend can park (its
// next turn resumes), else dropped (its next turn prefills again). So idle
// sessions never keep a request out. False when no such session exists.
func (s *Handlers) freeLeastRecent(except string) bool {
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
	s.log.Info("freed an idle session's memory to admit a request", "session", id)
	s.MemoryFreed()
	return true
}

// check validates p's options and fills tokens and class. It is all cheap
// (no rendering, no tokenizing), so it runs before anything else; with the
// prompt at least one token, max_tokens alone can already exceed the
// largest context entry.
func (c *call) check(p *genParams) error {
	p.tokens = c.s.cfg.DefaultMaxTokens
	if p.maxTokens != nil {
		p.tokens = int(min(*p.maxTokens, 1<<30))
	}
	if p.tokens < 1 {
		return wire.Errorf(wire.CodeBadRequest, "%s: args.max_tokens must be at least 1", p.op)
	}
	p.class = scheduler.Interactive
	switch p.priority {
	case "", wire.PriorityInteractive:
	case wire.PriorityBackground:
		p.class = scheduler.Background
	default:
		return wire.Errorf(wire.CodeBadRequest, "%s: args.priority must be \"interactive\" or \"background\", got %q", p.op, p.priority)
	}
	switch p.ifBusy {
	case "", wire.IfBusyWait, wire.IfBusyFail:
	default:
		return wire.Errorf(wire.CodeBadRequest, "%s: args.if_busy must be \"wait\" or \"busy\", got %q", p.op, p.ifBusy)
	}
	for i, s := range p.stop {
		if s == "" {
			return wire.Errorf(wire.CodeBadRequest, "%s: args.stop[%d] is empty", p.op, i)
		}
	}
	_, err := contextEntry(p.op, c.s.footprint(), c.s.Backend().Model().ContextEntries, 1, p.tokens)
	return err
}

// admitFirst is what a generation does before any expensive work: the
// cheap checks, a place in the scheduler's queue (busy at once past the
// caller's, its uid's or the queue's share), the model in memory and the
// session claimed. done undoes all of it.
func (c *call) admitFirst(ctx context.Context, p *genParams) (context.Context, *state.Session, *scheduler.Ticket, func(), error) {
	if err := c.check(p); err != nil {
		return nil, nil, nil, nil, err
	}
	ticket, err := c.s.sched.Reserve(callerKey(c.peer, c.clientName()), p.class)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ctx, unuse, err := c.s.UseModel(ctx)
	if err != nil {
		ticket.Release()
		return nil, nil, nil, nil, err
	}
	sess, release, err := c.sessions.Claim(p.session)
	if err != nil {
		unuse()
		ticket.Release()
		return nil, nil, nil, nil, err
	}
	return ctx, sess, ticket, func() { release(); unuse(); ticket.Release() }, nil
}

// prepare runs the expensive preparation of a request (render, tokenize)
// in its uid's turn (scheduler.Gate): one uid's requests prepare one at a
// time, so their memory does not add up.
func (c *call) prepare(ctx context.Context, work func() ([]int, error)) ([]int, error) {
	leave, err := c.s.gate.Enter(ctx, c.peer.UID)
	if err != nil {
		return nil, err
	}
	defer leave()
	return work()
}
