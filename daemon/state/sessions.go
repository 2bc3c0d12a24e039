package state

import (
	"container/heap"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
	perUID map[uint32]int // open sessions per uid
	total  int
	lim    SessionLimits
	seq    atomic.Uint64
}

// SessionLimits cap the open sessions (each holds a conversation and,
// once run, engine state).
type SessionLimits struct {
	PerConnection int // 0: the default
	PerUID        int // 0: the default
}

// Default session caps (docs/OPERATIONS.md).
const (
	DefaultSessionsPerConnection = 64
	DefaultSessionsPerUID        = 256
)

func (l SessionLimits) withDefaults() SessionLimits {
	if l.PerConnection <= 0 {
		l.PerConnection = DefaultSessionsPerConnection
	}
	if l.PerUID <= 0 {
		l.PerUID = DefaultSessionsPerUID
	}
	return l
}

// Owner is one connection's sessions; its lock guards them.
type Owner struct {
	t      *Sessions
	uid    uint32
	mu     sync.Mutex
	client string
	m      map[string]*Session
}

// NewSessions is an empty table with the caps l.
func NewSessions(l SessionLimits) *Sessions {
	return &Sessions{owners: map[*Owner]struct{}{}, perUID: map[uint32]int{}, lim: l.withDefaults()}
}

// SetLimits changes the caps for sessions opened from now on.
func (t *Sessions) SetLimits(l SessionLimits) {
	t.mu.Lock()
	t.lim = l.withDefaults()
	t.mu.Unlock()
}

// Limits are the caps in force.
func (t *Sessions) Limits() SessionLimits {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lim
}

// Count is the number of open sessions, and those of uid.
func (t *Sessions) Count(uid uint32) (total, ofUID int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total, t.perUID[uid]
}

// join adds the sessions of a new connection of uid.
func (t *Sessions) Join(uid uint32) *Owner {
	o := &Owner{t: t, uid: uid, m: map[string]*Session{}}
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
	t.forget(o.uid, len(ids))
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

// StatusSessions is how many entries status lists at most (with the
// total beside them), so its reply stays far below the frame limit however
// many sessions are open.
const StatusSessions = 1024

// Infos describes at most limit open sessions, in id order, those of uid
// first (a caller always sees its own), and returns how many are open.
func (t *Sessions) Infos(uid uint32, limit int) (list []wire.SessionInfo, total int) {
	var own []wire.SessionInfo
	others := &byIDHeap{}
	t.ForEach(func(o *Owner, s *Session) {
		total++
		info := wire.SessionInfo{Session: s.ID, UID: o.uid, Client: o.client, Tokens: uint64(s.Tokens), Context: uint64(s.Context), Parked: s.Parked}
		if o.uid == uid {
			own = append(own, info)
			return
		}
		heap.Push(others, info)
		if others.Len() > limit {
			heap.Pop(others) // keep the limit smallest ids
		}
	})
	slices.SortFunc(own, compareInfos)
	rest := []wire.SessionInfo(*others)
	slices.SortFunc(rest, compareInfos)
	list = append(own, rest...)
	return list[:min(len(list), limit)], total
}

// CompareIDs orders "s2" before "s10" (ids are s + a counter).
func CompareIDs(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

func compareInfos(a, b wire.SessionInfo) int { return CompareIDs(a.Session, b.Session) }

// byIDHeap is a max-heap by session id (the largest is dropped first).
type byIDHeap []wire.SessionInfo

func (h byIDHeap) Len() int           { return len(h) }
func (h byIDHeap) Less(i, j int) bool { return CompareIDs(h[i].Session, h[j].Session) > 0 }
func (h byIDHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *byIDHeap) Push(x any)        { *h = append(*h, x.(wire.SessionInfo)) }
func (h *byIDHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// setClient records the connection's hello name.
func (o *Owner) SetClient(name string) {
	o.mu.Lock()
	o.client = name
	o.mu.Unlock()
}

// Open opens a new session and returns its id; busy past the caps per
// connection or per uid.
func (t *Sessions) Open(o *Owner) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(o.m) >= t.lim.PerConnection {
		return "", wire.Errorf(wire.CodeBusy, "this connection already has %d sessions open (the per-connection limit, limits.sessions_per_connection); close one first", len(o.m))
	}
	if t.perUID[o.uid] >= t.lim.PerUID {
		return "", wire.Errorf(wire.CodeBusy, "uid %d already has %d sessions open (the per-uid limit, limits.sessions_per_uid); close one first", o.uid, t.perUID[o.uid])
	}
	id := fmt.Sprintf("s%d", t.seq.Add(1))
	o.m[id] = &Session{ID: id, LastUsed: time.Now()}
	t.perUID[o.uid]++
	t.total++
	return id, nil
}

// forget drops n of uid's sessions from the counts (t.mu held).
func (t *Sessions) forget(uid uint32, n int) {
	t.total -= n
	if t.perUID[uid] -= n; t.perUID[uid] <= 0 {
		delete(t.perUID, uid)
	}
}

// close closes one of o's idle sessions.
func (o *Owner) Close(id string) error {
	o.mu.Lock()
	sess, ok := o.m[id]
	if ok && sess.Busy {
		o.mu.Unlock()
		return wire.Errorf(wire.CodeBusy, "session %q is generating; cancel that request first", id)
	}
	if ok {
		delete(o.m, id)
		o.t.mu.Lock()
		o.t.forget(o.uid, 1)
		o.t.mu.Unlock()
	}
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
