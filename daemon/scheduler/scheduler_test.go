package scheduler

import (
	"context"
	"errors"
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
	caller string
	class  int
}) []int {
	return grantOrderWatched(t, s, reqs, nil, nil)
}

// grantOrderWatched is grantOrder that tells place(i, position) each
// place request i is told while it waits, and calls queuedAll (if not nil)
// once all are queued, before the slot is released.
func grantOrderWatched(t *testing.T, s *Scheduler, reqs []struct {
	caller string
	class  int
}, place func(i, position int), queuedAll func()) []int {
	t.Helper()
	hold, err := s.Acquire(context.Background(), "holder", Interactive)
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
			rel, err := s.AcquireQueued(context.Background(), r.caller, r.class, queued)
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			rel()
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
		caller string
		class  int
	}
	s := NewScheduler(1, 100, 10)
	got := grantOrder(t, s, []r{
		{"a", Background}, {"a", Interactive}, {"a", Interactive}, {"a", Interactive},
		{"b", Interactive}, {"c", Interactive}, {"b", Interactive},
	})
	// Interactive first; within it a, b, c take turns (a's three in FIFO
	// order); background last.
	want := []int{1, 4, 5, 2, 6, 3, 0}
	if !equalInts(got, want) {
		t.Fatalf("grant order %v, want %v", got, want)
	}
}

func TestSchedulerBusyAndCancel(t *testing.T) {
	s := NewScheduler(1, 2, 2)
	hold, _ := s.Acquire(context.Background(), "x", Interactive)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { _, err := s.Acquire(ctx, "a", Interactive); errs <- err }()
	go func() { _, err := s.Acquire(ctx, "b", Interactive); errs <- err }()
	for q, _, _ := s.Counts(); q != 2; q, _, _ = s.Counts() {
		time.Sleep(time.Millisecond)
	}
	_, err := s.Acquire(context.Background(), "c", Interactive)
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeBusy || !strings.Contains(we.Message, "queue is full") {
		t.Fatalf("full queue: %v", err)
	}
	// Per-caller cap: x holds one slot; with cap 2 one more is allowed, not two.
	capped := NewScheduler(1, 10, 1)
	h2, _ := capped.Acquire(context.Background(), "x", Interactive)
	if _, err := capped.Acquire(context.Background(), "x", Interactive); !errors.As(err, &we) || !strings.Contains(we.Message, "per-caller") {
		t.Fatalf("per-caller cap: %v", err)
	}
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

// A waiting request is told its place, and told again as the queue moves:
// once all are queued, the places reported are exactly the grant order
// (interactive first, callers in turn, a caller's own in FIFO order).
func TestSchedulerReportsQueuePositions(t *testing.T) {
	reqs := []struct {
		caller string
		class  int
	}{
		{"a", Background}, {"a", Interactive}, {"a", Interactive}, {"a", Interactive},
		{"b", Interactive}, {"c", Interactive}, {"b", Interactive},
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
	if got := grantOrderWatched(t, NewScheduler(1, 100, 10), reqs, place, allQueued); !equalInts(got, []int{1, 4, 5, 2, 6, 3, 0}) {
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
