package coreai

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/bundle"
)

// Embedding supplies token embedding rows (the chunk graphs start from
// hidden rows; the host looks them up).
type Embedding interface {
	Row(id int, dst []float32)
	Rows() int
	Cols() int
	Bytes() int64
}

// Options configure Load and Open.
type Options struct {
	Bridge    string    // bridge library path
	Embedding Embedding // token embedding table (required)
	// Ladder restricts the contexts used (nil: every manifest context).
	Ladder []int
	// KV picks the cache format of a selectable bundle ("" = its default).
	KV ane.KVFormat
	// Compute is the compute unit preference (default ANE-preferred).
	Compute cai.Compute
	// Chip overrides detection (0 = DetectChip; a failed detection only
	// skips the compile-mode setting and the per-chip entry aliases).
	Chip cai.Chip
	// CacheDir is the Core AI specialization cache purged on a load
	// failure ("" = paths.CoreAICache()).
	CacheDir string
}

// pkg is one loaded chunk or head package.
type pkg struct {
	*cai.Loaded
	spec *bundle.Chunk // nil for the head
	gdnJ []int
	attJ []int
}

// close releases the package (nil: nothing).
func (p *pkg) close() {
	if p != nil {
		p.Loaded.Close()
	}
}

// Info is what status shows about a loaded model.
type Info struct {
	Compute       string            `json:"compute"`        // compute units asked for: ane, gpu, cpu, default
	BridgeRelease string            `json:"bridge_release"` // cai_release
	OSMPSGraph    string            `json:"os_mpsgraph"`    // the OS's MPSGraph version ("" if the bridge could not tell)
	Chip          string            `json:"chip,omitempty"` // e.g. "H17"; "" when not detected
	SoC           string            `json:"soc,omitempty"`  // entries_by_soc key, e.g. "m5"
	CompileMode   int               `json:"compile_mode,omitempty"`
	KV            ane.KVFormat      `json:"kv"`
	KeysT         bool              `json:"keys_transposed,omitempty"` // key_layout dim_token
	Packages      []cai.PackageInfo `json:"packages"`                  // the chunks in order, then the head
}

// Model is a loaded Core AI runtime: the manifest, the bridge library,
// every chunk and head package with the functions of every context entry,
// and the dimensions read from their descriptions. It holds no session
// state; NewSession allocates one session's buffers. A Model is safe for
// concurrent use, and so are its sessions' methods (each Engine serializes
// its own calls), but one conversation is one Engine.
//
// Closing: Close closes every live session of the model first (their later
// calls fail with "engine is closed"; parked sessions' spill files are
// removed), waiting for a call in progress on a session to return, and then
// releases the functions and packages. Closing the sessions first is
// equally fine.
type Model struct {
	lib    *cai.Library
	dir    string
	man    *bundle.Manifest
	emb    Embedding
	ladder ane.Ladder
	kv     ane.KVFormat
	keysT  bool
	chunks []*pkg
	head   *pkg
	hidden int
	vocab  int
	rot    int
	prefer string // manifest SoC key for entry aliases
	info   Info
	theta  float64 // RoPE θ of new sessions (0: the default 1e7)
	// unwritten lists, per chunk, the DeltaNet state tensors some entry
	// reads but does not write (no *_out): a park keeps both sets of those.
	unwritten map[string]bool
	// LoadTime is how long Load took to load every package.
	LoadTime time.Duration

	// mu serializes every bridge call made for the model's sessions: each
	// cai_run of any session (one ANE; the bridge's thread safety is
	// unverified), and also the creation and release of their buffers and
	// bindings. Host work (filling inputs, converting logits, writing K/V
	// rows) runs outside it, in each session's own goroutine. Runs of
	// every model and drafter on the same bridge library additionally go
	// one at a time through the Library.
	mu sync.Mutex

	smu      sync.Mutex // guards sessions and closed
	sessions map[*Engine]struct{}
	closed   bool
}

// Engine is one session of a Model: it owns every buffer the published
// runtime keeps on the host per conversation (per-call inputs and outputs,
// two DeltaNet state sets, K/V and the mask of the current context) and
// implements ane.Engine. Its methods serialize on the engine; FeatureSink
// is called with the engine busy and must not call back into it.
type Engine struct {
	m   *Model
	own bool // opened with Open: closing the engine closes the model
	mu  sync.Mutex
	// LoadTime is how long Open took (Load plus the session's buffers);
	// for a session from NewSession, the model's LoadTime.
	LoadTime time.Duration
	// FeatureSink, when set, receives the tap features of every block
	// Feed runs, with their positions (the drafter's context).
	FeatureSink func(features []float32, positions []int) error

	rope    []float64              // inverse frequencies
	bufs    map[string]*cai.Buffer // per-call inputs and outputs by key
	state   [2]map[string]*cai.Buffer
	kvBufs  map[string]*cai.Buffer // "k3@chunk1" etc. for the current context
	mask    *cai.Buffer
	maskPos int // mask rows [0, maskPos) are 0
	plans   map[planKey][]*cai.Binding
	par     int
	ctx     int
	pos     int
	pending int // DeltaNet rows the next call commits
	hi      int
	verify  int // rows of a Verify awaiting Accept
	last    lastCall
	gen     uint32
	rowGen  []uint32
	logits  []float32
	parked  *parkRecord // non-nil while parked
	closed  bool
}

type planKey struct {
	entry string
	par   int
	head  bool
}

type lastCall struct {
	prefill bool
	rows    int
}

// Load reads runtimeDir (coreai/manifest.json), opens the bridge at
// opts.Bridge and loads every package with the functions of every entry of
// every ladder context. It allocates no session buffers: NewSession does.
func Load(runtimeDir string, opts Options) (*Model, error) {
	t0 := time.Now()
	if opts.Embedding == nil {
		return nil, errors.New("coreai: Options.Embedding is required")
	}
	man, err := bundle.LoadManifest(runtimeDir)
	if err != nil {
		return nil, err
	}
	if man.T != ane.VerifyRows || man.Pend != ane.VerifyRows {
		return nil, fmt.Errorf("coreai: manifest T=%d pend=%d, this driver needs %d", man.T, man.Pend, ane.VerifyRows)
	}
	if man.Head == nil {
		return nil, errors.New("coreai: manifest.json: head is missing")
	}
	lib, err := cai.OpenLibrary(opts.Bridge)
	if err != nil {
		return nil, err
	}
	m := &Model{lib: lib, dir: runtimeDir, man: man, emb: opts.Embedding, hidden: opts.Embedding.Cols(),
		sessions: map[*Engine]struct{}{}, unwritten: map[string]bool{}}
	if m.kv, m.keysT, err = pickKV(man, opts.KV); err != nil {
		return nil, err
	}
	ctxs := man.Ctxs
	if opts.Ladder != nil {
		ctxs = nil
		for _, c := range opts.Ladder {
			if slices.Contains(man.Ctxs, c) {
				ctxs = append(ctxs, c)
			}
		}
	}
	if m.ladder, err = ane.NewLadder(ctxs); err != nil {
		return nil, fmt.Errorf("coreai: requested contexts %v against manifest %v: %w", opts.Ladder, man.Ctxs, err)
	}
	lo, err := cai.NewLoadOptions(opts.Chip, opts.Compute, opts.CacheDir)
	if err != nil {
		return nil, err
	}
	m.prefer = lo.SoC
	load := func(file, compiled string, spec *bundle.Chunk) (*pkg, error) {
		l, err := cai.LoadFrom(lib, runtimeDir, file, compiled, lo)
		if err != nil {
			return nil, err
		}
		return &pkg{Loaded: l, spec: spec}, nil
	}
	fail := func(err error) (*Model, error) { m.Close(); return nil, err }
	for i := range man.Chunks {
		c := &man.Chunks[i]
		p, err := load(c.File, c.Compiled, c)
		if err != nil {
			return fail(err)
		}
		p.gdnJ, p.attJ = c.GDNJ, c.AttJ
		m.chunks = append(m.chunks, p)
		for _, ctx := range m.ladder {
			for _, canonical := range m.entriesFor(ctx) {
				f, err := p.Model.LoadFunction(physicalEntry(c, canonical, string(m.kv), m.prefer))
				if err != nil {
					return fail(err)
				}
				p.Fns[canonical] = f
			}
		}
	}
	if m.head, err = load(man.Head.File, man.Head.Compiled, nil); err != nil {
		return fail(err)
	}
	hf, err := m.head.Model.LoadFunction("h8")
	if err != nil {
		return fail(err)
	}
	m.head.Fns["h8"] = hf
	if err := m.readDims(); err != nil {
		return fail(err)
	}
	m.findUnwritten()
	osv, _ := lib.OSMPSGraphVersion()
	m.info = Info{Compute: lo.Compute.String(), BridgeRelease: lib.Release(), OSMPSGraph: osv, KV: m.kv, KeysT: m.keysT,
		CompileMode: lo.Mode, SoC: lo.SoC}
	if lo.Chip != 0 {
		m.info.Chip = lo.Chip.String()
	}
	for _, p := range append(slices.Clone(m.chunks), m.head) {
		m.info.Packages = append(m.info.Packages, p.Info)
	}
	m.LoadTime = time.Since(t0)
	return m, nil
}

// Open loads runtimeDir (Load) and allocates one session (NewSession) at
// the smallest context. Closing the engine also closes its model.
func Open(runtimeDir string, opts Options) (*Engine, error) {
	t0 := time.Now()
	m, err := Load(runtimeDir, opts)
	if err != nil {
		return nil, err
	}
	e, err := m.NewSession()
	if err != nil {
		m.Close()
		return nil, err
	}
	e.own = true
	e.LoadTime = time.Since(t0)
	return e, nil
}

// NewSession allocates one session's buffers (per-call inputs and
// outputs, two DeltaNet state sets, K/V and mask at the smallest context).
func (m *Model) NewSession() (*Engine, error) {
	e := &Engine{m: m, bufs: map[string]*cai.Buffer{}, plans: map[planKey][]*cai.Binding{}, LoadTime: m.LoadTime}
	e.mu.Lock()
	defer e.mu.Unlock()
	m.smu.Lock()
	if m.closed {
		m.smu.Unlock()
		return nil, errors.New("coreai: NewSession: the model is closed")
	}
	if m.theta != 0 {
		e.rope = cai.RoPEInv(m.theta, m.rot)
	}
	m.sessions[e] = struct{}{}
	m.smu.Unlock()
	if err := e.allocate(); err != nil {
		e.closeLocked()
		return nil, err
	}
	if err := e.resize(m.ladder.Smallest()); err != nil {
		e.closeLocked()
		return nil, err
	}
	return e, nil
}

// Close closes every live session (see Model) and releases the functions
// and packages. It is idempotent.
func (m *Model) Close() error {
	m.smu.Lock()
	if m.closed {
		m.smu.Unlock()
		return nil
	}
	m.closed = true
	live := slices.Collect(maps.Keys(m.sessions))
	m.smu.Unlock()
	for _, e := range live {
		e.mu.Lock()
		e.closeLocked()
		e.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range append(slices.Clone(m.chunks), m.head) {
		p.close()
	}
	return nil
}

// Sessions is the number of live (open) sessions, parked ones included.
func (m *Model) Sessions() int {
	m.smu.Lock()
	defer m.smu.Unlock()
	return len(m.sessions)
}

// SetRoPE sets θ for the RoPE tables of sessions created afterwards
// (default 1e7, the published value).
func (m *Model) SetRoPE(theta float64) {
	m.smu.Lock()
	m.theta = theta
	m.smu.Unlock()
}

// Manifest is the runtime's manifest.
func (m *Model) Manifest() *bundle.Manifest { return m.man }

// Ladder is the contexts the sessions move over.
func (m *Model) Ladder() ane.Ladder { return m.ladder }

// Vocab is the logits width.
func (m *Model) Vocab() int { return m.vocab }

// Hidden is the hidden size (the embedding width).
func (m *Model) Hidden() int { return m.hidden }

// KV is the cache format the sessions use.
func (m *Model) KV() ane.KVFormat { return m.kv }

// Taps are the layers whose outputs Features returns (the manifest's).
func (m *Model) Taps() []int { return slices.Clone(m.man.Taps) }

// KVLen is the number of history rows the context entry ctx holds.
func (m *Model) KVLen(ctx int) int { return m.kvLen(ctx) }

// Info is what status shows about the model: compute units, bridge and
// MPSGraph versions, chip, KV format and each package loaded.
func (m *Model) Info() Info {
	i := m.info
	i.Packages = slices.Clone(m.info.Packages)
	return i
}

// Memory is what the model holds once, whatever the number of sessions:
// package sizes on disk as weights, and the embedding.
func (m *Model) Memory() ane.MemoryReport {
	r := ane.MemoryReport{Embedding: m.emb.Bytes()}
	for _, p := range m.chunks {
		r.Weights += p.Bytes
	}
	if m.head != nil {
		r.Weights += m.head.Bytes
	}
	return r
}

// AllocatedBytes is what the model itself holds: the package bytes, as
// Memory counts them (the bridge reports no size for a loaded package).
// Each session's buffers are its Engine.AllocatedBytes.
func (m *Model) AllocatedBytes() int64 { return m.Memory().Weights }

// pickKV resolves the manifest's cache layout for the requested format.
func pickKV(man *bundle.Manifest, want ane.KVFormat) (ane.KVFormat, bool, error) {
	layout := man.KVCache.KVLayout
	if man.KVCache.Format == "selectable" {
		name := string(want)
		if name == "" {
			name = man.KVCache.Default
		}
		l, ok := man.KVCache.Formats[name]
		if !ok {
			return "", false, fmt.Errorf("coreai: manifest.json: kv_cache has no format %q", name)
		}
		layout = l
	}
	switch {
	case layout.Format == "" || layout.Format == "fp16":
		if want != "" && want != ane.KVFP16 {
			return "", false, fmt.Errorf("coreai: the bundle's KV cache is fp16, %q was requested", want)
		}
		return ane.KVFP16, layout.KeyLayout == "dim_token", nil
	case layout.Format == "v8" && layout.Keys == "float16" && layout.Values == "int8":
		if want != "" && want != ane.KVV8 {
			return "", false, fmt.Errorf("coreai: the bundle's KV cache is v8, %q was requested", want)
		}
		return ane.KVV8, layout.KeyLayout == "dim_token", nil
	case layout.Format == "kv8" && layout.Keys == "int8" && layout.Values == "int8":
		if want != "" && want != ane.KVKV8 {
			return "", false, fmt.Errorf("coreai: the bundle's KV cache is kv8, %q was requested", want)
		}
		return ane.KVKV8, layout.KeyLayout == "dim_token", nil
	}
	return "", false, fmt.Errorf("coreai: manifest.json: kv_cache format %q (keys %q, values %q) is not supported",
		layout.Format, layout.Keys, layout.Values)
}

// entriesFor lists the canonical entries a context uses: v8 always, p64
// when the bundle has prefill for it with the same KV length.
func (m *Model) entriesFor(ctx int) []string {
	names := []string{bundle.EntryName("v8", ctx)}
	if m.hasPrefill(ctx) {
		names = append(names, bundle.EntryName("p64", ctx))
	}
	return names
}

func (m *Model) hasPrefill(ctx int) bool {
	k := strconv.Itoa(ctx)
	return m.man.TP == ane.PrefillRows && slices.Contains(m.man.PCtxs, ctx) && m.man.PKVLen[k] == m.man.KVLen[k]
}

func (m *Model) kvLen(ctx int) int { return m.man.KVLen[strconv.Itoa(ctx)] }

// readDims takes hidden size, vocab and RoPE width from the descriptions.
func (m *Model) readDims() error {
	hd := m.head.Fns["h8"].Desc
	x, ok1 := hd.Find("x")
	lg, ok2 := hd.Find("logits")
	if !ok1 || !ok2 || len(lg.Shape) != 2 || len(x.Shape) != 4 {
		return errors.New("coreai: head h8 lacks x (1,H,1,8) or logits (8,V)")
	}
	if int(x.Shape[1]) != m.hidden {
		return fmt.Errorf("coreai: head hidden size %d, embedding width %d", x.Shape[1], m.hidden)
	}
	m.vocab = int(lg.Shape[1])
	f := m.chunks[0].Fns[bundle.EntryName("v8", m.ladder.Smallest())]
	cs, ok := f.Desc.Find("cos")
	if !ok || len(cs.Shape) != 2 {
		return fmt.Errorf("coreai: %s has no cos (T, rot) input", f.Desc.Name)
	}
	m.rot = int(cs.Shape[1])
	return nil
}

// findUnwritten records the DeltaNet state tensors that some entry reads
// without writing their *_out: the other state set of those is not
// overwritten by the next call, so a park must keep both sets.
func (m *Model) findUnwritten() {
	for i, c := range m.chunks {
		for _, f := range c.Fns {
			for _, t := range f.Desc.Inputs {
				if base, ok := stateName(t.Name); ok {
					if _, out := f.Desc.Find(base + "_out"); !out {
						m.unwritten["c"+strconv.Itoa(i)+"/"+base] = true
					}
				}
			}
		}
	}
}

// SetRoPE sets θ for the RoPE tables (default 1e7, the published value).
func (e *Engine) SetRoPE(theta float64) {
	e.mu.Lock()
	e.rope = cai.RoPEInv(theta, e.m.rot)
	e.mu.Unlock()
}

// Model is the loaded runtime this session belongs to.
func (e *Engine) Model() *Model { return e.m }

// Close releases the session's bindings and buffers (and a parked
// session's spill file). An engine from Open also closes its model.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closeLocked()
	e.mu.Unlock()
	if e.own {
		e.m.Close()
	}
	return nil
}

// closeLocked releases everything the session owns and leaves the model's
// session set; the engine's mutex is held.
func (e *Engine) closeLocked() {
	if e.closed {
		return
	}
	e.closed = true
	e.releaseBridge()
	e.discardParked()
	e.m.smu.Lock()
	delete(e.m.sessions, e)
	e.m.smu.Unlock()
}

// releaseBridge releases every binding and buffer the session owns.
func (e *Engine) releaseBridge() {
	e.dropPlans()
	e.m.release(e.buffers()...)
	e.bufs, e.state, e.kvBufs, e.mask = map[string]*cai.Buffer{}, [2]map[string]*cai.Buffer{}, nil, nil
}

func (e *Engine) dropPlans() {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	for k, bs := range e.plans {
		for _, b := range bs {
			b.Close()
		}
		delete(e.plans, k)
	}
}

// Bridge calls of the model's sessions, under the model's mutex.

func (m *Model) newBuffer(t cai.TensorDesc) (*cai.Buffer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lib.NewBufferFor(t)
}

func (m *Model) release(bufs ...*cai.Buffer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range bufs {
		b.Close()
	}
}

func (m *Model) bind(f *cai.Function, in, out map[string]*cai.Buffer) (*cai.Binding, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return f.Bind(in, out, nil)
}

func (m *Model) run(plan []*cai.Binding) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.lib.Run(plan, nil); err != nil {
		return err
	}
	return nil
}

// AllocatedBytes is what the bridge reports for the session's live
// buffers (cai_buffer_nbytes): 0 while parked or closed.
func (e *Engine) AllocatedBytes() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	var n int64
	for _, b := range e.buffers() {
		n += b.NBytes()
	}
	return n
}

// buffers lists every live buffer of the session.
func (e *Engine) buffers() []*cai.Buffer {
	var all []*cai.Buffer
	for _, m := range []map[string]*cai.Buffer{e.bufs, e.state[0], e.state[1], e.kvBufs} {
		for _, b := range m {
			all = append(all, b)
		}
	}
	if e.mask != nil {
		all = append(all, e.mask)
	}
	return all
}

// Position implements ane.Engine.
func (e *Engine) Position() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pos
}

// Context implements ane.Engine.
func (e *Engine) Context() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ctx
}

// Vocab is the logits width.
func (e *Engine) Vocab() int { return e.m.vocab }

// Ladder is the contexts this engine moves over.
func (e *Engine) Ladder() ane.Ladder { return e.m.ladder }

var _ ane.Engine = (*Engine)(nil)

// physicalEntry maps a canonical entry name (v8_8k) through the chunk's
// KV-format and chip aliases.
func physicalEntry(c *bundle.Chunk, canonical string, kv string, soc string) string {
	name := canonical
	if m, ok := c.EntriesByKV[kv]; ok {
		if p, ok := m[canonical]; ok {
			name = p
		}
	}
	if m, ok := c.EntriesBySoC[soc]; ok {
		if p, ok := m[canonical]; ok {
			name = p
		}
	}
	return name
}
