package state

import (
	"slices"
	"sync"
)

// Published is the daemon's state as subscribers see it: the state and its
// reason now, and the last changes, which subscribers that fell behind
// replay so that every transition reaches them, not only the latest.
type Published struct {
	mu      sync.Mutex
	state   string
	reason  string
	changed chan struct{} // closed and replaced on every Set
	log     []Record      // the last publishedLogSize changes
	seq     uint64
}

// Record is one published state change.
type Record struct {
	Seq           uint64
	State, Reason string
}

const publishedLogSize = 256

// NewPublished starts at state.
func NewPublished(state string) *Published {
	return &Published{state: state, changed: make(chan struct{})}
}

// Set records a state and wakes subscribers.
func (p *Published) Set(state, reason string) {
	p.mu.Lock()
	p.state, p.reason = state, reason
	p.seq++
	p.log = append(p.log, Record{Seq: p.seq, State: state, Reason: reason})
	if len(p.log) > publishedLogSize {
		p.log = slices.Delete(p.log, 0, len(p.log)-publishedLogSize)
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// Since returns the retained changes after seq (a subscriber more than
// publishedLogSize behind skips the oldest), the latest seq, and a channel
// closed on the next change.
func (p *Published) Since(seq uint64) ([]Record, uint64, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Record
	for _, r := range p.log {
		if r.Seq > seq {
			out = append(out, r)
		}
	}
	return out, p.seq, p.changed
}

// Subscribe is the current state, its seq and the change channel, read together.
func (p *Published) Subscribe() (Record, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Record{Seq: p.seq, State: p.state, Reason: p.reason}, p.changed
}

// Current is the state, its reason and a channel closed on the next change.
func (p *Published) Current() (state, reason string, changed <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state, p.reason, p.changed
}
