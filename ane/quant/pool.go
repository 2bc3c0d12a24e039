package quant

import (
	"runtime"
	"sync"
)

// Task is work split over a range; RunRange handles [lo, hi) on worker w
// (0 ≤ w < Workers()). Passing a pointer to a long-lived Task value keeps
// Pool.Run allocation-free.
type Task interface {
	RunRange(w, lo, hi int)
}

type job struct {
	t         Task
	w, lo, hi int
}

// Pool is a fixed set of worker goroutines; the calling goroutine is worker
// 0, so a pool of 1 runs everything inline.
type Pool struct {
	workers int
	jobs    []chan job
	wg      sync.WaitGroup
	once    sync.Once
}

// NewPool starts a pool of n workers (n ≤ 0: GOMAXPROCS).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &Pool{workers: n, jobs: make([]chan job, n-1)}
	for i := range p.jobs {
		ch := make(chan job)
		p.jobs[i] = ch
		go func() {
			for j := range ch {
				j.t.RunRange(j.w, j.lo, j.hi)
				p.wg.Done()
			}
		}()
	}
	return p
}

// Workers is the number of workers, the caller included.
func (p *Pool) Workers() int { return p.workers }

// Run splits [0, total) into contiguous parts whose bounds are multiples of
// align, one per worker (at most parts of them), and waits for all.
func (p *Pool) Run(t Task, total, align, parts int) {
	if parts > p.workers {
		parts = p.workers
	}
	units := (total + align - 1) / align
	if parts > units {
		parts = units
	}
	if parts <= 1 {
		t.RunRange(0, 0, total)
		return
	}
	bound := func(i int) int { return min(units*i/parts*align, total) }
	p.wg.Add(parts - 1)
	for i := 1; i < parts; i++ {
		p.jobs[i-1] <- job{t, i, bound(i), bound(i + 1)}
	}
	t.RunRange(0, 0, bound(1))
	p.wg.Wait()
}

// Close stops the workers; the pool must not be used afterwards.
func (p *Pool) Close() {
	p.once.Do(func() {
		for _, ch := range p.jobs {
			close(ch)
		}
	})
}
