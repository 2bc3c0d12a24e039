package coreai

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
)

// These tests run several sessions of one loaded Model against the test
// bridge. The chunk functions (refchunk) are deterministic, so a session
// must give bit for bit the logits and features it gives alone, whatever
// the other sessions do and whether it was parked in between.

// loadTiny loads the tiny runtime laid out by spec as a shared Model.
func loadTiny(t *testing.T, spec bundleSpec) *Model {
	t.Helper()
	bridge := testBridge(t)
	_, cfg, _ := tiny(t)
	rt := writeRuntime(t, spec)
	m, err := Load(rt, Options{Bridge: bridge, Embedding: standintest.TinyEmbedding(t), KV: spec.Format(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	m.SetRoPE(cfg.RopeTheta)
	return m
}

func newSession(t *testing.T, m *Model) *Engine {
	t.Helper()
	return standintest.Session(t, m.NewSession)
}

// op is one step of a conversation.
type op struct {
	feed     []int // Feed
	verify   []int // Verify, Features, then Accept(accept)
	accept   int
	snapshot bool // Snapshot (kept by the runner)
	restore  bool // Restore the kept snapshot
	features int  // Features(n) of the last call
	park     bool // Park (only runners that park; the others skip it)
}

// script is a conversation: prefill 100, a 5-row feed, verifies with
// partial accepts, a snapshot, a restore, and, when long, 64-row feeds
// that grow the context to 2048. parks lists the op indexes after which a
// parking runner parks.
func script(seed uint64, long bool, parks ...int) []op {
	r := rand.New(rand.NewPCG(seed, seed+1))
	ids := func(n int) []int { return randIDs(r, n, 400) }
	ops := []op{{feed: ids(100)}, {feed: ids(5)}, {verify: ids(8), accept: 3}, {verify: ids(8), accept: 0},
		{snapshot: true}, {verify: ids(8), accept: 8}, {features: 5}, {restore: true}, {verify: ids(2), accept: 2}}
	if long {
		for range 15 {
			ops = append(ops, op{feed: ids(64)})
		}
		ops = append(ops, op{features: 1}, op{verify: ids(8), accept: 6}, op{snapshot: true}, op{feed: ids(3)}, op{restore: true},
			op{verify: ids(8), accept: 8})
	}
	for i, at := range parks {
		at += i + 1
		ops = slices.Insert(ops, at, op{park: true})
	}
	return ops
}

func opName(o op) string {
	switch {
	case o.feed != nil:
		return fmt.Sprintf("Feed(%d)", len(o.feed))
	case o.verify != nil:
		return fmt.Sprintf("Verify(%d)+Accept(%d)", len(o.verify), o.accept)
	case o.snapshot:
		return "Snapshot"
	case o.restore:
		return "Restore"
	case o.features > 0:
		return fmt.Sprintf("Features(%d)", o.features)
	}
	return "Park"
}

// runner drives one engine through a script and records every result.
type runner struct {
	e     *Engine
	spill string // park to this directory ("" = host memory)
	parks bool   // this runner parks
	snap  ane.Snapshot
	out   [][]float32
	// onPark, when set, is called after each park.
	onPark func()
}

func (r *runner) do(o op) error {
	rec := func(v []float32) { r.out = append(r.out, slices.Clone(v)) }
	var err error
	switch {
	case o.feed != nil:
		var lg []float32
		if lg, err = r.e.Feed(o.feed); err == nil {
			rec(lg)
		}
	case o.verify != nil:
		var l ane.Logits
		if l, err = r.e.Verify(o.verify); err != nil {
			return err
		}
		rec(l.Data)
		var f []float32
		if f, err = r.e.Features(len(o.verify)); err != nil {
			return err
		}
		rec(f)
		err = r.e.Accept(o.accept)
	case o.snapshot:
		r.snap, err = r.e.Snapshot()
	case o.restore:
		err = r.e.Restore(r.snap)
	case o.features > 0:
		var f []float32
		if f, err = r.e.Features(o.features); err == nil {
			rec(f)
		}
	case o.park:
		if !r.parks {
			return nil
		}
		if err = r.e.Park(r.spill); err == nil && r.onPark != nil {
			r.onPark()
		}
		return err
	}
	rec([]float32{float32(r.e.Position()), float32(r.e.Context())})
	return err
}

func (r *runner) run(t *testing.T, ops []op) {
	t.Helper()
	for i, o := range ops {
		if err := r.do(o); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
}

var sameRecords = standintest.SameRecords

// Two sessions of one Model, interleaved call by call, give exactly what
// each gives alone; so do two sessions running at the same time in two
// goroutines (the Model's mutex serializes their bridge calls). One of the
// conversations grows to the 2048 context while the other stays at 1024.
func TestSessionsInterleavedEqualAlone(t *testing.T) {
	m := loadTiny(t, bundleSpec{})
	a, b := script(1, false), script(2, true)
	ra, rb := &runner{e: newSession(t, m)}, &runner{e: newSession(t, m)}
	if m.Sessions() != 2 {
		t.Fatalf("%d sessions", m.Sessions())
	}
	for i := 0; i < max(len(a), len(b)); i++ {
		if i < len(a) {
			if err := ra.do(a[i]); err != nil {
				t.Fatalf("A op %d: %v", i, err)
			}
		}
		if i < len(b) {
			if err := rb.do(b[i]); err != nil {
				t.Fatalf("B op %d: %v", i, err)
			}
		}
	}
	if ra.e.Context() != 1024 || rb.e.Context() != 2048 {
		t.Fatalf("contexts %d and %d", ra.e.Context(), rb.e.Context())
	}
	// AllocatedBytes is what the bridge reports for the session's buffers
	// (the stand-in allocates exactly the buffer sizes Memory counts).
	for _, r := range []*runner{ra, rb} {
		mem := r.e.Memory()
		if got := r.e.AllocatedBytes(); got <= 0 || got != mem.Session() {
			t.Fatalf("allocated %d bytes, memory report %+v", got, mem)
		}
		if mem.Weights != m.Memory().Weights || m.AllocatedBytes() != mem.Weights || mem.Weights <= 0 {
			t.Fatalf("session weights %d, model %+v, model allocated %d", mem.Weights, m.Memory(), m.AllocatedBytes())
		}
	}
	if rb.e.AllocatedBytes() <= ra.e.AllocatedBytes() {
		t.Fatal("the 2048 session does not hold more than the 1024 one")
	}
	alone := func(ops []op) [][]float32 {
		r := &runner{e: newSession(t, m)}
		r.run(t, ops)
		r.e.Close()
		return r.out
	}
	wantA, wantB := alone(a), alone(b)
	sameRecords(t, "A interleaved", ra.out, wantA)
	sameRecords(t, "B interleaved", rb.out, wantB)

	// At the same time, from two goroutines (short conversations).
	c := script(3, false)
	wantC := alone(c)
	rs := []*runner{{e: newSession(t, m)}, {e: newSession(t, m)}}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, r := range rs {
		ops := a
		if i == 1 {
			ops = c
		}
		wg.Go(func() {
			for _, o := range ops {
				if errs[i] = r.do(o); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	sameRecords(t, "A concurrent", rs[0].out, wantA)
	sameRecords(t, "C concurrent", rs[1].out, wantC)
}

// Closing a Model closes its live sessions (a parked one's spill file is
// removed) and returns every bridge object; closing an engine from Open
// closes its model.
func TestModelCloseClosesSessions(t *testing.T) {
	testBridge(t)
	before := live()
	m := loadTiny(t, bundleSpec{})
	a, b := newSession(t, m), newSession(t, m)
	ids := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if _, err := a.Feed(ids); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Feed(ids); err != nil {
		t.Fatal(err)
	}
	spill := t.TempDir()
	if err := a.Park(spill); err != nil {
		t.Fatal(err)
	}
	if files, _ := os.ReadDir(spill); len(files) != 1 {
		t.Fatalf("spill directory holds %d files", len(files))
	}
	m.Close()
	if live() != before {
		t.Fatalf("Model.Close left bridge objects: %v → %v", before, live())
	}
	if files, _ := os.ReadDir(spill); len(files) != 0 {
		t.Fatalf("the spill file survived Close: %v", files)
	}
	_, err := a.Feed(ids)
	wantErr(t, err, "engine is closed")
	_, err = b.Verify(ids[:2])
	wantErr(t, err, "engine is closed")
	wantErr(t, b.Accept(1), "engine is closed")
	_, err = b.Features(1)
	wantErr(t, err, "engine is closed")
	wantErr(t, b.Park(""), "engine is closed")
	_, err = m.NewSession()
	wantErr(t, err, "model is closed")
	if m.Sessions() != 0 || a.Close() != nil || b.Close() != nil || m.Close() != nil {
		t.Fatal("closing twice")
	}

	bridge := testBridge(t)
	e, err := Open(writeRuntime(t, bundleSpec{}), Options{Bridge: bridge, Embedding: standintest.TinyEmbedding(t), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	om := e.Model()
	other, err := om.NewSession() // a second session of an Open engine's model
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	_, err = om.NewSession()
	wantErr(t, err, "model is closed")
	_, err = other.Feed(ids)
	wantErr(t, err, "engine is closed")
	if live() != before {
		t.Fatalf("closing an Open engine left bridge objects: %v → %v", before, live())
	}
}

// A parked session gives exactly the logits and features of the same
// conversation never parked: parked to host memory or to a spill file,
// mid-conversation, after a snapshot that is restored after the resume,
// and at the 2048 context. While parked it holds no bridge buffer or
// binding, and reports no KV, recurrent or scratch memory.
func TestParkResumeMatchesNeverParked(t *testing.T) {
	for _, c := range []struct {
		name string
		spec bundleSpec
		disk bool
		long bool
	}{
		{"fp16-memory", bundleSpec{}, false, true},
		{"kv8-keysT-disk", bundleSpec{KV: ane.KVKV8, KeysT: true, AliasKV: true}, true, true},
		{"v8-keysT-memory", bundleSpec{KV: ane.KVV8, KeysT: true, AliasKV: true}, false, false},
		{"fp16-no-prefill-disk", bundleSpec{NoPrefix: true}, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := loadTiny(t, c.spec)
			// Park after the snapshot (restored after the resume), after
			// the Features of a verify, and (long) at the 2048 context.
			parks := []int{4, 5}
			if c.long {
				parks = append(parks, 23)
			}
			ops := script(9, c.long, parks...)
			ref := &runner{e: newSession(t, m)}
			p := &runner{e: newSession(t, m), parks: true}
			if c.disk {
				p.spill = t.TempDir()
			}
			var beforePark [4]int64
			parked := 0
			p.onPark = func() {
				parked++
				e := p.e
				if !e.Parked() || e.AllocatedBytes() != 0 {
					t.Fatalf("after Park: parked %v, %d bytes allocated", e.Parked(), e.AllocatedBytes())
				}
				if mem := e.Memory(); mem.KV != 0 || mem.Recurrent != 0 || mem.Scratch != 0 || mem.Weights <= 0 {
					t.Fatalf("parked memory %+v", mem)
				}
				files, _ := os.ReadDir(p.spill)
				if c.disk {
					if len(files) != 1 || e.ParkedBytes() != 0 {
						t.Fatalf("parked to disk: %d files, %d host bytes", len(files), e.ParkedBytes())
					}
					info, err := os.Stat(e.parked.file)
					if err != nil || info.Mode().Perm() != 0o600 || info.Size() != parkHeaderLen+e.parked.size {
						t.Fatalf("spill file %v: %v", info, err)
					}
				} else if e.ParkedBytes() != e.parked.size || e.ParkedBytes() <= 0 {
					t.Fatalf("parked in memory: %d host bytes, payload %d", e.ParkedBytes(), e.parked.size)
				}
			}
			// Count what the session holds just before each park: the
			// park must release exactly those bridge objects.
			for i, o := range ops {
				if o.park {
					beforePark = live()
					nb, nbind := int64(len(p.e.buffers())), int64(0)
					for _, pl := range p.e.plans {
						nbind += int64(len(pl))
					}
					if nb == 0 || nbind == 0 {
						t.Fatalf("op %d: the session holds %d buffers, %d bindings", i, nb, nbind)
					}
					if err := p.do(o); err != nil {
						t.Fatal(err)
					}
					if want := [4]int64{beforePark[0], beforePark[1], beforePark[2] - nb, beforePark[3] - nbind}; live() != want {
						t.Fatalf("op %d: live %v after Park, want %v (before %v)", i, live(), want, beforePark)
					}
					if err := p.e.Park(p.spill); err != nil || live() != [4]int64{beforePark[0], beforePark[1], beforePark[2] - nb, beforePark[3] - nbind} {
						t.Fatalf("parking a parked session: %v", err)
					}
					continue
				}
				wasParked, nout := p.e.Parked(), len(p.out)
				if err := p.do(o); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				if wasParked {
					if p.e.Parked() {
						t.Fatalf("op %d did not resume the session", i)
					}
					if live()[2] != beforePark[2] {
						t.Fatalf("op %d: %d live buffers after the resume, %d before the park", i, live()[2], beforePark[2])
					}
					if files, _ := os.ReadDir(p.spill); c.disk && len(files) != 0 {
						t.Fatalf("the spill file survived the resume: %v", files)
					}
				}
				if err := ref.do(o); err != nil {
					t.Fatalf("op %d (never parked): %v", i, err)
				}
				sameRecords(t, fmt.Sprintf("op %d (%s)", i, opName(o)), p.out[nout:], ref.out[nout:])
			}
			if parked != len(parks) {
				t.Fatalf("%d parks, want %d", parked, len(parks))
			}
			sameRecords(t, "parked", p.out, ref.out)
			if c.long && p.e.Context() != 2048 {
				t.Fatalf("context %d", p.e.Context())
			}
		})
	}
}

// Resume checks a spill file's length, header and checksum: a truncated,
// corrupted, replaced or missing file is a clear error that leaves the
// session Reset (position 0, not parked), and the session then behaves
// as a fresh one. Reset of a parked session drops the spill file; a
// Verify awaiting Accept cannot be parked.
func TestParkSpillFileChecked(t *testing.T) {
	m := loadTiny(t, bundleSpec{})
	e, fresh := newSession(t, m), newSession(t, m)
	spill := t.TempDir()
	r := rand.New(rand.NewPCG(4, 4))
	prompt, next := randIDs(r, 50, 400), randIDs(r, 20, 400)
	// After a reset, e must continue exactly as a fresh session does.
	wantFresh, err := fresh.Feed(next)
	if err != nil {
		t.Fatal(err)
	}
	wantFresh = slices.Clone(wantFresh)
	parkFile := func() string {
		t.Helper()
		e.Reset()
		if _, err := e.Feed(prompt); err != nil {
			t.Fatal(err)
		}
		if err := e.Park(spill); err != nil {
			t.Fatal(err)
		}
		return e.parked.file
	}
	for _, c := range []struct {
		name    string
		corrupt func(path string)
		resume  func() error
		msg     string
	}{
		{"truncated", func(p string) { info, _ := os.Stat(p); os.Truncate(p, info.Size()-1) }, e.Resume, "truncated or overwritten"},
		{"corrupted", func(p string) { flipByte(t, p, parkHeaderLen+1000) }, e.Resume, "checksum"},
		{"corrupted, found by Verify", func(p string) { flipByte(t, p, parkHeaderLen+5) },
			func() error { _, err := e.Verify([]int{1, 2}); return err }, "checksum"},
		{"header", func(p string) { flipByte(t, p, 17) }, e.Resume, "header is not this park's"},
		{"missing", func(p string) { os.Remove(p) }, func() error { _, err := e.Snapshot(); return err }, "spill file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := parkFile()
			c.corrupt(path)
			err := c.resume()
			wantErr(t, err, c.msg, "the session was reset to position 0")
			if e.Parked() || e.Position() != 0 || e.Context() != 1024 {
				t.Fatalf("after a failed resume: parked %v, position %d, context %d", e.Parked(), e.Position(), e.Context())
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatal("the bad spill file was not removed")
			}
			got, err := e.Feed(next)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, wantFresh) {
				t.Fatal("after a failed resume the session does not continue as a fresh one")
			}
		})
	}
	// A good file resumes (explicit Resume) and is removed.
	path := parkFile()
	if err := e.Resume(); err != nil || e.Parked() || e.Position() != 50 {
		t.Fatalf("resume: %v, parked %v, position %d", err, e.Parked(), e.Position())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("the spill file survived the resume")
	}
	// Reset while parked: the file goes, the session stays parked and empty.
	path = parkFile()
	before := live()
	e.Reset()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("Reset kept the spill file")
	}
	if !e.Parked() || e.Position() != 0 || live() != before || e.ParkedBytes() != 0 {
		t.Fatalf("Reset of a parked session: parked %v, position %d, live %v → %v", e.Parked(), e.Position(), before, live())
	}
	got, err := e.Feed(next)
	if err != nil || !slices.Equal(got, wantFresh) {
		t.Fatalf("after Reset of a parked session: %v, or logits differ from a fresh session's", err)
	}
	if _, err := e.Verify([]int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.Park(""), "awaits Accept")
	if e.Parked() {
		t.Fatal("a refused Park parked")
	}
	if err := e.Accept(1); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.Park(filepath.Join(spill, "missing", "dir")), "Park:")
	if e.Parked() {
		t.Fatal("a failed Park parked")
	}
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// A failed run names the package file and the entry of the binding that
// failed (errors.As finds a *RunError), in verify and in prefill, for each
// chunk and the head; the session stays where it was and continues
// exactly as a session that never failed.
func TestRunErrorNamesPackageAndEntry(t *testing.T) {
	m := loadTiny(t, bundleSpec{})
	e, ref := newSession(t, m), newSession(t, m)
	r := rand.New(rand.NewPCG(5, 5))
	both := func(f func(e *Engine) ([]float32, error)) {
		t.Helper()
		got, err := f(e)
		if err != nil {
			t.Fatal(err)
		}
		got = slices.Clone(got)
		want, err := f(ref)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatal("after a failed run the session differs from one that never failed")
		}
	}
	feed := func(ids []int) func(e *Engine) ([]float32, error) {
		return func(e *Engine) ([]float32, error) { return e.Feed(ids) }
	}
	verify := func(ids []int, k int) func(e *Engine) ([]float32, error) {
		return func(e *Engine) ([]float32, error) {
			l, err := e.Verify(ids)
			if err != nil {
				return nil, err
			}
			return l.Data, e.Accept(k)
		}
	}
	both(feed(randIDs(r, 20, 400)))
	for _, c := range []struct {
		at       int
		prefill  bool
		pkg, ent string
	}{
		{0, false, "chunk_L00-01.aimodel", "v8_1k"},
		{1, false, "chunk_L02-03.aimodel", "v8_1k"},
		{2, false, "head_T8.aimodel", "h8"},
		{0, true, "chunk_L00-01.aimodel", "p64_1k"},
		{1, true, "chunk_L02-03.aimodel", "p64_1k"},
		{2, true, "head_T8.aimodel", "h8"}, // the head runs apart after a prefill block
	} {
		pos := e.Position()
		failRun(t, c.at)
		var err error
		if c.prefill {
			_, err = e.Feed(randIDs(r, 30, 400))
		} else {
			_, err = e.Verify(randIDs(r, 8, 400))
		}
		clearFault()
		wantErr(t, err, fmt.Sprintf("coreai: %s entry %s: run: injected ANE failure", c.pkg, c.ent))
		var re *cai.RunError
		if !errors.As(err, &re) || re.Package != c.pkg || re.Entry != c.ent || re.Err.Error() != "injected ANE failure" {
			t.Fatalf("error %#v", err)
		}
		if e.Position() != pos {
			t.Fatalf("a failed run moved the position %d → %d", pos, e.Position())
		}
		both(verify(randIDs(r, 8, 400), 5))
		both(feed(randIDs(r, 12, 400)))
	}
	// With entries_by_kv aliases the entry is the package's own name.
	mv := loadTiny(t, bundleSpec{KV: ane.KVV8, AliasKV: true})
	ev := newSession(t, mv)
	failRun(t, 1)
	_, err := ev.Verify([]int{1, 2, 3})
	clearFault()
	wantErr(t, err, "coreai: chunk_L02-03.aimodel entry v8_1k_kvv8: run: injected ANE failure")
}

// Info reports the compute units, the bridge, the MPSGraph versions, the
// chip when known and the KV format; the Model's accessors describe the
// runtime.
func TestModelInfo(t *testing.T) {
	bridge := testBridge(t)
	_, cfg, _ := tiny(t)
	emb := standintest.TinyEmbedding(t)
	rt := writeRuntime(t, bundleSpec{KV: ane.KVV8, KeysT: true, AliasKV: true})
	m, err := Load(rt, Options{Bridge: bridge, Embedding: emb, KV: ane.KVV8, Chip: 17, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	lib, _ := cai.OpenLibrary(bridge)
	osv, _ := lib.OSMPSGraphVersion()
	i := m.Info()
	if i.Compute != "ane" || i.BridgeRelease != lib.Release() || i.OSMPSGraph != osv || osv == "" || i.Chip != "H17" ||
		i.SoC != "m5" || i.CompileMode != 1 || i.KV != ane.KVV8 || !i.KeysT || len(i.Packages) != 3 {
		t.Fatalf("info %+v", i)
	}
	for k, file := range []string{"chunk_L00-01.aimodel", "chunk_L02-03.aimodel", "head_T8.aimodel"} {
		p := i.Packages[k]
		v, _ := lib.PackageMPSGraphVersion(filepath.Join(rt, file))
		if p.File != file || p.Loaded != file || p.Compiled || p.MPSGraph != v || v == "" || p.Bytes <= 0 {
			t.Fatalf("package %d: %+v (MPSGraph %q)", k, p, v)
		}
	}
	if !slices.Equal(m.Ladder(), ane.Ladder{1024, 2048}) || m.Vocab() != cfg.VocabSize || m.Hidden() != cfg.HiddenSize ||
		m.KV() != ane.KVV8 || !slices.Equal(m.Taps(), testTaps) || m.Manifest().Export != "tiny" || m.KVLen(2048) != 2048 {
		t.Fatalf("accessors: ladder %v vocab %d kv %s taps %v", m.Ladder(), m.Vocab(), m.KV(), m.Taps())
	}
	if m.Memory().Weights != m.AllocatedBytes() || m.Memory().Embedding != emb.Bytes() {
		t.Fatalf("memory %+v, allocated %d", m.Memory(), m.AllocatedBytes())
	}
	m2, err := Load(rt, Options{Bridge: bridge, Embedding: emb, KV: ane.KVV8, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if i := m2.Info(); i.Chip != "" || i.CompileMode != 0 { // no chip detected off macOS
		t.Fatalf("info without a chip %+v", i)
	}
}
