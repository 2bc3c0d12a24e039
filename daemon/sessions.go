package daemon

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forgedaemon/forged/client/wire"
)

// session is a conversation whose engine state carries over between turns.
type session struct {
	id       string
	busy     bool
	history  []wire.Message
	tokens   int  // tokens in the engine state after the last turn
	context  int  // context entry of the last turn; 0 when the backend holds no state for it in memory
	parked   bool // the backend parked the state out of memory (tokens kept; the next turn resumes it)
	lastUsed time.Time
}

// sessionTable is every open session, grouped by the connection that
// opened it (a session is visible only on its own connection). Residency,
// admission and status walk it; none of them walks connections.
type sessionTable struct {
	mu     sync.Mutex
	owners map[*sessionOwner]struct{}
	seq    atomic.Uint64
}

// sessionOwner is one connection's sessions; its lock guards them.
type sessionOwner struct {
	uid    uint32
	mu     sync.Mutex
	client string
	m      map[string]*session
}

func newSessionTable() *sessionTable { return &sessionTable{owners: map[*sessionOwner]struct{}{}} }

// join adds the sessions of a new connection of uid.
func (t *sessionTable) join(uid uint32) *sessionOwner {
	o := &sessionOwner{uid: uid, m: map[string]*session{}}
	t.mu.Lock()
	t.owners[o] = struct{}{}
	t.mu.Unlock()
	return o
}

// leave forgets a closed connection's sessions and returns their ids (the
// caller frees their engine state).
func (t *sessionTable) leave(o *sessionOwner) []string {
	o.mu.Lock()
	ids := make([]string, 0, len(o.m))
	for id := range o.m {
		ids = append(ids, id)
	}
	o.m = map[string]*session{}
	o.mu.Unlock()
	t.mu.Lock()
	delete(t.owners, o)
	t.mu.Unlock()
	return ids
}

// forEach calls f for every open session, under its owner's lock.
func (t *sessionTable) forEach(f func(o *sessionOwner, sess *session)) {
	t.mu.Lock()
	owners := make([]*sessionOwner, 0, len(t.owners))
	for o := range t.owners {
		owners = append(owners, o)
	}
	t.mu.Unlock()
	for _, o := range owners {
		o.mu.Lock()
		for _, sess := range o.m {
			f(o, sess)
		}
		o.mu.Unlock()
	}
}

// infos describes every open session, for status and the memory estimate.
func (t *sessionTable) infos() []wire.SessionInfo {
	out := []wire.SessionInfo{}
	t.forEach(func(o *sessionOwner, s *session) {
		out = append(out, wire.SessionInfo{Session: s.id, UID: o.uid, Client: o.client, Tokens: uint64(s.tokens), Context: uint64(s.context), Parked: s.parked})
	})
	return out
}

// setClient records the connection's hello name.
func (o *sessionOwner) setClient(name string) {
	o.mu.Lock()
	o.client = name
	o.mu.Unlock()
}

// open opens a new session and returns its id.
func (t *sessionTable) open(o *sessionOwner) string {
	id := fmt.Sprintf("s%d", t.seq.Add(1))
	o.mu.Lock()
	o.m[id] = &session{id: id}
	o.mu.Unlock()
	return id
}

// close closes one of o's idle sessions.
func (o *sessionOwner) close(id string) error {
	o.mu.Lock()
	sess, ok := o.m[id]
	if ok && sess.busy {
		o.mu.Unlock()
		return wire.Errorf(wire.CodeBusy, "session %q is generating; cancel that request first", id)
	}
	delete(o.m, id)
	o.mu.Unlock()
	if !ok {
		return wire.Errorf(wire.CodeNotFound, "session %q is not open on this connection", id)
	}
	return nil
}

// claim marks a session busy for one request; release undoes it.
func (o *sessionOwner) claim(id string) (*session, func(), error) {
	if id == "" {
		return nil, func() {}, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.m[id]
	if !ok {
		return nil, nil, wire.Errorf(wire.CodeNotFound, "session %q is not open on this connection", id)
	}
	if s.busy {
		return nil, nil, wire.Errorf(wire.CodeBusy, "session %q is already generating", id)
	}
	s.busy = true
	return s, func() { o.mu.Lock(); s.busy = false; o.mu.Unlock() }, nil
}

// update runs f under the owner's lock (f edits a claimed session).
func (o *sessionOwner) update(f func()) {
	o.mu.Lock()
	f()
	o.mu.Unlock()
}

// freeState frees an idle session's engine memory: parked when the
// backend can park (its next turn resumes without prefilling), else
// dropped (its next turn prefills the conversation again). False if the
// session is busy, gone or holds nothing in memory. The owner's lock is
// held while parking, so no request can claim the session meanwhile.
func (o *sessionOwner) freeState(id string, backend Backend, log *slog.Logger) bool {
	o.mu.Lock()
	sess, ok := o.m[id]
	if !ok || sess.busy || sess.context == 0 {
		o.mu.Unlock()
		return false
	}
	if p, ok := backend.(SessionParker); ok {
		parked, err := p.ParkSession(id)
		if err != nil {
			log.Warn("parking a session failed; dropping its state", "session", id, "err", err)
		}
		if parked && err == nil {
			sess.context, sess.parked = 0, true
			o.mu.Unlock()
			return true
		}
	}
	sess.tokens, sess.context, sess.parked = 0, 0, false
	o.mu.Unlock()
	backend.CloseSession(id)
	return true
}
