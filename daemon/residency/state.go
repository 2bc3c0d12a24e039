package residency

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// State is where a bundle is in its life on this machine.
type State string

const (
	Absent      State = "absent"
	Downloading State = "downloading"
	Verifying   State = "verifying"
	Ready       State = "ready" // installed and verified, not loaded
	Loading     State = "loading"
	Resident    State = "resident"
	Unloading   State = "unloading"
	Failed      State = "failed"
)

// next lists the legal moves; any state may also move to Failed.
var next = map[State][]State{
	Absent:      {Downloading, Verifying},
	Downloading: {Verifying, Absent},
	Verifying:   {Ready},
	Ready:       {Loading, Verifying, Downloading, Absent},
	Loading:     {Resident, Unloading},
	Resident:    {Unloading},
	Unloading:   {Ready, Verifying},
	Failed:      {Downloading, Verifying, Absent},
}

// Transition is one move of a bundle's state machine, as subscribers see it.
type Transition struct {
	Bundle   string
	From, To State
	Reason   string // why (always set for Failed)
	At       time.Time
}

// Machine is the state machine of one bundle. It is safe for concurrent use;
// listeners are called in order, outside the lock, for every transition.
type Machine struct {
	name  string
	now   func() time.Time
	mu    sync.Mutex
	state State
	why   string
	fire  sync.Mutex // serialises listener calls so they see transitions in order
	subs  []func(Transition)
}

// NewMachine starts bundle name in state s; now may be nil for time.Now.
func NewMachine(name string, s State, now func() time.Time) *Machine {
	if now == nil {
		now = time.Now
	}
	return &Machine{name: name, state: s, now: now}
}

// OnTransition registers f for every later transition.
func (m *Machine) OnTransition(f func(Transition)) {
	m.mu.Lock()
	m.subs = append(m.subs, f)
	m.mu.Unlock()
}

// Rename names the bundle in later transitions (and refusals): a switch
// or an install serves another revision under the same machine.
func (m *Machine) Rename(name string) {
	m.fire.Lock() // after any transition being announced under the old name
	defer m.fire.Unlock()
	m.mu.Lock()
	m.name = name
	m.mu.Unlock()
}

// Name is the bundle the machine's transitions are about.
func (m *Machine) Name() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.name
}

// State is the current state and its reason.
func (m *Machine) State() (State, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, m.why
}

// To moves to s, refusing a move the lifecycle does not allow (for example
// resident → downloading) with an error naming both states.
func (m *Machine) To(s State, reason string) error {
	m.fire.Lock()
	defer m.fire.Unlock()
	m.mu.Lock()
	from := m.state
	if !allowed(from, s) {
		m.mu.Unlock()
		return fmt.Errorf("bundle %s: cannot move from %s to %s", m.name, from, s)
	}
	if s == Failed && reason == "" {
		reason = "unknown failure"
	}
	m.state, m.why = s, reason
	subs := slices.Clone(m.subs)
	t := Transition{Bundle: m.name, From: from, To: s, Reason: reason, At: m.now()}
	m.mu.Unlock()
	for _, f := range subs {
		f(t)
	}
	return nil
}

// Fail moves to Failed with reason; it is legal from every state.
func (m *Machine) Fail(reason string) { _ = m.To(Failed, reason) }

func allowed(from, to State) bool {
	if to == Failed {
		return true
	}
	for _, s := range next[from] {
		if s == to {
			return true
		}
	}
	return false
}
