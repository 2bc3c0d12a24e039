package state

import "slices"

// MemoryChanged is closed the next time memory may have been freed.
func (r *Residency) MemoryChanged() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.freed == nil {
		r.freed = make(chan struct{})
	}
	return r.freed
}

// MemoryFreed wakes requests waiting for memory.
func (r *Residency) MemoryFreed() {
	r.mu.Lock()
	if r.freed != nil {
		close(r.freed)
		r.freed = nil
	}
	r.mu.Unlock()
}

func (r *Residency) QueuePosition(t *int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.waiting, t)
	if i < 0 {
		r.waiting = append(r.waiting, t)
		i = len(r.waiting) - 1
	}
	return i + 1
}

func (r *Residency) LeaveQueue(t *int) {
	r.mu.Lock()
	r.waiting = slices.DeleteFunc(r.waiting, func(w *int) bool { return w == t })
	r.mu.Unlock()
}
