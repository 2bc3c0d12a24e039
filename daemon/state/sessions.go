package state

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
)

// Session is a conversation whose engine state carries over between turns.
// Its fields are read and written under its owner's lock (Update, ForEach).
type Session struct {
	ID       string
	Busy     bool
	History  []wire.Message
	Tokens   int  // tokens in the engine state after the last turn
	Context  int  // context entry of the last turn; 0 when the backend holds no state for it in memory
	Parked   bool // the backend parked the state out of memory (tokens kept; the next turn resumes it)
	LastUsed time.Time
}

// Sessions is every open session, grouped by the connection that
// opened it (a session is visible only on its own connection). Residency,
// admission and status walk it; none of them walks connections.
type Sessions struct {
	mu     sync.Mutex
	owners map[*Owner]struct{}
	seq    atomic.Uint64
}

// Owner is one connection's sessions; its lock guards them.
type Owner struct {
	uid    uint32
	mu     sync.Mutex
	client string
	m      map[string]*Session
}

func NewSessions() *Sessions { return &Sessions{owners: map[*Owner]struct{}{}} }

// join adds the sessions of a new connection of uid.
func (t *Sessions) Join(uid uint32) *Owner {
	o := &Owner{uid: uid, m: map[string]*Session{}}
	t.mu.Lock()
	t.owners[o] = struct{}{}
	t.mu.Unlock()
	return o
}

// leave forgets a closed connection's sessions and returns their ids (the
// caller frees their engine state).
func (t *Sessions) Leave(o *Owner) []string {
	o.mu.Lock()
	ids := make([]string, 0, len(o.m))
	for id := range o.m {
		ids = append(ids, id)
	}
	o.m = map[string]*Session{}
	o.mu.Unlock()
	t.mu.Lock()
	delete(t.owners, o)
	t.mu.Unlock()
	return ids
}

// forEach calls f for every open session, under its owner's lock.
func (t *Sessions) ForEach(f func(o *Owner, sess *Session)) {
	t.mu.Lock()
	owners := make([]*Owner, 0, len(t.owners))
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
func (t *Sessions) Infos() []wire.SessionInfo {
	out := []wire.SessionInfo{}
	t.ForEach(func(o *Owner, s *Session) {
		out = append(out, wire.SessionInfo{Session: s.ID, UID: o.uid, Client: o.client, Tokens: uint64(s.Tokens), Context: uint64(s.Context), Parked: s.Parked})
	})
	return out
}

// setClient records the connection's hello name.
func (o *Owner) SetClient(name string) {
	o.mu.Lock()
	o.client = name
	o.mu.Unlock()
}

// open opens a new session and returns its id.
func (t *Sessions) Open(o *Owner) string {
	id := fmt.Sprintf("s%d", t.seq.Add(1))
	o.mu.Lock()
	o.m[id] = &Session{ID: id}
	o.mu.Unlock()
	return id
}

// close closes one of o's idle sessions.
func (o *Owner) Close(id string) error {
	o.mu.Lock()
	sess, ok := o.m[id]
	if ok && sess.Busy {
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
func (o *Owner) Claim(id string) (*Session, func(), error) {
	if id == "" {
		return nil, func() {}, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.m[id]
	if !ok {
		return nil, nil, wire.Errorf(wire.CodeNotFound, "session %q is not open on this connection", id)
	}
	if s.Busy {
		return nil, nil, wire.Errorf(wire.CodeBusy, "session %q is already generating", id)
	}
	s.Busy = true
	return s, func() { o.mu.Lock(); s.Busy = false; o.mu.Unlock() }, nil
}

// update runs f under the owner's lock (f edits a claimed session).
func (o *Owner) Update(f func()) {
	o.mu.Lock()
	f()
	o.mu.Unlock()
}

// freeState frees an idle session's engine memory: parked when the
// backend can park (its next turn resumes without prefilling), else
// dropped (its next turn prefills the conversation again). False if the
// session is busy, gone or holds nothing in memory. The owner's lock is
// held while parking, so no request can claim the session meanwhile.
func (o *Owner) FreeState(id string, b backend.Backend, log *slog.Logger) bool {
	o.mu.Lock()
	sess, ok := o.m[id]
	if !ok || sess.Busy || sess.Context == 0 {
		o.mu.Unlock()
		return false
	}
	if p, ok := b.(backend.SessionParker); ok {
		parked, err := p.ParkSession(id)
		if err != nil {
			log.Warn("parking a session failed; dropping its state", "session", id, "err", err)
		}
		if parked && err == nil {
			sess.Context, sess.Parked = 0, true
			o.mu.Unlock()
			return true
		}
	}
	sess.Tokens, sess.Context, sess.Parked = 0, 0, false
	o.mu.Unlock()
	b.CloseSession(id)
	return true
}
