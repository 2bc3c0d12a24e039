package scheduler

import "slices"

// ring is a turn order over keys. A key that arrives with work goes ahead
// of the keys already waiting (after other arrivals since the last turn,
// as fq_codel serves new flows first): one uid's backlog never delays
// another uid's first step by more than a turn. A key that yields its
// turn (Ticket.Yield) instead waits a full round.
type ring[K comparable, V any] struct {
	order []K
	next  int
	fresh int // keys inserted ahead since the last turn
	items map[K]V
}

func newRing[K comparable, V any]() ring[K, V] { return ring[K, V]{items: map[K]V{}} }

// join adds k: ahead of the waiting keys, or (yielded) behind them all.
func (r *ring[K, V]) join(k K, v V, yielded bool) {
	r.items[k] = v
	if r.next > len(r.order) {
		r.next = 0
	}
	at := r.next
	if !yielded {
		at = min(r.next+r.fresh, len(r.order))
		r.fresh++
	}
	r.order = append(r.order, k)
	copy(r.order[at+1:], r.order[at:])
	r.order[at] = k
	if yielded { // just before the key whose turn is next: last in the round
		r.next = (r.next + 1) % len(r.order)
	}
}

// current is the key whose turn it is.
func (r *ring[K, V]) current() (K, V, bool) {
	var zero K
	if len(r.order) == 0 {
		var v V
		return zero, v, false
	}
	if r.next >= len(r.order) {
		r.next = 0
	}
	k := r.order[r.next]
	return k, r.items[k], true
}

// advance passes the turn to the next key.
func (r *ring[K, V]) advance() {
	r.fresh = 0
	if len(r.order) > 0 {
		r.next = (r.next + 1) % len(r.order)
	}
}

// drop removes k; the turn stays with the key after it.
func (r *ring[K, V]) drop(k K) {
	r.fresh = 0
	delete(r.items, k)
	for i, x := range r.order {
		if x == k {
			r.order = append(r.order[:i], r.order[i+1:]...)
			if i < r.next {
				r.next--
			}
			break
		}
	}
	if r.next >= len(r.order) {
		r.next = 0
	}
}

// appRing is one uid's apps in turn, each with its FIFO of tickets.
type appRing = ring[string, []*Ticket]

// uidRing is one priority class: uids in turn, then their apps.
type uidRing struct{ ring[uint32, *appRing] }

func (r *uidRing) push(t *Ticket, yielded bool) {
	apps, ok := r.items[t.caller.UID]
	if !ok {
		a := newRing[string, []*Ticket]()
		apps = &a
		r.join(t.caller.UID, apps, yielded)
	}
	if q, ok := apps.items[t.caller.App]; ok {
		apps.items[t.caller.App] = append(q, t)
	} else {
		apps.join(t.caller.App, []*Ticket{t}, yielded)
	}
}

// clone copies the turn order and the queues, for playing turns ahead.
func (r *uidRing) clone() uidRing {
	c := uidRing{ring[uint32, *appRing]{order: slices.Clone(r.order), next: r.next, fresh: r.fresh, items: make(map[uint32]*appRing, len(r.items))}}
	for uid, apps := range r.items {
		a := appRing{order: slices.Clone(apps.order), next: apps.next, fresh: apps.fresh, items: make(map[string][]*Ticket, len(apps.items))}
		for app, q := range apps.items {
			a.items[app] = slices.Clone(q)
		}
		c.items[uid] = &a
	}
	return c
}

func (r *uidRing) pop() *Ticket {
	uid, apps, ok := r.current()
	if !ok {
		return nil
	}
	app, q, _ := apps.current()
	t := q[0]
	q[0] = nil
	if len(q) == 1 {
		apps.drop(app)
	} else {
		apps.items[app] = q[1:]
		apps.advance()
	}
	if len(apps.order) == 0 {
		r.drop(uid)
	} else {
		r.advance()
	}
	return t
}

func (r *uidRing) remove(t *Ticket) {
	apps, ok := r.items[t.caller.UID]
	if !ok {
		return
	}
	q := apps.items[t.caller.App]
	for i, x := range q {
		if x == t {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		apps.items[t.caller.App] = q
		return
	}
	apps.drop(t.caller.App)
	if len(apps.order) == 0 {
		r.drop(t.caller.UID)
	}
}
