package scheduler

import (
	"context"
	"sync"
)

// Gate bounds the expensive preparation of requests (rendering a chat,
// tokenizing a prompt: tens of MiB for a 1 MiB frame) to one at a time per
// uid, so the memory one uid can make the daemon spend on preparation does
// not grow with the requests it sends at once. Other uids do not wait.
type Gate struct {
	mu  sync.Mutex
	uid map[uint32]*gateEntry
}

type gateEntry struct {
	turn chan struct{} // holds one token while someone prepares
	refs int           // holders and waiters
}

// Enter waits for uid's turn; leave must be called once after a nil error.
func (g *Gate) Enter(ctx context.Context, uid uint32) (leave func(), err error) {
	g.mu.Lock()
	if g.uid == nil {
		g.uid = map[uint32]*gateEntry{}
	}
	e := g.uid[uid]
	if e == nil {
		e = &gateEntry{turn: make(chan struct{}, 1)}
		g.uid[uid] = e
	}
	e.refs++
	g.mu.Unlock()
	done := func() {
		g.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(g.uid, uid)
		}
		g.mu.Unlock()
	}
	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		done()
		return nil, context.Cause(ctx)
	}
	var once sync.Once
	return func() { once.Do(func() { <-e.turn; done() }) }, nil
}
