// Package scheduler hands out the daemon's generation slots fairly:
// interactive before background; within a class round robin across uids
// first, then across the app names of one uid; FIFO per app; bounded
// queues that refuse (busy) instead of growing, shared per uid and then
// per app, so no uid can take the queue by using many names.
package scheduler

import (
	"context"
	"fmt"
	"sync"

	"github.com/forgedaemon/forged/client/wire"
)

// Priority classes, served strictly in this order.
const (
	Interactive = 0
	Background  = 1
	numClasses  = 2
)

// Caller is who asks: the kernel's uid, then the app name from hello
// (self-chosen, so fairness and shares are per uid first).
type Caller struct {
	UID uint32
	App string
}

func (c Caller) String() string { return fmt.Sprintf("%d/%s", c.UID, c.App) }

// Limits bound what callers may hold.
type Limits struct {
	Slots     int // generations running at once
	MaxQueue  int // requests reserved but not running, in total
	PerCaller int // queued-or-running per caller (uid + app)
	PerUID    int // queued-or-running per uid, over all its apps
}

func (l Limits) norm() Limits {
	return Limits{Slots: max(l.Slots, 1), MaxQueue: max(l.MaxQueue, 1), PerCaller: max(l.PerCaller, 1), PerUID: max(l.PerUID, 1)}
}

// Scheduler hands out a fixed number of generation slots. A request first
// reserves a place (Reserve: busy at once past a limit, before the daemon
// renders or tokenizes anything), then waits for a slot (Ticket.Wait).
//
// When the queue is full, a request from a uid holding fewer queued
// requests than the uid holding the most displaces that uid's newest
// queued request, which is answered busy; within one uid the same rule
// holds between its app names. So a uid always gets its share of the
// queue, whatever the others do.
type Scheduler struct {
	mu      sync.Mutex
	lim     Limits
	running int
	queued  int                  // reserved, not running (waiting or preparing)
	caller  map[Caller]int       // queued + running
	uid     map[uint32]int       // queued + running
	qUID    map[uint32]int       // queued
	pending map[Caller][]*Ticket // queued tickets per caller, oldest first
	classes [numClasses]uidRing
	moved   chan struct{} // closed (and replaced) when the rings change: waiters look at their places again
}

// Ticket is one reserved request.
type Ticket struct {
	s       *Scheduler
	caller  Caller
	class   int
	granted chan struct{}
	evicted chan struct{}
	state   int // under s.mu
	once    sync.Once
}

const (
	reserved = iota
	waiting  // in the ring
	running
	paused // running, gave its slot away (Yield) and is in the ring for it
	gone   // evicted, cancelled or released
)

// NewScheduler builds a scheduler with the limits l.
func NewScheduler(l Limits) *Scheduler {
	s := &Scheduler{lim: l.norm(), caller: map[Caller]int{}, uid: map[uint32]int{}, qUID: map[uint32]int{}, pending: map[Caller][]*Ticket{}, moved: make(chan struct{})}
	for i := range s.classes {
		s.classes[i] = uidRing{newRing[uint32, *appRing]()}
	}
	return s
}

// SetLimits changes the limits for requests from now on; requests already
// queued or running keep their place.
func (s *Scheduler) SetLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lim = l.norm()
	s.grantLocked() // more slots may start waiting requests now
	s.movedLocked()
}

// Acquire reserves and waits: Reserve then Wait. release must be called
// exactly once after a successful Acquire.
func (s *Scheduler) Acquire(ctx context.Context, c Caller, class int) (release func(), err error) {
	t, err := s.Reserve(c, class)
	if err != nil {
		return nil, err
	}
	if err := t.Wait(ctx); err != nil {
		t.Release()
		return nil, err
	}
	return t.Release, nil
}

// Reserve takes a queue place for c, or answers busy at once when c, its
// uid or the queue is at its limit (and no over-share request can be
// displaced). The ticket must be released exactly once.
func (s *Scheduler) Reserve(c Caller, class int) (*Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lim
	if s.caller[c] >= l.PerCaller {
		return nil, wire.Errorf(wire.CodeBusy, "caller %s already has %d requests queued or running (the per-caller limit)", c, l.PerCaller)
	}
	if s.uid[c.UID] >= l.PerUID {
		return nil, wire.Errorf(wire.CodeBusy, "uid %d already has %d requests queued or running (the per-uid limit)", c.UID, l.PerUID)
	}
	if s.queued >= l.MaxQueue && !s.displaceLocked(c) {
		return nil, wire.Errorf(wire.CodeBusy, "the queue is full (%d requests waiting, uid %d holds its share)", s.queued, c.UID)
	}
	t := &Ticket{s: s, caller: c, class: min(max(class, 0), numClasses-1), granted: make(chan struct{}), evicted: make(chan struct{})}
	s.queued++
	s.caller[c]++
	s.uid[c.UID]++
	s.qUID[c.UID]++
	s.pending[c] = append(s.pending[c], t)
	return t, nil
}

// displaceLocked makes room for c in a full queue by evicting the newest
// queued request of whoever holds more than c's side: the uid with the
// most queued requests, or (within c's own uid) its app with the most.
func (s *Scheduler) displaceLocked(c Caller) bool {
	var fat uint32
	most := -1
	for u, n := range s.qUID {
		if n > most || n == most && u < fat {
			fat, most = u, n
		}
	}
	if most < 0 {
		return false
	}
	var victimApp Caller
	if fat != c.UID {
		if s.qUID[c.UID]+1 >= most {
			return false
		}
		victimApp = s.fattestApp(fat)
	} else {
		victimApp = s.fattestApp(c.UID)
		if len(s.pending[c])+1 >= len(s.pending[victimApp]) {
			return false
		}
	}
	q := s.pending[victimApp]
	if len(q) == 0 {
		return false
	}
	t := q[len(q)-1]
	s.dequeueLocked(t)
	s.dropCounts(t.caller)
	t.state = gone
	close(t.evicted)
	s.movedLocked()
	return true
}

func (s *Scheduler) fattestApp(uid uint32) Caller {
	var best Caller
	most := -1
	for c, q := range s.pending {
		if c.UID == uid && (len(q) > most || len(q) == most && c.App < best.App) {
			best, most = c, len(q)
		}
	}
	return best
}

// Wait waits for a slot: busy if the ticket was displaced (before or while
// waiting), ctx's cause if ctx ends first.
func (t *Ticket) Wait(ctx context.Context) error { return t.WaitQueued(ctx, nil) }

// WaitQueued is Wait that, while the request waits, calls queued (if not
// nil) with its place in the order slots would be granted in (1: next),
// when it starts waiting and each time the place changes. queued runs on
// the caller's goroutine, outside the scheduler's lock.
func (t *Ticket) WaitQueued(ctx context.Context, queued func(position int)) error {
	s := t.s
	s.mu.Lock()
	switch t.state {
	case gone:
		s.mu.Unlock()
		return t.displaced()
	case reserved:
		if s.running < s.lim.Slots && s.classesEmpty() {
			s.startLocked(t)
			s.mu.Unlock()
			return nil
		}
		t.state = waiting
		s.classes[t.class].push(t, false)
		s.movedLocked()
	}
	for shown := 0; ; {
		granted := t.granted // Yield replaces it later, under mu
		var moved chan struct{}
		pos := 0
		if queued != nil {
			moved = s.moved
			if t.state == waiting {
				pos = s.positionLocked(t)
			}
		}
		s.mu.Unlock()
		if pos > 0 && pos != shown {
			queued(pos)
			shown = pos
		}
		select {
		case <-granted:
			return nil
		case <-t.evicted:
			return t.displaced()
		case <-moved:
			s.mu.Lock()
		case <-ctx.Done():
			return context.Cause(ctx) // Release hands back a slot granted meanwhile
		}
	}
}

// movedLocked wakes the waiters that watch their places.
func (s *Scheduler) movedLocked() {
	close(s.moved)
	s.moved = make(chan struct{})
}

// positionLocked is waiting t's place in the grant order among the
// requests that have not started: every waiting ticket in a more urgent
// class, then its own class's turns as grantLocked would take them (played
// on a copy of the ring). Paused tickets (running, sharing a slot by
// Yield) take turns too but are not counted, so a place does not move at
// every step of the running generations.
func (s *Scheduler) positionLocked(t *Ticket) int {
	pos := 0
	for i := range t.class {
		for _, apps := range s.classes[i].items {
			for _, q := range apps.items {
				for _, x := range q {
					if x.state == waiting {
						pos++
					}
				}
			}
		}
	}
	r := s.classes[t.class].clone()
	for x := r.pop(); x != nil; x = r.pop() {
		if x == t {
			return pos + 1
		}
		if x.state == waiting {
			pos++
		}
	}
	return 0
}

// Yield is called by a running request between two steps of its work:
// when a request of another caller of the same or a higher priority waits
// for a slot, the slot goes to it (round robin) and Yield waits for the
// slot to come back; otherwise it returns at once. So a long generation
// does not hold a slot while another uid's interactive request waits for
// its first token: slots are shared step by step, not request by request.
// The yielding request keeps its memory (it was admitted) and cannot be
// displaced. ctx's cause if ctx ends while waiting (Release still applies).
func (t *Ticket) Yield(ctx context.Context) error {
	s := t.s
	s.mu.Lock()
	if t.state != running || !s.othersWaitingLocked(t) {
		s.mu.Unlock()
		return nil
	}
	s.running--
	t.state = paused
	t.granted = make(chan struct{})
	granted := t.granted
	s.classes[t.class].push(t, true)
	s.grantLocked()
	s.movedLocked()
	s.mu.Unlock()
	select {
	case <-granted:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// othersWaitingLocked reports whether a caller other than t's waits in
// t's class or a higher one.
func (s *Scheduler) othersWaitingLocked(t *Ticket) bool {
	for i := 0; i <= t.class; i++ {
		for uid, apps := range s.classes[i].items {
			if uid != t.caller.UID || len(apps.order) > 1 {
				return true
			}
			if _, self := apps.items[t.caller.App]; !self {
				return true
			}
		}
	}
	return false
}

func (t *Ticket) displaced() error {
	return wire.Errorf(wire.CodeBusy, "the queue is full and uid %d's request gave its place to a caller holding less of the queue", t.caller.UID)
}

// Release frees the ticket's place or slot; once, any state.
func (t *Ticket) Release() {
	t.once.Do(func() {
		s := t.s
		s.mu.Lock()
		defer s.mu.Unlock()
		switch t.state {
		case gone:
			return
		case running:
			s.running--
		case paused:
			s.classes[t.class].remove(t)
		default:
			s.dequeueLocked(t)
		}
		t.state = gone
		s.dropCounts(t.caller)
		s.grantLocked()
		s.movedLocked()
	})
}

// dequeueLocked takes a queued ticket out of the queue (its counts stay).
func (s *Scheduler) dequeueLocked(t *Ticket) {
	if t.state == waiting {
		s.classes[t.class].remove(t)
	}
	s.queued--
	if s.qUID[t.caller.UID]--; s.qUID[t.caller.UID] <= 0 {
		delete(s.qUID, t.caller.UID)
	}
	q := s.pending[t.caller]
	for i, x := range q {
		if x == t {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(s.pending, t.caller)
	} else {
		s.pending[t.caller] = q
	}
}

func (s *Scheduler) dropCounts(c Caller) {
	if s.caller[c]--; s.caller[c] <= 0 {
		delete(s.caller, c)
	}
	if s.uid[c.UID]--; s.uid[c.UID] <= 0 {
		delete(s.uid, c.UID)
	}
}

func (s *Scheduler) startLocked(t *Ticket) {
	s.dequeueLocked(t)
	s.running++
	t.state = running
}

func (s *Scheduler) classesEmpty() bool {
	for i := range s.classes {
		if len(s.classes[i].order) > 0 {
			return false
		}
	}
	return true
}

func (s *Scheduler) grantLocked() {
	for s.running < s.lim.Slots {
		var t *Ticket
		for i := range s.classes {
			if t = s.classes[i].pop(); t != nil {
				break
			}
		}
		if t == nil {
			return
		}
		if t.state == paused {
			s.running++
			t.state = running
		} else {
			t.state = reserved // so dequeueLocked does not look for it in the ring
			s.startLocked(t)
		}
		close(t.granted)
	}
}

// Counts reports queued and running requests.
func (s *Scheduler) Counts() (queued, running, slots int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queued, s.running, s.lim.Slots
}
