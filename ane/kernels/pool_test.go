package kernels

import (
	"fmt"
	"math"
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
	for range 2000 { // on a loaded machine the worker may not wake in time for some
		p.spellUntil = time.Time{}
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

// holdTask holds worker who in its first chunk for hold, as the OS
// descheduling that worker mid-chunk would. The first chunks of the caller
// and of worker 1 each wait until the other has one, so the Run is shared.
type holdTask struct {
	c       *coverTask
	who     int
	hold    time.Duration
	uneven  bool
	started [2]atomic.Bool
	held    atomic.Bool
}

func (h *holdTask) RunRange(w, lo, hi int) {
	if !h.started[w].Swap(true) {
		for deadline := time.Now().Add(time.Second); !h.started[1-w].Load() && time.Now().Before(deadline); {
			runtime.Gosched()
		}
	}
	if w == h.who && h.held.CompareAndSwap(false, true) {
		time.Sleep(h.hold)
	}
	h.c.RunRange(w, lo, hi)
}

func (h *holdTask) Uneven() bool { return h.uneven }

// A window of shared Runs held up by a worker, or by the caller itself,
// makes the workers polite for the next spellMin: they park as soon as
// they find no chunk instead of polling, and the spell's Runs are shared
// but not judged; a second bad window doubles the spell, and after it the
// workers poll again.
func TestPoolTurnsPoliteWhenSharingLoses(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two Ps")
	}
	for _, who := range []int{1, 0} {
		t.Run(fmt.Sprintf("worker %d held", who), func(t *testing.T) {
			p := NewPool(2)
			defer p.Close()
			fakeCount(p, nil)
			// One held Run, longer than judgeWindow, and short ones to
			// make up judgeRuns fill a window.
			held := func() {
				t.Helper()
				p.spellUntil = time.Time{} // end a spell early: the test need not wait for it
				p.alone, p.took, p.runs = 0, 0, 0
				before := p.judged
				c := newCover(64, 1, 2)
				p.Run(&holdTask{c: c, who: who, hold: judgeWindow + 10*time.Millisecond}, 64, 1, 2)
				c.check(t, "held run")
				for range judgeRuns - 1 {
					p.Run(newCover(64, 1, 2), 64, 1, 2)
				}
				if p.judged != before+1 {
					t.Fatalf("a Run held %v was not judged (%d windows)", judgeWindow+10*time.Millisecond, p.judged)
				}
			}
			run := func() {
				c := newCover(1<<12, 1, 2)
				p.Run(&slowTask{c}, 1<<12, 1, 2)
				c.check(t, "run")
			}
			held()
			if p.spell != spellMin || time.Until(p.spellUntil) <= 0 {
				t.Fatalf("a bad window: spell %v until %v, want %v from now", p.spell, p.spellUntil, spellMin)
			}
			if !p.polite.Load() {
				t.Fatal("a bad window: the workers are not polite")
			}
			// Long enough that a slow run (-race) stays in the spell.
			p.spellUntil = time.Now().Add(time.Minute)
			// A worker polling when the spell began may still be polling:
			// its polls are counted when it takes a Run.
			run()
			run()
			judged, polls := p.judged, p.polls.Load()
			for i := range 20 {
				run()
				if !p.polite.Load() {
					t.Fatalf("Run %d of a spell: the workers are not polite", i+1)
				}
			}
			if p.judged != judged || p.runs != 0 {
				t.Fatalf("a spell's Runs were judged: %d windows, %d Runs in the window", p.judged-judged, p.runs)
			}
			if n := p.polls.Load() - polls; n != 0 {
				t.Fatalf("polite workers polled %d times between a spell's Runs", n)
			}
			held()
			if p.spell != 2*spellMin {
				t.Fatalf("a second bad window: spell %v, want %v", p.spell, 2*spellMin)
			}
			p.spellUntil = time.Time{}
			polls = p.polls.Load()
			for range 2000 { // a loaded machine may judge a few of these bad too
				run()
				if p.polite.Load() {
					p.spellUntil = time.Time{}
					continue
				}
				if p.polls.Load() > polls {
					return
				}
			}
			t.Fatal("after the spells, the workers never polled for a Run in 2000 Runs")
		})
	}
}

// An uneven task's Runs are not judged: its fastest chunk says nothing of
// its others.
func TestPoolDoesNotJudgeUnevenTasks(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two Ps")
	}
	p := NewPool(2)
	defer p.Close()
	fakeCount(p, nil)
	c := newCover(64, 1, 2)
	p.Run(&holdTask{c: c, who: 1, hold: judgeWindow + 10*time.Millisecond, uneven: true}, 64, 1, 2)
	c.check(t, "uneven run")
	if p.judged != 0 || !p.spellUntil.IsZero() {
		t.Fatalf("an uneven Run was judged: %d windows, a spell until %v", p.judged, p.spellUntil)
	}
}

// The judgement adds Runs up to a window (judgeWindow of them and
// judgeRuns), compares the estimate of one worker alone with the time
// taken, and a good window ends the doubling.
func TestPoolJudgesWholeWindows(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	fakeCount(p, nil)
	// window adds judgeRuns Runs taking took in all, worth worth.
	window := func(took time.Duration, worth float64) {
		runs := judgeRuns
		if p.spell > 0 {
			runs = probeRuns
		}
		for range runs {
			p.judge(time.Duration(worth*float64(took/time.Duration(runs))), took/time.Duration(runs), time.Now())
		}
	}
	p.judge(0, 10*judgeWindow, time.Now())
	for range judgeRuns - 2 {
		p.judge(0, 0, time.Now())
	}
	if p.judged != 0 {
		t.Fatal("a window was judged before it had judgeRuns Runs")
	}
	p.alone, p.took, p.runs = 0, 0, 0
	window(judgeWindow/2, 0.5)
	if p.judged != 0 {
		t.Fatal("a window was judged before it was judgeWindow long")
	}
	window(judgeWindow/2, 0.5)
	if p.judged != 1 || p.spell != spellMin || time.Until(p.spellUntil) <= 0 {
		t.Fatalf("a full window worth 1/2: %d judged, spell %v, want 1 and %v from now", p.judged, p.spell, spellMin)
	}
	// After a spell the window is a probe: probeRuns Runs, probeWindow long.
	before := p.judged
	window(probeWindow/2, 0.9)
	if p.judged != before {
		t.Fatal("a probe was judged before it was probeWindow long")
	}
	window(probeWindow/2, 0.9)
	if p.judged != before+1 || p.spell != 2*spellMin {
		t.Fatalf("a bad probe: %d judged, spell %v, want %d and %v", p.judged-before, p.spell, 1, 2*spellMin)
	}
	for range 10 {
		window(probeWindow, 0)
	}
	if p.spell != spellMax {
		t.Fatalf("ten bad windows in a row: spell %v, want the cap %v", p.spell, spellMax)
	}
	until := p.spellUntil
	window(probeWindow, 1.5)
	if p.spell != spellMax/2 || p.spellUntil != until {
		t.Fatalf("a good probe: spell %v (want %v), its end moved from %v to %v", p.spell, spellMax/2, until, p.spellUntil)
	}
	window(probeWindow, 0.9)
	if p.spell != spellMax {
		t.Fatalf("a bad window after one good probe: spell %v, want %v again", p.spell, spellMax)
	}
	for range 6 { // 2 s halved six times is below spellMin
		window(probeWindow, 1.5)
	}
	if p.spell != 0 {
		t.Fatalf("good windows: spell %v, want none", p.spell)
	}
	before = p.judged
	window(probeWindow, 1.5)
	if p.judged != before {
		t.Fatal("without a spell a window of probeRuns Runs was judged: full windows are judgeRuns")
	}
}

// One worker's estimate is the Run's units at its fastest chunk's rate.
func TestBatchEstimatesOneWorker(t *testing.T) {
	b := &batch{t: newCover(64, 1, 1), total: 64}
	b.fastest.Store(math.MaxInt64)
	b.noteRate(40*time.Microsecond, 10) // 4 µs a unit
	b.noteRate(10*time.Microsecond, 4)  // 2.5 µs a unit
	b.noteRate(90*time.Microsecond, 10)
	if d, ok := b.alone(); !ok || d != 160*time.Microsecond {
		t.Fatalf("estimate %v (ok %v), want 64 units at 2.5 µs = 160µs", d, ok)
	}
}

// fakeCount replaces p's kernel count of spare CPUs: each read returns
// *spare (ok false if spare is nil), and the count returned is the reads.
func fakeCount(p *Pool, spare *int) *int {
	reads := new(int)
	p.spareCPUs = func() (int, bool) {
		*reads++
		if spare == nil {
			return 0, false
		}
		return *spare, true
	}
	return reads
}

// A window of Runs worth less than one worker ends as soon as it has
// lookRuns of them if the kernel counts a thread waiting for a CPU, and
// runs its length otherwise; the count is read at most every lookEvery,
// and not at all while sharing is worth it.
func TestPoolWindowAsksTheKernel(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	spare := -1
	reads := fakeCount(p, &spare)
	now := time.Now()
	step := 2 * time.Millisecond // a Run's time; judgeRuns of them fill judgeWindow
	runs := func(n int, worth float64) {
		for range n {
			now = now.Add(step)
			p.judge(time.Duration(worth*float64(step)), step, now)
		}
	}
	restart := func() { p.alone, p.took, p.runs, p.spell, p.spellUntil = 0, 0, 0, 0, time.Time{} }

	runs(lookRuns-1, 0.5)
	if *reads != 0 || p.judged != 0 {
		t.Fatalf("%d bad Runs: %d reads, %d windows judged; want none before lookRuns", lookRuns-1, *reads, p.judged)
	}
	runs(1, 0.5)
	if *reads != 1 || p.judged != 1 || p.spell != spellMin || !p.spellUntil.Equal(now.Add(spellMin)) {
		t.Fatalf("a thread waiting after %d bad Runs: %d reads, %d judged, spell %v; want 1, 1, %v", lookRuns, *reads, p.judged, p.spell, spellMin)
	}

	restart()
	spare = 0
	runs(judgeRuns-1, 0.5)
	if p.judged != 1 {
		t.Fatal("with no thread waiting, a bad window was judged before its end")
	}
	// Asked again, but not more than once every lookEvery.
	if n, most := *reads-1, int(time.Duration(judgeRuns)*step/lookEvery); n < 1 || n > most {
		t.Fatalf("%d reads of the count over %v of bad Runs, want 1 to %d (one every %v)", n, time.Duration(judgeRuns-1)*step, most, lookEvery)
	}
	runs(1, 0.5)
	if p.judged != 2 || p.spell != spellMin {
		t.Fatalf("a full bad window with no thread waiting: %d judged, spell %v; want 2, %v", p.judged, p.spell, spellMin)
	}

	restart()
	spare = -1
	before := *reads
	runs(judgeRuns-1, 1.5)
	if *reads != before || p.judged != 2 {
		t.Fatalf("Runs worth 1.5: %d reads, %d judged; want the count not read and no window judged", *reads-before, p.judged-2)
	}
}

// A spell that ends while the kernel counts a thread for every CPU goes
// on (its Runs polite and not judged, the count read every lookEvery);
// with a CPU spare, or no count, the Runs after it are the probe, the
// workers polling again.
func TestPoolSpellAsksTheKernel(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two Ps")
	}
	p := NewPool(2)
	defer p.Close()
	spare := 0
	reads := fakeCount(p, &spare)
	now := time.Now()
	p.spell, p.spellUntil = spellMin, now
	if !p.inSpell(now) || *reads != 1 || !p.spellUntil.Equal(now.Add(lookEvery)) {
		t.Fatalf("a spell's end with no CPU spare: %d reads, spell until %v; want 1 and %v", *reads, p.spellUntil.Sub(now), lookEvery)
	}
	if !p.inSpell(now.Add(lookEvery/2)) || *reads != 1 {
		t.Fatalf("within the extension: %d reads, want the count not read again", *reads)
	}
	// A real Run at a spell's end with no CPU spare is the spell's.
	began := time.Now()
	p.spellUntil = began.Add(-time.Millisecond)
	c := newCover(1<<12, 1, 2)
	p.Run(&slowTask{c}, 1<<12, 1, 2)
	c.check(t, "run")
	if !p.polite.Load() || p.runs != 0 || !p.spellUntil.After(began) {
		t.Fatalf("a Run at a spell's end with no CPU spare: polite %v, %d Runs judged, spell until %v after it began", p.polite.Load(), p.runs, p.spellUntil.Sub(began))
	}

	spare = 1
	now = p.spellUntil
	if p.inSpell(now) || !p.spellUntil.IsZero() {
		t.Fatalf("a spell's end with a CPU spare: the spell goes on (until %v)", p.spellUntil)
	}
	before := *reads
	if p.inSpell(now) || *reads != before {
		t.Fatal("after a spell: in a spell, or the count read again")
	}
	fakeCount(p, nil)
	p.spellUntil = now
	if p.inSpell(now) {
		t.Fatal("a spell's end without the kernel's count: the spell goes on")
	}
	c = newCover(1<<12, 1, 2)
	p.Run(&slowTask{c}, 1<<12, 1, 2)
	c.check(t, "run")
	if p.polite.Load() || p.runs != 1 {
		t.Fatalf("the probe's first Run: polite %v, %d Runs judged; want polling workers and 1", p.polite.Load(), p.runs)
	}
}
