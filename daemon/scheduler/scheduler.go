// Package scheduler hands out the daemon's generation slots fairly:
// interactive before background, round robin across callers, FIFO per
// caller, bounded queues that refuse (busy) instead of growing.
package scheduler

import (
	"context"
	"sync"

	"github.com/forgedaemon/forged/client/wire"
)

// Priority classes, served strictly in this order.
const (
	Interactive = 0
	Background  = 1
	numClasses  = 2
)

// Scheduler hands out a fixed number of generation slots: interactive work
// before background work, round robin across callers within a class, and
// first-in first-out for one caller. It refuses work (busy) instead of
// queueing without bound.
type Scheduler struct {
	mu        sync.Mutex
	slots     int
	running   int
	maxQueue  int
	perCaller int
	queued    int
	inflight  map[string]int // queued + running, per caller
	classes   [numClasses]roundRobin
	moved     chan struct{} // closed (and replaced) when the queue moves
}

type ticket struct {
	caller  string
	granted chan struct{}
	done    bool // granted (under mu)
}

// roundRobin is one priority class: callers in turn, each with a FIFO.
type roundRobin struct {
	order  []string // callers with waiting tickets, in turn order
	next   int
	queues map[string][]*ticket
}

// NewScheduler builds a scheduler with slots concurrent runs, at most
// maxQueue waiting requests and perCaller queued-or-running per caller.
func NewScheduler(slots, maxQueue, perCaller int) *Scheduler {
	s := &Scheduler{slots: max(slots, 1), maxQueue: maxQueue, perCaller: max(perCaller, 1), inflight: map[string]int{}, moved: make(chan struct{})}
	for i := range s.classes {
		s.classes[i].queues = map[string][]*ticket{}
	}
	return s
}

// SetLimits changes the limits for requests from now on; requests already
// queued or running keep their place.
func (s *Scheduler) SetLimits(slots, maxQueue, perCaller int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots, s.maxQueue, s.perCaller = max(slots, 1), max(maxQueue, 1), max(perCaller, 1)
	s.grantLocked() // more slots may start waiting requests now
}

// Acquire waits for a slot for caller. It returns busy at once when the
// queue is full or the caller is at its cap, and ctx's error if ctx ends
// first. release must be called exactly once after a successful Acquire.
func (s *Scheduler) Acquire(ctx context.Context, caller string, class int) (release func(), err error) {
	return s.AcquireQueued(ctx, caller, class, nil)
}

// AcquireQueued is Acquire that, when the request has to wait, calls
// queued (if not nil) with its place in the queue (1: next to run) when it
// joins and each time the place changes. queued runs on the caller's
// goroutine, outside the scheduler's lock.
func (s *Scheduler) AcquireQueued(ctx context.Context, caller string, class int, queued func(position int)) (release func(), err error) {
	class = min(max(class, 0), numClasses-1)
	s.mu.Lock()
	if s.inflight[caller] >= s.perCaller {
		s.mu.Unlock()
		return nil, wire.Errorf(wire.CodeBusy, "caller %s already has %d requests queued or running (the per-caller limit)", caller, s.perCaller)
	}
	if s.running < s.slots && s.queued == 0 {
		s.running++
		s.inflight[caller]++
		s.mu.Unlock()
		return s.releaser(caller), nil
	}
	if s.queued >= s.maxQueue {
		s.mu.Unlock()
		return nil, wire.Errorf(wire.CodeBusy, "the queue is full (%d requests waiting)", s.queued)
	}
	t := &ticket{caller: caller, granted: make(chan struct{})}
	s.classes[class].push(t)
	s.queued++
	s.inflight[caller]++
	s.movedLocked()
	s.mu.Unlock()

	for shown := 0; ; {
		s.mu.Lock()
		moved, pos := s.moved, 0
		if !t.done {
			pos = s.positionLocked(t, class)
		}
		s.mu.Unlock()
		if queued != nil && pos > 0 && pos != shown {
			queued(pos)
			shown = pos
		}
		select {
		case <-t.granted:
			return s.releaser(caller), nil
		case <-moved:
			continue
		case <-ctx.Done():
		}
		s.mu.Lock()
		if t.done { // granted while we were giving up: hand the slot back
			s.mu.Unlock()
			s.releaser(caller)()
			return nil, context.Cause(ctx)
		}
		s.classes[class].remove(t)
		s.queued--
		s.dropInflight(caller)
		s.movedLocked()
		s.mu.Unlock()
		return nil, context.Cause(ctx)
	}
}

// movedLocked wakes the waiters to look at their places again.
func (s *Scheduler) movedLocked() {
	close(s.moved)
	s.moved = make(chan struct{})
}

func (s *Scheduler) releaser(caller string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.running--
			s.dropInflight(caller)
			s.grantLocked()
			s.mu.Unlock()
		})
	}
}

func (s *Scheduler) dropInflight(caller string) {
	if s.inflight[caller]--; s.inflight[caller] <= 0 {
		delete(s.inflight, caller)
	}
}

func (s *Scheduler) grantLocked() {
	for s.running < s.slots {
		var t *ticket
		for i := range s.classes {
			if t = s.classes[i].pop(); t != nil {
				break
			}
		}
		if t == nil {
			return
		}
		s.queued--
		s.running++
		t.done = true
		close(t.granted)
		s.movedLocked()
	}
}

// positionLocked is t's place in the order the queue would be granted in:
// every waiting ticket of a more urgent class, then its own class's round
// robin from the caller whose turn is next (one ticket per caller a turn).
func (s *Scheduler) positionLocked(t *ticket, class int) int {
	pos := 0
	for i := range class {
		for _, q := range s.classes[i].queues {
			pos += len(q)
		}
	}
	r := &s.classes[class]
	for depth := 0; ; depth++ {
		more := false
		for k := range r.order {
			q := r.queues[r.order[(r.next+k)%len(r.order)]]
			if depth >= len(q) {
				continue
			}
			more = true
			pos++
			if q[depth] == t {
				return pos
			}
		}
		if !more {
			return 0 // not waiting
		}
	}
}

// Counts reports queued and running requests.
func (s *Scheduler) Counts() (queued, running, slots int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queued, s.running, s.slots
}

func (r *roundRobin) push(t *ticket) {
	if len(r.queues[t.caller]) == 0 {
		// A caller joining the ring waits a full turn: insert it just
		// before the caller whose turn is next.
		r.order = append(r.order, "")
		copy(r.order[r.next+1:], r.order[r.next:])
		r.order[r.next] = t.caller
		r.next++
		if r.next >= len(r.order) {
			r.next = 0
		}
	}
	r.queues[t.caller] = append(r.queues[t.caller], t)
}

func (r *roundRobin) pop() *ticket {
	if len(r.order) == 0 {
		return nil
	}
	if r.next >= len(r.order) {
		r.next = 0
	}
	caller := r.order[r.next]
	q := r.queues[caller]
	t := q[0]
	q[0] = nil
	r.queues[caller] = q[1:]
	if len(q) == 1 {
		delete(r.queues, caller)
		r.order = append(r.order[:r.next], r.order[r.next+1:]...)
	} else {
		r.next++
	}
	return t
}

func (r *roundRobin) remove(t *ticket) {
	q := r.queues[t.caller]
	for i, x := range q {
		if x == t {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		r.queues[t.caller] = q
		return
	}
	delete(r.queues, t.caller)
	for i, c := range r.order {
		if c == t.caller {
			r.order = append(r.order[:i], r.order[i+1:]...)
			if i < r.next {
				r.next--
			}
			break
		}
	}
}
