package standin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/internal/refchunk"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/layout"
	"github.com/forgedaemon/forged/bundle"
)

// RuntimeOptions lay out a Core AI runtime directory.
type RuntimeOptions struct {
	// Contexts are the context entries (default [8192]); ChunkLayers the
	// layers per chunk package (default 4; it must divide the layers).
	Contexts    []int
	ChunkLayers int
	// KV is the cache format (default v8, as rebuild.Assemble's manifest);
	// KeysT stores keys transposed (key_layout dim_token).
	KV    ane.KVFormat
	KeysT bool
	// Taps are the feature layers (default bundle.SpreadTaps).
	Taps []int
	// Prefill adds the 64-row p64_ entries (pctxs, TP = 64).
	Prefill bool
	// Export is the manifest's export name (the drafter pairing rules
	// compare it with the drafter sidecar's).
	Export string
	// Selectable makes the cache selectable between fp16 (the default)
	// and KV (v8 or kv8), as a selectable bundle publishes it: kv_cache
	// {"format": "selectable", "default": "fp16", "formats": …}; each
	// chunk package holds the fp16 entries under their canonical names
	// and the KV entries as <name>_kv<KV>, the names its entries_by_kv
	// gives them (fp16 maps each name to itself).
	Selectable bool
}

// Names of the runtime's packages and their entries.
const (
	HeadFile  = "head_T8.aimodel"
	HeadEntry = "h8"
	pend      = bundle.VerifyRows // pending DeltaNet rows (published pend)
	prefillTP = 64
)

func (o *RuntimeOptions) defaults(cfg *hfconfig.Model) error {
	if len(o.Contexts) == 0 {
		o.Contexts = []int{8192}
	}
	if o.ChunkLayers == 0 {
		o.ChunkLayers = 4
	}
	if o.KV == "" {
		o.KV = ane.KVV8
	}
	if o.Taps == nil {
		o.Taps = bundle.SpreadTaps(cfg.NumHiddenLayers)
	}
	if o.ChunkLayers < 1 || cfg.NumHiddenLayers%o.ChunkLayers != 0 {
		return fmt.Errorf("standin: %d layers do not split into chunks of %d", cfg.NumHiddenLayers, o.ChunkLayers)
	}
	switch o.KV {
	case ane.KVFP16, ane.KVV8, ane.KVKV8:
	default:
		return fmt.Errorf("standin: KV format %q is not fp16, v8 or kv8", o.KV)
	}
	if o.Selectable && o.KV == ane.KVFP16 {
		return fmt.Errorf("standin: a selectable cache offers v8 or kv8 beside fp16, not fp16 alone")
	}
	return nil
}

// kv is the history layout of o's KV format; fp16 with o's key layout.
func (o *RuntimeOptions) kv() KVSpec     { return KVSpec{Format: string(o.KV), KeysT: o.KeysT} }
func (o *RuntimeOptions) fp16KV() KVSpec { return KVSpec{Format: string(ane.KVFP16), KeysT: o.KeysT} }

// aliasName is the package's name for a selectable cache's KV entry.
func (o *RuntimeOptions) aliasName(canonical string) string { return canonical + "_kv" + string(o.KV) }

// kvLayout is the manifest's description of a cache format.
func kvLayout(f ane.KVFormat, keysT bool) bundle.KVLayout {
	f16, tokenHead := "float16", "token_head"
	l := bundle.KVLayout{Format: "fp16", Keys: "float16", Values: "float16"}
	switch f {
	case ane.KVV8:
		l = bundle.KVLayout{Format: "v8", Keys: "float16", Values: "int8", Scales: &f16, ScaleGranularity: &tokenHead, StableAttention: true}
	case ane.KVKV8:
		l = bundle.KVLayout{Format: "kv8", Keys: "int8", Values: "int8", Scales: &f16, ScaleGranularity: &tokenHead}
	}
	if keysT {
		l.KeyLayout = "dim_token"
	}
	return l
}

// Layout is the runtime manifest of cfg laid out by o, as the published
// builder writes it (docs/COREAI.md): chunks of ChunkLayers named
// chunk_LAA-BB.aimodel with v8_<N>k (and p64_<N>k) entries, inner taps,
// DeltaNet and attention indices and the graph's numerics (and, for a
// Selectable cache, entries_by_kv), the head head_T8.aimodel, kv_len per
// context by bundle.KVLenFor. Package sizes (mb) are left for
// WriteRuntime. The manifest passes Validate and ValidateLayers.
func Layout(cfg *hfconfig.Model, o RuntimeOptions) (*bundle.Manifest, error) {
	if err := o.defaults(cfg); err != nil {
		return nil, err
	}
	L := cfg.NumHiddenLayers
	widths := []int{bundle.VerifyRows}
	man := &bundle.Manifest{Version: bundle.ManifestVersion, T: bundle.VerifyRows, Pend: pend, Taps: slices.Clone(o.Taps),
		Ctxs: slices.Clone(o.Contexts), PCtxs: []int{}, KVLen: map[string]int{}, PKVLen: map[string]int{}, Export: o.Export,
		KVCache: bundle.KVCache{KVLayout: kvLayout(o.KV, o.KeysT)}, Head: &bundle.Head{File: HeadFile}}
	if o.Selectable {
		man.KVCache = bundle.KVCache{KVLayout: bundle.KVLayout{Format: "selectable"}, Default: string(ane.KVFP16),
			Formats: map[string]bundle.KVLayout{string(ane.KVFP16): kvLayout(ane.KVFP16, o.KeysT), string(o.KV): kvLayout(o.KV, o.KeysT)}}
	}
	if o.Prefill {
		man.TP, man.PCtxs = prefillTP, slices.Clone(o.Contexts)
		widths = append(widths, prefillTP)
	}
	for _, c := range o.Contexts {
		kv := bundle.KVLenFor(c, pend, widths...)
		man.KVLen[strconv.Itoa(c)] = kv
		if o.Prefill {
			man.PKVLen[strconv.Itoa(c)] = kv
		}
	}
	for lo := 0; lo < L; lo += o.ChunkLayers {
		hi := lo + o.ChunkLayers - 1
		ch := bundle.Chunk{File: bundle.ChunkFile(lo, hi), Layers: [2]int{lo, hi},
			Numerics: map[string]any{"SILU": "tanh", "GDN_SQ": float64(refchunk.GDNSQ), "GDN_SV": float64(refchunk.GDNSV)}}
		for _, e := range entries(man) {
			ch.Entries = append(ch.Entries, e.Name)
		}
		if o.Selectable {
			fp16, aliased := map[string]string{}, map[string]string{}
			for _, e := range ch.Entries {
				fp16[e], aliased[e] = e, o.aliasName(e)
			}
			ch.EntriesByKV = map[string]map[string]string{string(ane.KVFP16): fp16, string(o.KV): aliased}
		}
		ch.EntriesCtx = [][]int{slices.Clone(o.Contexts)}
		if o.Prefill {
			ch.EntriesCtx = append(ch.EntriesCtx, slices.Clone(o.Contexts))
		}
		for l := lo; l <= hi; l++ {
			if cfg.IsFullAttention(l) {
				ch.AttJ = append(ch.AttJ, l-lo)
			} else {
				ch.GDNJ = append(ch.GDNJ, l-lo)
			}
			if slices.Contains(o.Taps, l) && l != hi {
				ch.Taps = append(ch.Taps, l)
			}
		}
		man.Chunks = append(man.Chunks, ch)
	}
	if err := man.Validate(); err != nil {
		return nil, err
	}
	if err := man.ValidateLayers(L); err != nil {
		return nil, err
	}
	return man, nil
}

// WriteRuntime writes a Core AI runtime directory for cfg into dir:
// manifest.json (Layout) and one stand-in package per chunk and for the
// head, each with functions.txt (the functions refchunk lays out for its
// entries), standin.json and weights.safetensors holding only that
// package's tensors of tensors (float32, checkpoint names; the head takes
// lm_head.weight, or the embedding for a tied head). Each package's mb is
// the size of what was written. coreai.Open loads the result over an
// attached stand-in bridge.
func WriteRuntime(dir string, cfg *hfconfig.Model, tensors map[string][]float32, o RuntimeOptions) (*bundle.Manifest, error) {
	return writeRuntime(dir, cfg, tensors, o, true)
}

// WriteLayout writes the runtime directory WriteRuntime writes, without
// weights: manifest.json and each package's functions.txt, no
// standin.json or weights.safetensors. Runs of its packages are computed
// by Handle handlers only (a benchmark of the driver's host work at shapes
// too large to hold weights for, say); mb is the size of functions.txt.
func WriteLayout(dir string, cfg *hfconfig.Model, o RuntimeOptions) (*bundle.Manifest, error) {
	return writeRuntime(dir, cfg, nil, o, false)
}

func writeRuntime(dir string, cfg *hfconfig.Model, tensors map[string][]float32, o RuntimeOptions, programs bool) (*bundle.Manifest, error) {
	if err := o.defaults(cfg); err != nil {
		return nil, err
	}
	man, err := Layout(cfg, o)
	if err != nil {
		return nil, err
	}
	// The stored config never ties the head: its weights.safetensors holds
	// lm_head.weight either way. A layout stores none (and cfg need not be
	// a complete config.json: refchunk.Published27B is not).
	var cfgJSON []byte
	if programs {
		untied := *cfg
		untied.TieWordEmbeddings = false
		if cfgJSON, err = untied.MarshalHF(); err != nil {
			return nil, err
		}
	}
	for i := range man.Chunks {
		ch := &man.Chunks[i]
		lo, hi := ch.Layers[0], ch.Layers[1]
		p := &Program{Kind: KindChunk, Config: cfgJSON, Layers: ch.Layers, Taps: ch.Taps, Pend: pend, KV: o.kv(), Entries: packageEntries(man, &o)}
		layouts := map[KVSpec]*refchunk.Chunk{}
		fns := map[string][]refchunk.Spec{}
		for _, e := range p.Entries {
			kv := e.kvSpec(p.KV)
			if layouts[kv] == nil {
				rkv, err := kv.refchunk()
				if err != nil {
					return nil, err
				}
				layouts[kv] = refchunk.NewLayout(cfg, lo, hi, ch.Taps, pend, rkv)
			}
			fns[e.Name] = layouts[kv].Tensors(e.refchunk())
		}
		var want []weightTensor
		for l := lo; l <= hi; l++ {
			for _, s := range layout.LayerTensors(cfg, l) {
				want = append(want, weightTensor{s.Name, s.Shape})
			}
		}
		if !programs {
			p = nil
		}
		n, err := writePackage(filepath.Join(dir, ch.File), fns, p, tensors, want)
		if err != nil {
			return nil, err
		}
		ch.MB = mb(n)
	}
	head := refchunk.NewHeadLayout(cfg, bundle.VerifyRows)
	src := headTensors(tensors, cfg.TieWordEmbeddings, layout.NormName)
	V, H := cfg.VocabSize, cfg.HiddenSize
	hp := &Program{Kind: KindHead, Config: cfgJSON, Entries: []Entry{{Name: HeadEntry, Rows: bundle.VerifyRows}}}
	if !programs {
		hp = nil
	}
	n, err := writePackage(filepath.Join(dir, HeadFile), map[string][]refchunk.Spec{HeadEntry: head.Tensors()},
		hp, src, []weightTensor{{layout.NormName, []int{H}}, {layout.HeadName, []int{V, H}}})
	if err != nil {
		return nil, err
	}
	man.Head.MB = mb(n)
	data, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, bundle.ManifestFile), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	return man, nil
}

// headTensors picks names and lm_head.weight from tensors; a missing head
// is the embedding when tied is set.
func headTensors(tensors map[string][]float32, tied bool, names ...string) map[string][]float32 {
	src := map[string][]float32{}
	for _, n := range append(names, layout.HeadName) {
		if v, ok := tensors[n]; ok {
			src[n] = v
		}
	}
	if v, ok := tensors[layout.EmbedName]; ok && tied && src[layout.HeadName] == nil {
		src[layout.HeadName] = v
	}
	return src
}

// entries are a chunk's canonical entries: per context the 8-row
// v8_<N>k entry and, for the prefill contexts, the TP-row p64_<N>k entry,
// over kv_len history rows.
func entries(man *bundle.Manifest) []Entry {
	var es []Entry
	for _, c := range man.Ctxs {
		kv := man.KVLen[strconv.Itoa(c)]
		es = append(es, Entry{Name: bundle.EntryName("v8", c), Rows: man.T, KVLen: kv})
		if slices.Contains(man.PCtxs, c) {
			es = append(es, Entry{Name: bundle.EntryName("p64", c), Rows: man.TP, Prefill: true, KVLen: man.PKVLen[strconv.Itoa(c)]})
		}
	}
	return es
}

// packageEntries are the functions of a chunk package laid out by o: its
// canonical entries, in o's KV format; for a selectable cache those in
// fp16 and, under their aliases, the same in o's format.
func packageEntries(man *bundle.Manifest, o *RuntimeOptions) []Entry {
	es := entries(man)
	if !o.Selectable {
		return es
	}
	fp16 := o.fp16KV()
	var out []Entry
	for _, e := range es {
		f := e
		f.KV = &fp16
		e.Name = o.aliasName(e.Name)
		out = append(out, f, e)
	}
	return out
}

// mb is a package size in MiB, to the kilobyte.
func mb(bytes int64) float64 { return float64(bytes*1000/(1<<20)) / 1000 }
