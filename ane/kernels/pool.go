package kernels

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forgedaemon/forged/internal/runqueue"
)

// Task is work split over a range; RunRange handles [lo, hi) on worker w
// (0 ≤ w < Workers()), and may be called several times per Run with
// different ranges. Passing a pointer to a long-lived Task value keeps
// Pool.Run allocation-free.
type Task interface {
	RunRange(w, lo, hi int)
}

// UnevenTask is a Task whose units need not cost alike (attention over a
// prompt's rows: a later row attends to more positions). The pool cannot
// tell from its chunks what a Run would have cost one worker, so such a
// Run does not count towards a polite spell (below).
type UnevenTask interface {
	Task
	Uneven() bool
}

// Pool is a fixed set of worker goroutines; the calling goroutine is worker
// 0, so a pool of 1 runs everything inline.
//
// A Run is cut into more chunks than workers, handed out in order to
// whichever worker asks next: a worker the OS has not scheduled yet (the
// machine is busy, or it is still waking) leaves its share to the others
// instead of holding up the whole product. A worker that finishes polls
// briefly for the next Run before parking (unless polite, below), because
// a decode step issues products microseconds apart and waking a parked
// thread costs more.
//
// When another process keeps a core busy, three threads share two cores,
// and polling workers lose: a worker polling between Runs is a runnable
// thread, so the kernel makes it take turns with the other process's
// threads a time slice (milliseconds) at a time, whether it holds a
// chunk or not; descheduled in the middle of a chunk it holds up the Run
// for that slice, where a product takes microseconds, and its polling
// takes CPU time from the caller. Two such workers decode slower than
// one. A polite worker parks as soon as it finds no chunk to take: it is
// runnable only while it has work, the kernel runs a thread that wakes
// from sleep promptly, and the caller never waits for a worker that has
// not started (chunks go to whoever asks). That costs a wake-up a Run,
// which a quiet machine need not pay.
//
// So the pool judges what sharing is worth: a shared Run's worth is the
// time one worker alone would have taken (its units at the rate of its
// fastest chunk) over the time it took. A window of Runs shared by
// polling workers (judgeWindow and judgeRuns) worth less than
// politeBelow, added up, makes the workers polite for a spell (spellMin,
// doubling while the windows stay bad, up to spellMax), its Runs not
// judged; then the workers poll again for a shorter window (probeWindow,
// probeRuns), and each good window halves the next spell (below
// spellMin: none, and full windows). Judged over a window, a pause of
// the VM or a kernel thread's slice leaves a quiet machine's sharing
// above 1.
//
// Where the kernel counts its runnable threads (runqueue.SpareCPUs), the
// pool asks it too, at most every lookEvery: a window worth less than
// one worker so far ends early when threads wait for a CPU (the loss is
// a busy machine's, and will last), and a spell ending while every CPU
// has a thread goes on instead of probing. So under sustained load a
// decode pays one short window, not a window and a probe per spell. Run
// is for one goroutine at a time (the session's).
type Pool struct {
	workers int
	jobs    []chan *batch
	done    chan struct{} // the worker finishing a Run's last chunk wakes a blocked caller
	mu      sync.Mutex
	free    []*batch
	once    sync.Once

	alone, took time.Duration // this window's shared Runs: one worker's estimate, and the time they took
	runs        int           // and how many
	spellUntil  time.Time     // Runs before this are a polite spell's (zero: no spell)
	spell       time.Duration // the last spell's length (0: none since a good window)
	judged      int           // windows judged (tests)
	polite      atomic.Bool   // workers park as soon as they find no chunk
	polls       atomic.Int64  // the workers' polls for a Run (tests)
	nextLook    time.Time     // when a window may next ask spareCPUs
	// spareCPUs is the machine's CPUs less its runnable threads
	// (runqueue.SpareCPUs; tests replace it).
	spareCPUs func() (spare int, ok bool)
}

const (
	// A window is at least judgeWindow and judgeRuns Runs: a decode step's
	// hundred short Runs fill the time, a prefill's few long ones (each
	// one descheduled or not, where the OS slices time) the count.
	judgeWindow = 50 * time.Millisecond
	judgeRuns   = 32
	// After a spell the polling workers are probed in a shorter window:
	// where the kernel's count is not read, every probe under sustained
	// load costs its window at polling's worth there (about 0.7).
	probeWindow = 20 * time.Millisecond
	probeRuns   = 16
	politeBelow = 1.0
	spellMin    = 50 * time.Millisecond
	spellMax    = 2 * time.Second
	// The kernel's count is read at most every lookEvery (under a µs a
	// read), by a window only once it has lookRuns Runs to judge by.
	lookEvery = 10 * time.Millisecond
	lookRuns  = 8
)

// chunksPerWorker is how finely a Run is cut: enough that a late worker
// costs little, few enough that handing out chunks stays negligible.
const chunksPerWorker = 4

// spinFor is how long an idle worker polls for the next Run before parking.
const spinFor = 50 * time.Microsecond

// batch is one Run. Its holders (the caller and each worker it was sent
// to) release it when they no longer touch it; the last one recycles it,
// so a worker that wakes after the Run ended still sees its own batch.
type batch struct {
	pool                 *Pool
	t                    Task
	total, chunk, chunks int
	next                 atomic.Int64 // next chunk to hand out
	left                 atomic.Int64 // chunks not yet finished
	fastest              atomic.Int64 // the fastest chunk so far, picoseconds a unit
	holders              atomic.Int32
	// parked decides, once per Run, whether the caller blocks on done: the
	// caller swaps 0→1 before blocking, the worker that finished the last
	// chunk swaps 0→2; whoever is second knows what the other did.
	parked atomic.Int32
}

// work runs chunks until none are left to take, timing each; last
// reports that this worker finished the batch's final chunk.
func (b *batch) work(w int) (last bool) {
	began := time.Now()
	for {
		c := int(b.next.Add(1) - 1)
		if c >= b.chunks {
			return false
		}
		lo := c * b.chunk
		hi := min(lo+b.chunk, b.total)
		b.t.RunRange(w, lo, hi)
		ended := time.Now()
		b.noteRate(ended.Sub(began), hi-lo)
		began = ended
		if b.left.Add(-1) == 0 {
			return true
		}
	}
}

// noteRate lowers the batch's fastest rate to d over units if that is faster.
func (b *batch) noteRate(d time.Duration, units int) {
	r := int64(d) * 1000 / int64(units)
	for {
		f := b.fastest.Load()
		if r >= f || b.fastest.CompareAndSwap(f, r) {
			return
		}
	}
}

// alone estimates what the finished batch would have taken one worker:
// all its units at its fastest chunk's rate (ok false for an uneven task).
func (b *batch) alone() (d time.Duration, ok bool) {
	if u, uneven := b.t.(UnevenTask); uneven && u.Uneven() {
		return 0, false
	}
	return time.Duration(b.fastest.Load() * int64(b.total) / 1000), true
}

func (b *batch) release() {
	if b.holders.Add(-1) == 0 {
		b.t = nil
		p := b.pool
		p.mu.Lock()
		p.free = append(p.free, b)
		p.mu.Unlock()
	}
}

// NewPool starts a pool of n workers (n ≤ 0: GOMAXPROCS).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &Pool{workers: n, jobs: make([]chan *batch, n-1), done: make(chan struct{}, 1), spareCPUs: runqueue.SpareCPUs}
	for i := range p.jobs {
		// Buffered: the caller never waits for a worker to take its batch.
		ch := make(chan *batch, 4)
		p.jobs[i] = ch
		go p.worker(i+1, ch)
	}
	return p
}

func (p *Pool) worker(w int, ch chan *batch) {
	for {
		b, ok := p.next(ch)
		if !ok {
			return
		}
		if b.work(w) && !b.parked.CompareAndSwap(0, 2) {
			p.done <- struct{}{} // the caller is blocked waiting
		}
		b.release()
	}
}

// next waits for the next batch: polling for spinFor, then parked (at
// once if the pool is polite).
func (p *Pool) next(ch chan *batch) (*batch, bool) {
	deadline := time.Time{}
	for i := 0; ; i++ {
		select {
		case b, ok := <-ch:
			p.notePolls(i)
			return b, ok
		default:
		}
		if p.polite.Load() {
			p.notePolls(i)
			b, ok := <-ch
			return b, ok
		}
		spinPause()
		if i&63 == 63 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(spinFor)
			} else if now.After(deadline) {
				p.notePolls(i)
				b, ok := <-ch
				return b, ok
			}
		}
	}
}

func (p *Pool) notePolls(n int) {
	if n > 0 {
		p.polls.Add(int64(n))
	}
}

// Workers is the number of workers, the caller included.
func (p *Pool) Workers() int { return p.workers }

// Run splits [0, total) into chunks whose bounds are multiples of align,
// shared by at most parts workers (the caller included), and waits for all.
func (p *Pool) Run(t Task, total, align, parts int) {
	parts = min(parts, p.workers)
	units := (total + align - 1) / align
	if parts > units {
		parts = units
	}
	if parts <= 1 {
		t.RunRange(0, 0, total)
		return
	}
	start := time.Now()
	spell := p.inSpell(start)
	if p.polite.Load() != spell {
		p.polite.Store(spell)
	}
	chunks := min(units, parts*chunksPerWorker)
	b := p.batch()
	b.t, b.total = t, total
	b.chunk = (units + chunks - 1) / chunks * align
	b.chunks = (total + b.chunk - 1) / b.chunk
	b.next.Store(0)
	b.left.Store(int64(b.chunks))
	b.fastest.Store(math.MaxInt64)
	b.holders.Store(int32(parts))
	b.parked.Store(0)
	for i := 1; i < parts; i++ {
		select {
		case p.jobs[i-1] <- b:
		default:
			// The worker has not taken its last Runs yet (the OS has
			// not scheduled it): waiting to hand it this one would
			// stall the caller for a time slice, so it does without.
			b.release()
		}
	}
	if !b.work(0) {
		b.wait()
	}
	// Every chunk is done, so the fastest rate is final.
	if alone, ok := b.alone(); ok && !spell {
		now := time.Now()
		p.judge(alone, now.Sub(start), now)
	}
	b.release()
}

// judge adds a Run shared by polling workers, estimated to take one
// worker alone and taking took, to the window, and at the window's end
// starts a polite spell if sharing was worth less than politeBelow.
func (p *Pool) judge(alone, took time.Duration, now time.Time) {
	p.alone += alone
	p.took += took
	p.runs++
	window, runs := judgeWindow, judgeRuns
	if p.spell > 0 {
		window, runs = probeWindow, probeRuns
	}
	if (p.took < window || p.runs < runs) && !p.lookedBusy(now) {
		return
	}
	worth := float64(p.alone) / float64(p.took)
	p.alone, p.took, p.runs = 0, 0, 0
	p.judged++
	if worth >= politeBelow {
		// Halved, not forgotten: one lucky probe under sustained load
		// costs one window more, not the climb back to spellMax.
		if p.spell /= 2; p.spell < spellMin {
			p.spell = 0
		}
		return
	}
	p.spell = min(max(2*p.spell, spellMin), spellMax)
	p.spellUntil = now.Add(p.spell)
	p.polite.Store(true) // now: a worker polling for the next Run stops
}

// lookedBusy ends a window early: once it has lookRuns Runs worth less
// than one worker so far, it asks the kernel (at most every lookEvery),
// and threads waiting for a CPU while this pool's are all running say
// the loss will last. Without the count, or with no thread waiting, the
// window runs its length: a VM's pause or a kernel thread's slice can
// cost a few Runs without lasting.
func (p *Pool) lookedBusy(now time.Time) bool {
	if p.runs < lookRuns || now.Before(p.nextLook) || float64(p.alone) >= politeBelow*float64(p.took) {
		return false
	}
	p.nextLook = now.Add(lookEvery)
	spare, ok := p.spareCPUs()
	return ok && spare < 0
}

// inSpell reports whether a Run starting at now is a polite spell's:
// before the spell's end, or at it while the kernel counts a thread for
// every CPU, the caller's included (the polite workers are parked; then
// the spell goes on for lookEvery). Otherwise a spell that has ended is
// over and the Runs from here are the probe.
func (p *Pool) inSpell(now time.Time) bool {
	if p.spellUntil.IsZero() {
		return false
	}
	if now.Before(p.spellUntil) {
		return true
	}
	if spare, ok := p.spareCPUs(); ok && spare <= 0 {
		p.spellUntil = now.Add(lookEvery)
		return true
	}
	p.spellUntil = time.Time{}
	return false
}

// wait returns once the workers have finished the chunks they took: it
// spins first (a chunk is microseconds of work, and a parked caller costs
// a scheduler round trip), then blocks.
func (b *batch) wait() {
	deadline := time.Time{}
	for i := 0; b.left.Load() > 0; i++ {
		spinPause()
		if i&63 != 63 {
			continue
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(spinFor)
		} else if now.After(deadline) {
			if b.parked.CompareAndSwap(0, 1) {
				<-b.pool.done
			}
			return
		}
	}
}

func (p *Pool) batch() *batch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		return b
	}
	return &batch{pool: p}
}

// Close stops the workers; the pool must not be used afterwards.
func (p *Pool) Close() {
	p.once.Do(func() {
		for _, ch := range p.jobs {
			close(ch)
		}
	})
}
