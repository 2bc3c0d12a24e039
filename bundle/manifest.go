package bundle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/internal/strictjson"
)

// ManifestFile is the Core AI runtime manifest, relative to the runtime root.
const ManifestFile = "manifest.json"

// ManifestVersion is the only manifest version this code understands.
const ManifestVersion = "coreai1"

// VerifyRows is the verify/decode width T every chunk entry must have.
const VerifyRows = 8

// ANEMaxRows caps the concatenated [history | block] axis of one entry.
const ANEMaxRows = 65536

// Manifest is coreai/manifest.json as qwen38_coreai_build.py writes it.
// Fields the runtime does not read (numerics, mb) are kept loosely typed.
type Manifest struct {
	Version string         `json:"version"`
	T       int            `json:"T"`
	TP      int            `json:"TP"`
	Pend    int            `json:"pend"`
	Taps    []int          `json:"taps"`
	Ctxs    []int          `json:"ctxs"`
	PCtxs   []int          `json:"pctxs"`
	KVLen   map[string]int `json:"kv_len"`
	PKVLen  map[string]int `json:"pkv_len"`
	Export  string         `json:"export"`
	KVCache KVCache        `json:"kv_cache"`
	Chunks  []Chunk        `json:"chunks"`
	Head    *Head          `json:"head"`
}

// KVCache is either one layout or {"format": "selectable", "default", "formats"}.
type KVCache struct {
	KVLayout
	Default string              `json:"default,omitempty"`
	Formats map[string]KVLayout `json:"formats,omitempty"`
}

// KVLayout describes one KV cache format.
type KVLayout struct {
	Format           string  `json:"format"`
	Keys             string  `json:"keys,omitempty"`
	Values           string  `json:"values,omitempty"`
	Scales           *string `json:"scales,omitempty"`
	ScaleGranularity *string `json:"scale_granularity,omitempty"`
	StableAttention  bool    `json:"stable_attention,omitempty"`
	KeyLayout        string  `json:"key_layout,omitempty"`
}

// Chunk is one chunk package covering layers [Layers[0], Layers[1]].
type Chunk struct {
	File         string                       `json:"file"`
	Layers       [2]int                       `json:"layers"`
	Entries      []string                     `json:"entries"`
	GDNJ         []int                        `json:"gdn_j,omitempty"`
	AttJ         []int                        `json:"att_j,omitempty"`
	Taps         []int                        `json:"taps,omitempty"`
	MB           float64                      `json:"mb,omitempty"`
	Numerics     map[string]any               `json:"numerics,omitempty"`
	EntriesCtx   [][]int                      `json:"entries_ctx,omitempty"`
	EntriesByKV  map[string]map[string]string `json:"entries_by_kv,omitempty"`
	EntriesBySoC map[string]map[string]string `json:"entries_by_soc,omitempty"`
	Compiled     string                       `json:"compiled,omitempty"`
}

// Head is the final norm + lm_head package.
type Head struct {
	File     string  `json:"file"`
	MB       float64 `json:"mb,omitempty"`
	Compiled string  `json:"compiled,omitempty"`
}

// ParseManifest decodes and validates manifest.json. Duplicate keys are
// errors; unknown fields are tolerated because the builder adds fields the
// runtime does not need.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := strictjson.Decode(data, &m, strictjson.Options{}); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// LoadManifest reads and validates runtimeDir/manifest.json.
func LoadManifest(runtimeDir string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(runtimeDir, ManifestFile))
	if err != nil {
		return nil, err
	}
	return ParseManifest(data)
}

// KVLenFor is the KV capacity of an entry of context ctx: ctx rows, except
// that the ANE caps [history | block] at 65536, so the history loses the
// widest block (pending rows or prefill width).
func KVLenFor(ctx, pend int, widths ...int) int {
	if ctx > ANEMaxRows {
		return ctx
	}
	widest := pend
	for _, w := range widths {
		widest = max(widest, w)
	}
	return min(ctx, ANEMaxRows-widest)
}

// EntryName returns the physical entry name for a width prefix and context:
// EntryName("v8", 8192) == "v8_8k".
func EntryName(prefix string, ctx int) string {
	return prefix + "_" + strconv.Itoa(ctx/1024) + "k"
}

func manErr(field, format string, args ...any) error {
	return fmt.Errorf("manifest.json: %s: %s", field, fmt.Sprintf(format, args...))
}

// Validate checks the manifest on its own: version, T, contexts, kv_len,
// KV cache layout, chunk order and contiguity from layer 0, entries, head.
// ValidateLayers additionally checks coverage of a model's layer count.
func (m *Manifest) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if m.Version != ManifestVersion {
		add(manErr("version", "is %q, want %q", m.Version, ManifestVersion))
	}
	if m.T != VerifyRows {
		add(manErr("T", "is %d, want %d", m.T, VerifyRows))
	}
	if m.Pend <= 0 {
		add(manErr("pend", "is %d, want a positive row count", m.Pend))
	}
	if len(m.PCtxs) > 0 && m.TP <= 0 {
		add(manErr("TP", "is %d but pctxs are listed", m.TP))
	}
	add(ascendingCtxs("ctxs", m.Ctxs, true))
	add(ascendingCtxs("pctxs", m.PCtxs, false))
	widths := []int{m.T}
	if len(m.PCtxs) > 0 {
		widths = append(widths, m.TP)
	}
	add(checkKVLen("kv_len", m.KVLen, m.Ctxs, m.Pend, widths))
	if len(m.PCtxs) > 0 || len(m.PKVLen) > 0 {
		add(checkKVLen("pkv_len", m.PKVLen, m.PCtxs, m.Pend, widths))
	}
	add(m.KVCache.validate())
	add(m.validateChunks())
	if m.Head == nil || m.Head.File == "" {
		add(manErr("head", "must be an object with \"file\""))
	} else if err := CheckPath(m.Head.File); err != nil {
		add(manErr("head.file", "%v", err))
	}
	return errors.Join(errs...)
}

func ascendingCtxs(field string, ctxs []int, required bool) error {
	if required && len(ctxs) == 0 {
		return manErr(field, "is empty")
	}
	for i, c := range ctxs {
		if c <= 0 || c%1024 != 0 {
			return manErr(fmt.Sprintf("%s[%d]", field, i), "%d is not a positive multiple of 1024", c)
		}
		if i > 0 && c <= ctxs[i-1] {
			return manErr(field, "must be strictly ascending")
		}
	}
	return nil
}

func checkKVLen(field string, got map[string]int, ctxs []int, pend int, widths []int) error {
	if len(got) != len(ctxs) {
		return manErr(field, "has %d entries for %d contexts", len(got), len(ctxs))
	}
	for _, c := range ctxs {
		key := strconv.Itoa(c)
		v, ok := got[key]
		want := KVLenFor(c, pend, widths...)
		if !ok {
			return manErr(field, "has no entry for context %d", c)
		}
		if v != want {
			return manErr(field+"."+key, "is %d, want min(ctx, 65536 - widest block) = %d", v, want)
		}
	}
	return nil
}

func (c *KVCache) validate() error {
	if c.Format != "selectable" {
		if c.Default != "" || c.Formats != nil {
			return manErr("kv_cache", "\"default\"/\"formats\" only belong to format \"selectable\"")
		}
		return c.KVLayout.validate("kv_cache")
	}
	if len(c.Formats) == 0 {
		return manErr("kv_cache.formats", "selectable cache lists no formats")
	}
	if _, ok := c.Formats[c.Default]; !ok {
		return manErr("kv_cache.default", "%q is not one of the formats %v", c.Default, sortedKeys(c.Formats))
	}
	for _, name := range sortedKeys(c.Formats) {
		l := c.Formats[name]
		if l.Format != name {
			return manErr("kv_cache.formats."+name, "format is %q, want %q", l.Format, name)
		}
		if err := l.validate("kv_cache.formats." + name); err != nil {
			return err
		}
	}
	return nil
}

// validate checks a layout against the three formats the builder knows:
// fp16 (FP16 K and V), v8 (FP16 K, INT8 V with per token-head FP16
// scales) and kv8 (INT8 K and V).
func (l *KVLayout) validate(field string) error {
	type want struct{ keys, values string }
	formats := map[string]want{"fp16": {"float16", "float16"}, "v8": {"float16", "int8"}, "kv8": {"int8", "int8"}}
	w, ok := formats[l.Format]
	if !ok {
		return manErr(field+".format", "unknown KV cache format %q (want fp16, v8, kv8 or selectable)", l.Format)
	}
	if l.Keys != w.keys || l.Values != w.values {
		return manErr(field, "format %s needs keys %s and values %s, has %q and %q", l.Format, w.keys, w.values, l.Keys, l.Values)
	}
	quantized := w.values == "int8"
	hasScales := l.Scales != nil && *l.Scales != ""
	if quantized != hasScales {
		return manErr(field+".scales", "format %s: scales must be %s", l.Format, map[bool]string{true: "float16", false: "null"}[quantized])
	}
	if hasScales && *l.Scales != "float16" {
		return manErr(field+".scales", "is %q, want float16", *l.Scales)
	}
	if quantized && (l.ScaleGranularity == nil || *l.ScaleGranularity != "token_head") {
		return manErr(field+".scale_granularity", "format %s needs \"token_head\"", l.Format)
	}
	if l.KeyLayout != "" && l.KeyLayout != "dim_token" {
		return manErr(field+".key_layout", "is %q, want dim_token or absent", l.KeyLayout)
	}
	return nil
}

func (m *Manifest) validateChunks() error {
	if len(m.Chunks) == 0 {
		return manErr("chunks", "is empty")
	}
	next := 0
	files := map[string]bool{}
	for i, c := range m.Chunks {
		field := fmt.Sprintf("chunks[%d]", i)
		if err := CheckPath(c.File); err != nil {
			return manErr(field+".file", "%v", err)
		}
		if files[c.File] {
			return manErr(field+".file", "%q is listed twice", c.File)
		}
		files[c.File] = true
		lo, hi := c.Layers[0], c.Layers[1]
		if lo != next {
			return manErr(field+".layers", "starts at layer %d, want %d (chunks must be ordered and contiguous)", lo, next)
		}
		if hi < lo {
			return manErr(field+".layers", "[%d, %d] is empty", lo, hi)
		}
		next = hi + 1
		for _, ctx := range m.Ctxs {
			if name := EntryName("v8", ctx); !slices.Contains(c.Entries, name) {
				return manErr(field+".entries", "%s has no %s entry for context %d", c.File, name, ctx)
			}
		}
		for _, t := range c.Taps {
			if t < lo || t >= hi {
				return manErr(field+".taps", "tap %d is not an inner layer of [%d, %d]", t, lo, hi)
			}
		}
		if c.Compiled != "" && (CheckPath(c.Compiled) != nil || !strings.HasSuffix(c.Compiled, ".aimodelc")) {
			return manErr(field+".compiled", "%q is not a .aimodelc package name", c.Compiled)
		}
	}
	return nil
}

// Layers is the number of layers the chunks cover (0 … Layers-1).
func (m *Manifest) Layers() int {
	if len(m.Chunks) == 0 {
		return 0
	}
	return m.Chunks[len(m.Chunks)-1].Layers[1] + 1
}

// ValidateLayers checks that the chunks cover exactly layers
// 0 … numLayers-1 and that every tap is one of them.
func (m *Manifest) ValidateLayers(numLayers int) error {
	if got := m.Layers(); got != numLayers {
		return manErr("chunks", "cover layers 0-%d, but the model has %d layers", got-1, numLayers)
	}
	for i, t := range m.Taps {
		if t < 0 || t >= numLayers {
			return manErr(fmt.Sprintf("taps[%d]", i), "%d is outside [0, %d)", t, numLayers)
		}
	}
	return nil
}

// SpreadTaps is where a bundle taps the target for drafter features when
// nothing else says: up to five layers, one at the middle of each fifth of
// the depth, (2i+1)·layers/10 — 6, 19, 32, 44, 57 of 64 (the published
// drafter's 5, 19, 33, 47, 61 are spread the same way). Synthetic bundles,
// synthetic drafters, the stand-in runtime and rebuild.Assemble all use it,
// so what they write pairs.
func SpreadTaps(layers int) []int {
	var taps []int
	for i := range 5 {
		t := (2*i + 1) * layers / 10
		if len(taps) == 0 || t > taps[len(taps)-1] {
			taps = append(taps, t)
		}
	}
	return taps
}

// ChunkFile is the package name of the chunk covering layers lo..hi
// (inclusive), e.g. chunk_L00-03.aimodel.
func ChunkFile(lo, hi int) string { return fmt.Sprintf("chunk_L%02d-%02d.aimodel", lo, hi) }
