package standin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/forgedaemon/forged/ane/coreai/internal/refchunk"
	"github.com/forgedaemon/forged/ane/coreai/internal/refdraft"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/internal/strictjson"
)

// Files of a stand-in package directory, beside functions.txt (the
// bridge's function descriptions, csrc/bridge.c).
const (
	FunctionsFile = "functions.txt"
	ProgramFile   = "standin.json"
	WeightsFile   = "weights.safetensors"
)

// Kinds of stand-in package.
const (
	KindChunk   = "chunk"   // layers of the target: refchunk.Chunk
	KindHead    = "head"    // final norm and LM head: refchunk.Head
	KindDrafter = "drafter" // the DFlash2 drafter's draft/ctx64: refdraft.Program
)

// ProgramFormat is the version string of standin.json.
const ProgramFormat = "forged-standin-1"

// Program is standin.json: what the package computes. A chunk or head
// package reads the target's config from Config and its tensors from
// weights.safetensors (float32, checkpoint names, only this package's);
// a drafter package sits in its drafter directory (config.json,
// model.safetensors, selector.safetensors, as bundle.DrafterModel does)
// and its weights.safetensors holds what the drafter borrows from the
// target: the embedding and the LM head.
type Program struct {
	Format string `json:"format"`
	Kind   string `json:"kind"`
	// Config is the target's config.json (hfconfig.Model.MarshalHF); chunk
	// and head packages.
	Config json.RawMessage `json:"config,omitempty"`
	// Layers [lo, hi], inner Taps (their residuals are outputs; hi is the
	// chunk's y), Pend pending DeltaNet rows and the KV history layout of
	// a chunk package.
	Layers [2]int `json:"layers"`
	Taps   []int  `json:"taps,omitempty"`
	Pend   int    `json:"pend,omitempty"`
	KV     KVSpec `json:"kv"`
	// Entries are the package's functions (chunk: v8_/p64_ entries; head:
	// h8).
	Entries []Entry `json:"entries,omitempty"`
	// Drafter is the drafter package's sidecar values (drafter.Metadata).
	Drafter *DrafterSpec `json:"drafter,omitempty"`
}

// KVSpec is a chunk's host-owned history layout (refchunk.KV).
type KVSpec struct {
	Format string `json:"format,omitempty"` // fp16 | v8 | kv8
	KeysT  bool   `json:"keys_transposed,omitempty"`
}

// Entry is one function: T rows over kv_len history rows (refchunk.Entry).
type Entry struct {
	Name    string `json:"name"`
	Rows    int    `json:"rows"`
	Prefill bool   `json:"prefill,omitempty"`
	KVLen   int    `json:"kv_len,omitempty"`
	// KV is the entry's history layout when it is not the package's (the
	// fp16 entries of a selectable cache's chunk beside its aliased ones).
	KV *KVSpec `json:"kv,omitempty"`
}

// kvSpec is the entry's history layout in a package whose own is def.
func (e Entry) kvSpec(def KVSpec) KVSpec {
	if e.KV != nil {
		return *e.KV
	}
	return def
}

func (e Entry) refchunk() refchunk.Entry {
	return refchunk.Entry{Name: e.Name, Rows: e.Rows, Prefill: e.Prefill, KVLen: e.KVLen}
}

// DrafterSpec is what refdraft needs of the drafter's sidecar.
type DrafterSpec struct {
	W         int     `json:"W"`
	T         int     `json:"T"`
	R         int     `json:"R"`
	RP        int     `json:"RP"`
	FeatScale float64 `json:"feat_scale,omitempty"`
}

func (k KVSpec) refchunk() (refchunk.KV, error) {
	kv := refchunk.KV{KeysT: k.KeysT}
	switch k.Format {
	case "fp16":
	case "v8":
		kv.V8 = true
	case "kv8":
		kv.K8 = true
	default:
		return kv, fmt.Errorf("KV format %q is not fp16, v8 or kv8", k.Format)
	}
	return kv, nil
}

// program computes the functions of one loaded package.
type program interface {
	run(function string, tensors map[string][]byte) error
}

// cache holds the loaded programs by model path. A program is loaded on
// the first run of its package and dropped when the bridge has released
// every model loaded from that path (the load/release events), so an
// unload frees its weights and a rewritten package is read again.
type cache struct {
	mu    sync.Mutex
	refs  map[string]int
	slots map[string]*slot
}

type slot struct {
	mu sync.Mutex
	p  program
}

var programs = &cache{refs: map[string]int{}, slots: map[string]*slot{}}

func (c *cache) loaded(path string) {
	c.mu.Lock()
	c.refs[path]++
	c.mu.Unlock()
}

func (c *cache) released(path string) {
	c.mu.Lock()
	if c.refs[path]--; c.refs[path] <= 0 {
		delete(c.refs, path)
		delete(c.slots, path)
	}
	c.mu.Unlock()
}

// get returns the program of the package at path, loading it once; a
// failed load is not kept, so the next run tries again.
func (c *cache) get(path string) (program, error) {
	c.mu.Lock()
	s := c.slots[path]
	if s == nil {
		s = &slot{}
		c.slots[path] = s
	}
	c.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		p, err := load(path)
		if err != nil {
			return nil, err
		}
		s.p = p
	}
	return s.p, nil
}

// Resident lists, sorted, the package directories whose programs (and
// weights) are in memory: loaded by a run, not yet dropped by the release
// of the last model loaded from them.
func Resident() []string {
	c := programs
	c.mu.Lock()
	defer c.mu.Unlock()
	var paths []string
	for path, s := range c.slots {
		s.mu.Lock()
		if s.p != nil {
			paths = append(paths, path)
		}
		s.mu.Unlock()
	}
	slices.Sort(paths)
	return paths
}

// ReadProgram reads and checks a package's standin.json.
func ReadProgram(pkg string) (*Program, error) {
	file := filepath.Join(pkg, ProgramFile)
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("stand-in package %s: %w (not a stand-in package, or an incomplete one)", pkg, err)
	}
	p, err := ParseProgram(data)
	if err != nil {
		return nil, fmt.Errorf("stand-in package %s: %w", file, err)
	}
	return p, nil
}

// ParseProgram decodes a standin.json strictly (duplicate and unknown keys
// are refused, internal/strictjson) and checks its format.
func ParseProgram(data []byte) (*Program, error) {
	var p Program
	if err := strictjson.Decode(data, &p, strictjson.Options{DisallowUnknownFields: true, MaxSize: 1 << 20}); err != nil {
		return nil, err
	}
	if p.Format != ProgramFormat {
		return nil, fmt.Errorf("format %q, want %q", p.Format, ProgramFormat)
	}
	return &p, nil
}

// load builds the program of the package directory pkg.
func load(pkg string) (program, error) {
	p, err := ReadProgram(pkg)
	if err != nil {
		return nil, err
	}
	weights := filepath.Join(pkg, WeightsFile)
	switch p.Kind {
	case KindChunk, KindHead:
		return loadTarget(pkg, weights, p)
	case KindDrafter:
		return loadDrafter(pkg, weights, p)
	}
	return nil, fmt.Errorf("stand-in package %s: kind %q is not %s, %s or %s",
		filepath.Join(pkg, ProgramFile), p.Kind, KindChunk, KindHead, KindDrafter)
}

func loadTarget(pkg, weights string, p *Program) (program, error) {
	file := filepath.Join(pkg, ProgramFile)
	cfg, err := hfconfig.ParseModel(p.Config)
	if err != nil {
		return nil, fmt.Errorf("stand-in package %s: config: %w", file, err)
	}
	w, err := refchunk.LoadSafetensors(cfg, weights)
	if err != nil {
		return nil, fmt.Errorf("stand-in package: %w", err)
	}
	if p.Kind == KindHead {
		if len(p.Entries) != 1 {
			return nil, fmt.Errorf("stand-in package %s: a head has one entry, not %d", file, len(p.Entries))
		}
		h, err := refchunk.NewHead(w, p.Entries[0].Rows)
		if err != nil {
			return nil, fmt.Errorf("stand-in package %s: %w", weights, err)
		}
		return headProgram{h, p.Entries[0].Name}, nil
	}
	if p.Layers[1] >= cfg.NumHiddenLayers {
		return nil, fmt.Errorf("stand-in package %s: layers %v outside the config's %d", file, p.Layers, cfg.NumHiddenLayers)
	}
	cp := chunkProgram{lo: p.Layers[0], hi: p.Layers[1], entries: map[string]chunkEntry{}}
	chunks := map[refchunk.KV]*refchunk.Chunk{} // one per history layout the entries use
	for _, e := range p.Entries {
		kv, err := e.kvSpec(p.KV).refchunk()
		if err != nil {
			return nil, fmt.Errorf("stand-in package %s: entry %s: %w", file, e.Name, err)
		}
		c := chunks[kv]
		if c == nil {
			if c, err = refchunk.NewChunk(w, p.Layers[0], p.Layers[1], p.Taps, p.Pend, kv); err != nil {
				return nil, fmt.Errorf("stand-in package %s: %w", weights, err)
			}
			chunks[kv] = c
		}
		cp.entries[e.Name] = chunkEntry{c, e.refchunk()}
	}
	return cp, nil
}

type chunkProgram struct {
	lo, hi  int
	entries map[string]chunkEntry
}

// chunkEntry is one function of a chunk package: its entry computed by
// the chunk of the entry's history layout.
type chunkEntry struct {
	c *refchunk.Chunk
	e refchunk.Entry
}

func (p chunkProgram) run(fn string, ts map[string][]byte) error {
	ce, ok := p.entries[fn]
	if !ok {
		return fmt.Errorf("stand-in chunk L%d-%d has no entry %s", p.lo, p.hi, fn)
	}
	return ce.c.Run(ce.e, ts)
}

type headProgram struct {
	h    *refchunk.Head
	name string
}

func (p headProgram) run(fn string, ts map[string][]byte) error {
	if fn != p.name {
		return fmt.Errorf("stand-in head has no entry %s (only %s)", fn, p.name)
	}
	return p.h.Run(ts)
}

// drafterProgram serialises its runs: a dflash.Net is not safe for
// concurrent use. Its Net runs on one thread, which starts no workers, so
// a dropped program needs no Close.
type drafterProgram struct {
	mu sync.Mutex
	p  *refdraft.Program
}

func (p *drafterProgram) run(fn string, ts map[string][]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.p.Run(fn, ts)
}

func loadDrafter(pkg, weights string, p *Program) (program, error) {
	file := filepath.Join(pkg, ProgramFile)
	if p.Drafter == nil {
		return nil, fmt.Errorf("stand-in package %s: kind drafter without \"drafter\"", file)
	}
	dir := filepath.Dir(pkg)
	dw, err := dflash.LoadWeights(dir)
	if err != nil {
		return nil, fmt.Errorf("stand-in drafter package %s: the drafter directory: %w", pkg, err)
	}
	target, err := readTarget(weights, dw.Config.VocabSize, dw.Config.HiddenSize)
	if err != nil {
		return nil, err
	}
	net, err := dflash.NewNet(dw, target, 1)
	if err != nil {
		return nil, fmt.Errorf("stand-in drafter package %s: %w", pkg, err)
	}
	d := p.Drafter
	prog, err := refdraft.New(net, &drafter.Metadata{W: d.W, T: d.T, R: d.R, RP: d.RP, FeatScale: d.FeatScale})
	if err != nil {
		return nil, fmt.Errorf("stand-in package %s: %w", file, err)
	}
	return &drafterProgram{p: prog}, nil
}
