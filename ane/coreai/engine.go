package coreai

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/forgedaemon/forged/ane"
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

// Options configure Open.
type Options struct {
	Bridge    string    // bridge library path
	Embedding Embedding // token embedding table (required)
	// Ladder restricts the contexts used (nil: every manifest context).
	Ladder []int
	// KV picks the cache format of a selectable bundle ("" = its default).
	KV ane.KVFormat
	// Compute is the compute unit preference (default ANE-preferred).
	Compute Compute
	// Chip overrides detection (0 = DetectChip; a failed detection only
	// skips the compile-mode setting and the per-chip entry aliases).
	Chip Chip
	// CacheDir is the Core AI specialization cache purged on a load
	// failure ("" = DefaultCacheDir()).
	CacheDir string
}

// pkg is one loaded chunk or head package.
type pkg struct {
	spec  *bundle.Chunk // nil for the head
	path  string
	bytes int64
	model *Model
	fns   map[string]*Function // canonical entry name → function
	gdnJ  []int
	attJ  []int
}

// Engine is the Core AI chunk driver for one session: it owns every
// buffer the published runtime keeps on the host and implements ane.Engine.
type Engine struct {
	lib    *Library
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
	rope   []float64 // inverse frequencies
	prefer string    // manifest SoC key for entry aliases
	// LoadTime is how long Open took to load every package.
	LoadTime time.Duration
	// FeatureSink, when set, receives the tap features of every block
	// Feed runs, with their positions (the drafter's context).
	FeatureSink func(features []float32, positions []int) error

	bufs    map[string]*Buffer // per-call inputs and outputs by key
	state   [2]map[string]*Buffer
	kvBufs  map[string]*Buffer // "k3@chunk1" etc. for the current context
	mask    *Buffer
	maskPos int // mask rows [0, maskPos) are 0
	plans   map[planKey][]*Binding
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

// Open loads runtimeDir (coreai/manifest.json and its packages) through
// the bridge at opts.Bridge and allocates the session's buffers at the
// smallest context. Every entry of every context is loaded up front.
func Open(runtimeDir string, opts Options) (*Engine, error) {
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
	lib, err := OpenLibrary(opts.Bridge)
	if err != nil {
		return nil, err
	}
	e := &Engine{lib: lib, man: man, emb: opts.Embedding, bufs: map[string]*Buffer{}, plans: map[planKey][]*Binding{},
		hidden: opts.Embedding.Cols()}
	if e.kv, e.keysT, err = pickKV(man, opts.KV); err != nil {
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
	if e.ladder, err = ane.NewLadder(ctxs); err != nil {
		return nil, fmt.Errorf("coreai: requested contexts %v against manifest %v: %w", opts.Ladder, man.Ctxs, err)
	}
	lo, err := newLoadOptions(opts.Chip, opts.Compute, opts.CacheDir)
	if err != nil {
		return nil, err
	}
	e.prefer = lo.soc
	load := func(file, compiled string, spec *bundle.Chunk) (*pkg, error) {
		p, err := loadPackage(lib, runtimeDir, file, compiled, lo)
		if p != nil {
			p.spec = spec
		}
		return p, err
	}
	fail := func(err error) (*Engine, error) { e.Close(); return nil, err }
	for i := range man.Chunks {
		c := &man.Chunks[i]
		p, err := load(c.File, c.Compiled, c)
		if err != nil {
			return fail(err)
		}
		p.gdnJ, p.attJ = c.GDNJ, c.AttJ
		e.chunks = append(e.chunks, p)
		for _, ctx := range e.ladder {
			for _, canonical := range e.entriesFor(ctx) {
				f, err := p.model.LoadFunction(physicalEntry(c, canonical, string(e.kv), e.prefer))
				if err != nil {
					return fail(err)
				}
				p.fns[canonical] = f
			}
		}
	}
	if e.head, err = load(man.Head.File, man.Head.Compiled, nil); err != nil {
		return fail(err)
	}
	hf, err := e.head.model.LoadFunction("h8")
	if err != nil {
		return fail(err)
	}
	e.head.fns["h8"] = hf
	if err := e.readDims(); err != nil {
		return fail(err)
	}
	if err := e.allocate(); err != nil {
		return fail(err)
	}
	if err := e.resize(e.ladder.Smallest()); err != nil {
		return fail(err)
	}
	e.LoadTime = time.Since(t0)
	return e, nil
}

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
func (e *Engine) entriesFor(ctx int) []string {
	names := []string{bundle.EntryName("v8", ctx)}
	if e.hasPrefill(ctx) {
		names = append(names, bundle.EntryName("p64", ctx))
	}
	return names
}

func (e *Engine) hasPrefill(ctx int) bool {
	k := strconv.Itoa(ctx)
	return e.man.TP == ane.PrefillRows && slices.Contains(e.man.PCtxs, ctx) && e.man.PKVLen[k] == e.man.KVLen[k]
}

func (e *Engine) kvLen(ctx int) int { return e.man.KVLen[strconv.Itoa(ctx)] }

// readDims takes hidden size, vocab and RoPE width from the descriptions.
func (e *Engine) readDims() error {
	hd := e.head.fns["h8"].Desc
	x, ok1 := hd.Find("x")
	lg, ok2 := hd.Find("logits")
	if !ok1 || !ok2 || len(lg.Shape) != 2 || len(x.Shape) != 4 {
		return errors.New("coreai: head h8 lacks x (1,H,1,8) or logits (8,V)")
	}
	if int(x.Shape[1]) != e.hidden {
		return fmt.Errorf("coreai: head hidden size %d, embedding width %d", x.Shape[1], e.hidden)
	}
	e.vocab = int(lg.Shape[1])
	f := e.chunks[0].fns[bundle.EntryName("v8", e.ladder.Smallest())]
	cs, ok := f.Desc.Find("cos")
	if !ok || len(cs.Shape) != 2 {
		return fmt.Errorf("coreai: %s has no cos (T, rot) input", f.Desc.Name)
	}
	e.rot = int(cs.Shape[1])
	return nil
}

// SetRoPE sets θ for the RoPE tables (default 1e7, the published value).
func (e *Engine) SetRoPE(theta float64) { e.rope = ropeInv(theta, e.rot) }

// Close releases every binding, buffer, function and model.
func (e *Engine) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	e.dropPlans()
	for _, b := range e.bufs {
		b.Close()
	}
	for _, s := range e.state {
		for _, b := range s {
			b.Close()
		}
	}
	for _, b := range e.kvBufs {
		b.Close()
	}
	if e.mask != nil {
		e.mask.Close()
	}
	for _, p := range append(slices.Clone(e.chunks), e.head) {
		p.close()
	}
	return nil
}

func (e *Engine) dropPlans() {
	for k, bs := range e.plans {
		for _, b := range bs {
			b.Close()
		}
		delete(e.plans, k)
	}
}

// Position implements ane.Engine.
func (e *Engine) Position() int { return e.pos }

// Context implements ane.Engine.
func (e *Engine) Context() int { return e.ctx }

// Vocab is the logits width.
func (e *Engine) Vocab() int { return e.vocab }

// Ladder is the contexts this engine moves over.
func (e *Engine) Ladder() ane.Ladder { return e.ladder }

var _ ane.Engine = (*Engine)(nil)
