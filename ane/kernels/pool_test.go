package kernels

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// coverTask counts, for every index, how often a RunRange covered it, and
// records ranges that break the alignment or the bounds.
type coverTask struct {
	hits      []atomic.Int32
	align     int
	bad       atomic.Int32
	byWorker  []atomic.Int32
	maxWorker int
}

func (c *coverTask) RunRange(w, lo, hi int) {
	if lo%c.align != 0 || (lo >= hi && len(c.hits) > 0) || hi > len(c.hits) || (hi%c.align != 0 && hi != len(c.hits)) || w < 0 || w >= c.maxWorker {
		c.bad.Add(1)
		return
	}
	c.byWorker[w].Add(1)
	for i := lo; i < hi; i++ {
		c.hits[i].Add(1)
	}
}

func newCover(total, align, workers int) *coverTask {
	return &coverTask{hits: make([]atomic.Int32, total), align: align, byWorker: make([]atomic.Int32, workers), maxWorker: workers}
}

func (c *coverTask) check(t *testing.T, what string) {
	t.Helper()
	if n := c.bad.Load(); n > 0 {
		t.Fatalf("%s: %d ranges out of bounds or misaligned", what, n)
	}
	for i := range c.hits {
		if h := c.hits[i].Load(); h != 1 {
			t.Fatalf("%s: index %d covered %d times", what, i, h)
		}
	}
}

// Every index is covered exactly once, by aligned ranges, whatever the
// sizes, over many Runs of one pool (batches are recycled between them).
func TestPoolCoversEachIndexOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, workers := range []int{1, 2, 3, 8} {
		p := NewPool(workers)
		for range 300 {
			total, align, parts := r.IntN(200), 1+r.IntN(9), 1+r.IntN(10)
			c := newCover(total, align, workers)
			p.Run(c, total, align, parts)
			c.check(t, "run")
		}
		p.Close()
	}
}

// With one OS thread for Go code, the workers cannot run while the caller
// works: the caller takes every chunk and Run returns without waiting for
// them. The workers wake later to a finished batch, and the pool stays
// correct for the Runs after.
func TestPoolDoesNotWaitForUnscheduledWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := NewPool(4)
	defer p.Close()
	runtime.Gosched() // let the workers park
	c := newCover(1000, 10, 4)
	p.Run(c, 1000, 10, 4)
	c.check(t, "first run")
	if n := c.byWorker[0].Load(); n == 0 {
		t.Fatal("the caller ran no chunk")
	}
	for range 50 {
		c := newCover(777, 7, 4)
		p.Run(c, 777, 7, 4)
		c.check(t, "later run")
		runtime.Gosched()
	}
}

// Several workers really share a Run when they can run.
func TestPoolSharesWork(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two Ps")
	}
	p := NewPool(2)
	defer p.Close()
	for range 2000 { // a loaded machine may send a few Runs solo (stalls)
		p.soloUntil = time.Time{}
		c := newCover(1<<12, 1, 2)
		slow := &slowTask{c}
		p.Run(slow, 1<<12, 1, 2)
		c.check(t, "run")
		if c.byWorker[1].Load() > 0 {
			return
		}
	}
	t.Fatal("worker 1 never ran a chunk in 2000 Runs")
}

// slowTask makes each chunk long enough for a woken worker to join in.
type slowTask struct{ c *coverTask }

func (s *slowTask) RunRange(w, lo, hi int) {
	x := 0
	for i := 0; i < 20000; i++ {
		x += i * i
	}
	if x == -1 {
		panic("unreachable")
	}
	s.c.RunRange(w, lo, hi)
}

// Run allocates nothing in steady state.
func TestPoolRunAllocatesNothing(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	c := newCover(4096, 8, 2)
	for range 10 {
		p.Run(c, 4096, 8, 2)
	}
	allocs := testing.AllocsPerRun(200, func() { p.Run(c, 4096, 8, 2) })
	if allocs > 0.05 {
		t.Fatalf("Run allocates %.2f times per call", allocs)
	}
}

// stallTask holds worker 1 in its first chunk for hold, as a worker the
// OS descheduled mid-chunk would; the caller's first chunk waits until
// worker 1 has one, so the Run is shared.
type stallTask struct {
	c       *coverTask
	hold    time.Duration
	started atomic.Bool
}

func (s *stallTask) RunRange(w, lo, hi int) {
	if w == 1 && s.started.CompareAndSwap(false, true) {
		time.Sleep(s.hold)
	}
	for deadline := time.Now().Add(time.Second); w == 0 && !s.started.Load() && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	s.c.RunRange(w, lo, hi)
}

// A Run held up by a worker alone changes nothing; a second one soon
// after sends the Runs of the next soloMin to the caller alone (the worker
// takes no chunk of them), a third in a row doubles the spell, and after
// it the workers share Runs again.
func TestPoolStallRunsSolo(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two Ps")
	}
	p := NewPool(2)
	defer p.Close()
	stall := func() {
		t.Helper()
		p.soloUntil = time.Time{} // end a spell early: the test need not wait for it
		// (100 ms: the worker may take tens of ms to start on a loaded
		// machine, and that counts as the caller's work)
		before := p.stalls
		c := newCover(64, 1, 2)
		p.Run(&stallTask{c: c, hold: 100 * time.Millisecond}, 64, 1, 2)
		c.check(t, "stalled run")
		if p.stalls != before+1 {
			t.Fatalf("a Run held up 100 ms by a worker was not counted as a stall (%d stalls)", p.stalls)
		}
	}
	shared := func() int32 {
		c := newCover(1<<12, 1, 2)
		p.Run(&slowTask{c}, 1<<12, 1, 2)
		c.check(t, "run")
		return c.byWorker[1].Load()
	}
	stall()
	if !p.soloUntil.IsZero() {
		t.Fatal("one stall started a solo spell")
	}
	stall()
	if p.spell != soloMin || time.Until(p.soloUntil) <= 0 {
		t.Fatalf("two stalls in a row: spell %v until %v, want %v from now", p.spell, p.soloUntil, soloMin)
	}
	for i := range 5 {
		if k := shared(); k > 0 && time.Now().Before(p.soloUntil) {
			t.Fatalf("Run %d of a solo spell: worker 1 ran %d chunks", i+1, k)
		}
	}
	stall()
	if p.spell != 2*soloMin {
		t.Fatalf("a third stall in a row: spell %v, want %v", p.spell, 2*soloMin)
	}
	p.soloUntil = time.Time{}
	for range 2000 { // a loaded machine may stall a few of these into spells too
		if shared() > 0 {
			return
		}
		p.soloUntil = time.Time{}
	}
	t.Fatal("after the solo spells, worker 1 never ran a chunk in 2000 Runs")
}
