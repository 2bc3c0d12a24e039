package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client/wire"
)

// grantOrder queues requests behind one held slot and records the order in
// which they are granted as the slot is passed along.
func grantOrder(t *testing.T, s *Scheduler, reqs []struct {
	caller Caller
	class  int
}) []int {
	return grantOrderWatched(t, s, reqs, nil, nil)
}

// grantOrderWatched is grantOrder that tells place(i, position) each
// place request i is told while it waits, and calls queuedAll (if not nil)
// once all are queued, before the slot is released.
func grantOrderWatched(t *testing.T, s *Scheduler, reqs []struct {
	caller Caller
	class  int
}, place func(i, position int), queuedAll func()) []int {
	t.Helper()
	hold, err := s.Acquire(context.Background(), Caller{9, "holder"}, Interactive)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, len(reqs))
	for i, r := range reqs {
		go func() {
			var queued func(int)
			if place != nil {
				queued = func(pos int) { place(i, pos) }
			}
			tk, err := s.Reserve(r.caller, r.class)
			if err == nil {
				if err = tk.WaitQueued(context.Background(), queued); err != nil {
					tk.Release()
				}
			}
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			tk.Release()
		}()
		// Wait until it is queued so the queue order is the slice order.
		for q, _, _ := s.Counts(); q != i+1; q, _, _ = s.Counts() {
			time.Sleep(time.Millisecond)
		}
	}
	if queuedAll != nil {
		queuedAll()
	}
	hold()
	var got []int
	for range reqs {
		got = append(got, <-order)
	}
	return got
}

func TestSchedulerPriorityFIFOAndRoundRobin(t *testing.T) {
	type r = struct {
		caller Caller
		class  int
	}
	s := NewScheduler(Limits{Slots: 1, MaxQueue: 100, PerCaller: 10, PerUID: 100})
	a, b, c := Caller{1, "a"}, Caller{1, "b"}, Caller{1, "c"}
	got := grantOrder(t, s, []r{
		{a, Background}, {a, Interactive}, {a, Interactive}, {a, Interactive},
		{b, Interactive}, {c, Interactive}, {b, Interactive},
	})
	// Interactive first; within it a, b, c take turns (a's three in FIFO
	// order); background last.
	want := []int{1, 4, 5, 2, 6, 3, 0}
	if !equalInts(got, want) {
		t.Fatalf("grant order %v, want %v", got, want)
	}
}

// A waiting request is told its place, and told again as the queue moves:
// once all are queued, the places reported are exactly the grant order
// (interactive first, callers in turn, a caller's own in FIFO order).
func TestSchedulerReportsQueuePositions(t *testing.T) {
	a, b, c := Caller{1, "a"}, Caller{1, "b"}, Caller{1, "c"}
	reqs := []struct {
		caller Caller
		class  int
	}{
		{a, Background}, {a, Interactive}, {a, Interactive}, {a, Interactive},
		{b, Interactive}, {c, Interactive}, {b, Interactive},
	}
	var mu sync.Mutex
	last := make([]int, len(reqs))
	seen := make([][]int, len(reqs))
	place := func(i, pos int) {
		mu.Lock()
		last[i] = pos
		seen[i] = append(seen[i], pos)
		mu.Unlock()
	}
	want := []int{7, 1, 4, 6, 2, 3, 5} // the grant order [1 4 5 2 6 3 0] as places
	allQueued := func() {
		for {
			mu.Lock()
			got := append([]int(nil), last...)
			mu.Unlock()
			if equalInts(got, want) {
				return
			}
			if slices.Contains(got, 0) || !isPermutation(got) {
				time.Sleep(time.Millisecond) // a waiter has not looked at its place yet
				continue
			}
			t.Fatalf("places %v, want %v", got, want)
		}
	}
	s := NewScheduler(Limits{Slots: 1, MaxQueue: 100, PerCaller: 10, PerUID: 100})
	if got := grantOrderWatched(t, s, reqs, place, allQueued); !equalInts(got, []int{1, 4, 5, 2, 6, 3, 0}) {
		t.Fatalf("grant order %v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, ps := range seen {
		for j := 1; j < len(ps); j++ {
			if ps[j] == ps[j-1] {
				t.Errorf("request %d was told place %d twice in a row: %v", i, ps[j], ps)
			}
		}
	}
}

func isPermutation(p []int) bool {
	seen := map[int]bool{}
	for _, v := range p {
		if v < 1 || v > len(p) || seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

func TestSchedulerBusyAndCancel(t *testing.T) {
	s := NewScheduler(Limits{Slots: 1, MaxQueue: 2, PerCaller: 2, PerUID: 10})
	hold, _ := s.Acquire(context.Background(), Caller{1, "x"}, Interactive)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { _, err := s.Acquire(ctx, Caller{1, "a"}, Interactive); errs <- err }()
	go func() { _, err := s.Acquire(ctx, Caller{1, "b"}, Interactive); errs <- err }()
	for q, _, _ := s.Counts(); q != 2; q, _, _ = s.Counts() {
		time.Sleep(time.Millisecond)
	}
	_, err := s.Acquire(context.Background(), Caller{1, "c"}, Interactive)
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeBusy || !strings.Contains(we.Message, "queue is full") {
		t.Fatalf("full queue: %v", err)
	}
	// Per-caller cap: x holds one slot; with cap 2 one more is allowed, not two.
	capped := NewScheduler(Limits{Slots: 1, MaxQueue: 10, PerCaller: 1, PerUID: 2})
	h2, _ := capped.Acquire(context.Background(), Caller{1, "x"}, Interactive)
	if _, err := capped.Acquire(context.Background(), Caller{1, "x"}, Interactive); !errors.As(err, &we) || !strings.Contains(we.Message, "per-caller") {
		t.Fatalf("per-caller cap: %v", err)
	}
	// Per-uid cap: a second app of uid 1 may queue, a third may not.
	t2, err := capped.Reserve(Caller{1, "y"}, Interactive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := capped.Reserve(Caller{1, "z"}, Interactive); !errors.As(err, &we) || !strings.Contains(we.Message, "per-uid") {
		t.Fatalf("per-uid cap: %v", err)
	}
	if _, err := capped.Reserve(Caller{2, "z"}, Interactive); err != nil {
		t.Fatalf("another uid is not bound by uid 1's cap: %v", err)
	}
	t2.Release()
	h2()
	cancel()
	for range 2 {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter: %v", err)
		}
	}
	if q, running, _ := s.Counts(); q != 0 || running != 1 {
		t.Fatalf("after cancel: queued %d running %d", q, running)
	}
	hold()
	if _, running, _ := s.Counts(); running != 0 {
		t.Fatalf("slot not returned: running %d", running)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// waitingTickets counts tickets in the rings (waiting for a slot).
func (s *Scheduler) waitingTickets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i := range s.classes {
		for _, apps := range s.classes[i].items {
			for _, q := range apps.items {
				n += len(q)
			}
		}
	}
	return n
}

// 100 app names from one uid cannot take the queue from another uid's app:
// the other uid's requests displace the first uid's newest (answered busy)
// and are granted every other slot. Before, the queue was one global pool
// keyed by uid + name, so the second uid got busy.
func TestSchedulerSharesPerUIDThenApp(t *testing.T) {
	s := NewScheduler(Limits{Slots: 1, MaxQueue: 64, PerCaller: 4, PerUID: 1000})
	hold, err := s.Acquire(context.Background(), Caller{0, "holder"}, Interactive)
	if err != nil {
		t.Fatal(err)
	}
	var greedy []*Ticket
	busy := 0
	for i := range 100 {
		tk, err := s.Reserve(Caller{1501, fmt.Sprintf("app%d", i)}, Interactive)
		if err != nil {
			busy++
			continue
		}
		greedy = append(greedy, tk)
	}
	if len(greedy) != 64 || busy != 36 {
		t.Fatalf("uid 1501 reserved %d (busy %d), want the whole queue of 64", len(greedy), busy)
	}
	var other []*Ticket
	for i := range 10 {
		tk, err := s.Reserve(Caller{1502, "editor"}, Interactive)
		if i >= 4 { // past the per-caller limit of 4
			if err == nil {
				t.Fatal("per-caller limit not applied to uid 1502")
			}
			continue
		}
		if err != nil {
			t.Fatalf("uid 1502's request %d refused while uid 1501 holds the whole queue: %v", i, err)
		}
		other = append(other, tk)
	}
	grants := make(chan Caller, 100)
	errs := make(chan error, 100)
	var wg sync.WaitGroup
	for _, tk := range append(greedy, other...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer tk.Release()
			if err := tk.Wait(context.Background()); err != nil {
				errs <- err
				return
			}
			grants <- tk.caller
		}()
	}
	for s.waitingTickets()+len(errs) < len(greedy)+len(other) {
		time.Sleep(time.Millisecond)
	}
	if len(errs) != 4 {
		t.Fatalf("%d of uid 1501's requests were displaced, want 4 (one per uid 1502 request)", len(errs))
	}
	for range 4 {
		var we *wire.Error
		if err := <-errs; !errors.As(err, &we) || we.Code != wire.CodeBusy {
			t.Fatalf("a displaced request: %v, want busy", err)
		}
	}
	hold()
	wg.Wait()
	close(grants)
	var order []uint32
	for c := range grants {
		order = append(order, c.UID)
	}
	// Round robin across uids: uid 1502's 4 requests are among the first 8 grants.
	n := 0
	for _, u := range order[:8] {
		if u == 1502 {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("uid 1502 got %d of the first 8 slots, want 4 (grant order %v)", n, order[:8])
	}
}

// Within one uid the same share holds between its app names.
func TestSchedulerSharesPerAppWithinUID(t *testing.T) {
	s := NewScheduler(Limits{Slots: 1, MaxQueue: 4, PerCaller: 10, PerUID: 10})
	hold, _ := s.Acquire(context.Background(), Caller{0, "holder"}, Interactive)
	defer hold()
	var a []*Ticket
	for range 4 {
		tk, err := s.Reserve(Caller{7, "a"}, Interactive)
		if err != nil {
			t.Fatal(err)
		}
		a = append(a, tk)
	}
	b, err := s.Reserve(Caller{7, "b"}, Interactive)
	if err != nil {
		t.Fatalf("app b of uid 7 refused while app a holds the whole queue: %v", err)
	}
	if err := a[3].Wait(context.Background()); err == nil {
		t.Fatal("app a's newest request was not displaced")
	}
	b2, err := s.Reserve(Caller{7, "b"}, Interactive) // 1 against 3: b takes a second place
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(Caller{7, "b"}, Interactive); err == nil {
		t.Fatal("app b displaced again at 2 queued against app a's 2 (the share)")
	}
	if q, _, _ := s.Counts(); q != 4 {
		t.Fatalf("queued %d, want 4", q)
	}
	for _, tk := range append(a, b, b2) {
		tk.Release()
	}
	if q, _, _ := s.Counts(); q != 0 {
		t.Fatalf("queued %d after releasing all, want 0", q)
	}
}

// The gate lets one preparation per uid run at a time; another uid does
// not wait, and a cancelled waiter leaves.
func TestGateOnePerUID(t *testing.T) {
	var g Gate
	leave, err := g.Enter(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	other, err := g.Enter(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	other()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Enter(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second preparation of uid 1 entered while the first runs: %v", err)
	}
	entered := make(chan func())
	go func() {
		l, _ := g.Enter(context.Background(), 1)
		entered <- l
	}()
	leave()
	(<-entered)()
	g.mu.Lock()
	n := len(g.uid)
	g.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d gate entries left after everyone left", n)
	}
}

// A running request yields its slot between steps to another caller's
// waiting request and gets it back after; with only its own caller
// waiting, Yield keeps the slot; a request cancelled while yielded
// releases cleanly.
func TestSchedulerYield(t *testing.T) {
	s := NewScheduler(Limits{Slots: 1, MaxQueue: 8, PerCaller: 4, PerUID: 8})
	bg := context.Background()
	long, err := s.Reserve(Caller{1501, "flood"}, Interactive)
	if err != nil || long.Wait(bg) != nil {
		t.Fatal(err)
	}
	same, _ := s.Reserve(Caller{1501, "flood"}, Interactive)
	go same.Wait(bg)
	for s.waitingTickets() != 1 {
		time.Sleep(time.Millisecond)
	}
	if err := long.Yield(bg); err != nil {
		t.Fatal(err)
	}
	if long.state != running {
		t.Fatal("yielded to a request of its own caller (FIFO per caller is kept)")
	}
	same.Release()

	other, _ := s.Reserve(Caller{1502, "editor"}, Interactive)
	got := make(chan struct{})
	go func() { other.Wait(bg); close(got) }()
	for s.waitingTickets() != 1 {
		time.Sleep(time.Millisecond)
	}
	back := make(chan error)
	go func() { back <- long.Yield(bg) }()
	<-got // the other uid runs now
	if _, n, _ := s.Counts(); n != 1 {
		t.Fatalf("running %d while one yielded, want 1", n)
	}
	other.Release()
	if err := <-back; err != nil {
		t.Fatal(err)
	}
	if _, n, _ := s.Counts(); n != 1 || long.state != running {
		t.Fatalf("the yielded request did not get its slot back (running %d)", n)
	}

	// Cancelled while yielded.
	third, _ := s.Reserve(Caller{1502, "editor"}, Interactive)
	go third.Wait(bg)
	for s.waitingTickets() != 1 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := long.Yield(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled yield: %v", err)
	}
	long.Release()
	third.Release()
	if q, n, _ := s.Counts(); q != 0 || n != 0 || s.waitingTickets() != 0 {
		t.Fatalf("after all released: queued %d running %d waiting %d", q, n, s.waitingTickets())
	}
}

// A uid arriving while another uid's requests take turns step by step is
// granted the next step, ahead of that backlog (not after a full round of
// it): its first token waits for one step, whatever the backlog.
func TestSchedulerArrivalGoesFirst(t *testing.T) {
	s := NewScheduler(Limits{Slots: 1, MaxQueue: 16, PerCaller: 4, PerUID: 16})
	bg := context.Background()
	a, _ := s.Reserve(Caller{1501, "a"}, Interactive)
	a.Wait(bg)
	var flood []*Ticket
	for _, app := range []string{"b", "c", "d"} {
		tk, _ := s.Reserve(Caller{1501, app}, Interactive)
		flood = append(flood, tk)
		go tk.Wait(bg)
	}
	for s.waitingTickets() != 3 {
		time.Sleep(time.Millisecond)
	}
	go a.Yield(bg) // a step of the backlog
	for s.waitingTickets() != 3 {
		time.Sleep(time.Millisecond)
	}
	v, _ := s.Reserve(Caller{1502, "editor"}, Interactive)
	granted := make(chan struct{})
	go func() { v.Wait(bg); close(granted) }()
	for s.waitingTickets() != 4 {
		time.Sleep(time.Millisecond)
	}
	// Whoever runs now yields at its next step: the slot goes to uid 1502.
	var runner *Ticket
	s.mu.Lock()
	for _, tk := range append(flood, a) {
		if tk.state == running {
			runner = tk
		}
	}
	s.mu.Unlock()
	go runner.Yield(bg)
	for {
		s.mu.Lock()
		var now *Ticket
		for _, tk := range append(flood, a, v) {
			if tk.state == running {
				now = tk
			}
		}
		s.mu.Unlock()
		if now != nil && now != runner {
			if now != v {
				t.Fatalf("the step went to the backlog (%s), not to the arriving uid 1502", now.caller)
			}
			break
		}
		time.Sleep(time.Millisecond)
	}
	<-granted
}
