package residency

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMachineWalksTheLifecycleAndTellsListeners(t *testing.T) {
	at := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	m := NewMachine("org/forge", Absent, func() time.Time { return at })
	var seen []Transition
	m.OnTransition(func(tr Transition) { seen = append(seen, tr) })
	path := []State{Downloading, Verifying, Ready, Loading, Resident, Unloading, Ready}
	for _, s := range path {
		if err := m.To(s, "step"); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != len(path) {
		t.Fatalf("%d transitions seen, want %d", len(seen), len(path))
	}
	from := Absent
	for i, tr := range seen {
		if tr.From != from || tr.To != path[i] || tr.Bundle != "org/forge" || !tr.At.Equal(at) {
			t.Fatalf("transition %d = %+v, want %s → %s", i, tr, from, path[i])
		}
		from = tr.To
	}
	m.Fail("")
	if s, why := m.State(); s != Failed || why != "unknown failure" {
		t.Fatalf("after Fail: %s %q", s, why)
	}
}

func TestMachineRefusesIllegalMoves(t *testing.T) {
	for _, c := range []struct{ from, to State }{
		{Resident, Downloading}, {Absent, Resident}, {Verifying, Resident}, {Downloading, Loading}, {Failed, Resident},
	} {
		m := NewMachine("b", c.from, nil)
		calls := 0
		m.OnTransition(func(Transition) { calls++ })
		err := m.To(c.to, "")
		if err == nil || !strings.Contains(err.Error(), "from "+string(c.from)+" to "+string(c.to)) {
			t.Errorf("%s → %s: err = %v, want a refusal naming both states", c.from, c.to, err)
		}
		if s, _ := m.State(); s != c.from || calls != 0 {
			t.Errorf("%s → %s refused but state is %s and %d listeners ran", c.from, c.to, s, calls)
		}
	}
}

// Concurrent movers: listeners still see a consistent chain (each From is
// the previous To).
func TestMachineListenersSeeTransitionsInOrder(t *testing.T) {
	m := NewMachine("b", Ready, nil)
	var mu sync.Mutex
	var seen []Transition
	m.OnTransition(func(tr Transition) { mu.Lock(); seen = append(seen, tr); mu.Unlock() })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_ = m.To(Loading, "")
				_ = m.To(Resident, "")
				_ = m.To(Unloading, "")
				_ = m.To(Ready, "")
			}
		})
	}
	wg.Wait()
	for i := 1; i < len(seen); i++ {
		if seen[i].From != seen[i-1].To {
			t.Fatalf("transition %d starts at %s but the previous ended at %s", i, seen[i].From, seen[i-1].To)
		}
	}
}
