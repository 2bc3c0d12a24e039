// Package plan reads mixed-precision plans and resolves them, before any
// work, to one format per matrix with its realised size.
//
// A plan is the flat JSON object of the published quantizer (Anemll/anemll-forge
// scripts/qwen38_gptq_27b.py PLAN, e.g. configs/quantization/mix25in_mixr.json):
// "<layer>.gate|up|down" → format, "<layer>.mixer" → mixer format,
// "<layer>.basis" → "online"|"plain", "bf16" to keep a matrix unquantized. Any
// other key is a regular expression matched against the whole matrix name (e.g.
// "model\.language_model\.layers\.(2[4-9])\.mlp\..*" or "lm_head"), as Apple's
// module_name_configs. Unlike Apple's tool, a key or pattern that matches
// nothing is an error, and so is a key for a layer the model does not have:
// nothing is skipped silently.
package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/layout"
	"github.com/forgedaemon/forged/ane/format/qformat"
	"github.com/forgedaemon/forged/ane/rebuild/export"
)

// Defaults are the formats of matrices no key names (the quantizer's
// FORMAT, MIXER, KV_FMT, HEAD and BASIS settings).
type Defaults struct {
	MLP, Mixer, KV, Head string
	Online               bool // MLP basis
	Block                int  // Hadamard block width
}

// PublishedDefaults are forge.py quantize's settings.
func PublishedDefaults(cfg *hfconfig.Model) Defaults {
	return Defaults{MLP: "vector 2x16 + pcs", Mixer: "LUT4 per-tensor + pcs", KV: export.KVFormat,
		Head: "LUT4 per-tensor + pcs", Online: true, Block: DefaultBlock(cfg)}
}

// DefaultBlock is the Hadamard block width: the largest power of two up to
// 1024 dividing both the hidden and the intermediate size (1024 for
// Qwen3.8-27B, whose 5120 and 17408 are 5 and 17 blocks).
func DefaultBlock(cfg *hfconfig.Model) int {
	b := 1024
	for b > 1 && (cfg.HiddenSize%b != 0 || cfg.IntermediateSize%b != 0) {
		b /= 2
	}
	return b
}

// Plan is a parsed plan file: its keys in file order.
type Plan struct {
	Entries []Entry
}

// Entry is one plan key.
type Entry struct {
	Key, Value string
	// Layer and Part are set for flat keys ("23.gate": 23, "gate").
	Layer int
	Part  string
	re    *regexp.Regexp // pattern keys
}

var flatKey = regexp.MustCompile(`^(\d+)\.(gate|up|down|mixer|basis)$`)

// Parse reads a plan: a JSON object of string values. Duplicate keys, non-
// string values, unknown formats and invalid patterns are errors naming
// the key.
func Parse(data []byte) (*Plan, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("plan: not a JSON object")
	}
	p := &Plan{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
		key := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("plan: key %q: %w", key, err)
		}
		value, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("plan: key %q: value %v is not a string", key, v)
		}
		if seen[key] {
			return nil, fmt.Errorf("plan: key %q appears twice", key)
		}
		seen[key] = true
		e, err := parseEntry(key, value)
		if err != nil {
			return nil, err
		}
		p.Entries = append(p.Entries, e)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("plan: data after the JSON object")
	}
	return p, nil
}

func parseEntry(key, value string) (Entry, error) {
	e := Entry{Key: key, Value: value, Layer: -1}
	if m := flatKey.FindStringSubmatch(key); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n > 1<<20 {
			return e, fmt.Errorf("plan: key %q: layer %q is not a layer number", key, m[1])
		}
		e.Layer, e.Part = n, m[2]
		if e.Part == "basis" {
			if value != "online" && value != "plain" {
				return e, fmt.Errorf("plan: key %q: basis %q is not \"online\" or \"plain\"", key, value)
			}
			return e, nil
		}
	} else {
		re, err := regexp.Compile(`^(?:` + key + `)$`)
		if err != nil {
			return e, fmt.Errorf("plan: key %q is neither \"<layer>.<gate|up|down|mixer|basis>\" nor a valid pattern: %v", key, err)
		}
		e.re = re
	}
	if err := checkFormat(value); err != nil {
		return e, fmt.Errorf("plan: key %q: %w", key, err)
	}
	return e, nil
}

func checkFormat(name string) error {
	_, err := qformat.Lookup(name)
	return err
}

// Load reads and parses a plan file.
func Load(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Matrix is one quantizable matrix with its resolved format.
type Matrix struct {
	Name   string // checkpoint module name, e.g. model.language_model.layers.3.mlp.gate_proj
	Layer  int    // -1 for the head
	Module string // e.g. "mlp.gate_proj", "self_attn.k_proj", "lm_head"
	File   string // export file
	Key    string // tensor key in the export file ("gate", "self_attn.k_proj", "lm_head")
	Rows   int
	Cols   int
	Format string
	From   string // what decided the format: "default", a key, or a pattern
	Size   export.Size
}

// Layer is the resolved settings of one decoder layer.
type Layer struct {
	Kind        string // export.LinearAttention or export.FullAttention
	MixerFormat string // format of the mixer's non-k/v matrices
	KVFormat    string // k_proj/v_proj (full attention)
	Online      bool   // MLP basis
}

// Resolved is a plan applied to a model.
type Resolved struct {
	Matrices []Matrix // in quantization order: per layer mixer then MLP, head last
	Layers   []Layer
	Block    int
	Total    export.Size
}

// mlpKeys maps MLP modules to the export's short keys.
var mlpKeys = map[string]string{"mlp.gate_proj": "gate", "mlp.up_proj": "up", "mlp.down_proj": "down"}

// Quantizable lists the matrices the export stores for cfg, in
// quantization order (mixer readers, mixer writer, gate, up, down per
// layer; the head last), with their shapes and default formats.
func Quantizable(cfg *hfconfig.Model, d Defaults) ([]Matrix, []Layer) {
	var ms []Matrix
	layers := make([]Layer, cfg.NumHiddenLayers)
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		L := &layers[i]
		L.Kind, L.MixerFormat, L.KVFormat, L.Online = export.LinearAttention, d.Mixer, d.KV, d.Online
		if cfg.IsFullAttention(i) {
			L.Kind = export.FullAttention
		}
		for _, t := range layout.LayerTensors(cfg, i) {
			module := strings.TrimSuffix(strings.TrimPrefix(t.Name, layout.LayerPrefix(i)), ".weight")
			if t.Kind != layout.Linear || strings.HasSuffix(module, "in_proj_a") || strings.HasSuffix(module, "in_proj_b") {
				continue // in_proj_a/b stay BF16 in the checkpoint
			}
			m := Matrix{Name: strings.TrimSuffix(t.Name, ".weight"), Layer: i, Module: module,
				File: export.MixerFile(i), Key: module, Rows: t.Shape[0], Cols: t.Shape[1], From: "default"}
			switch {
			case mlpKeys[module] != "":
				m.File, m.Key, m.Format = export.MLPFile(i), mlpKeys[module], d.MLP
			case module == "self_attn.k_proj" || module == "self_attn.v_proj":
				m.Format = d.KV
			default:
				m.Format = d.Mixer
			}
			ms = append(ms, m)
		}
	}
	ms = append(ms, Matrix{Name: "lm_head", Layer: -1, Module: "lm_head", File: export.HeadFile, Key: "lm_head",
		Rows: cfg.VocabSize, Cols: cfg.HiddenSize, Format: d.Head, From: "default"})
	return ms, layers
}

// Resolve applies p (nil: defaults only) to cfg. Precedence: a flat key,
// then a pattern, then the default. Within a mixer every non-k/v matrix
// must end up with one format (the file records one); "<i>.mixer": "bf16"
// keeps the whole mixer, k/v included, in BF16 as the published tool does.
func Resolve(cfg *hfconfig.Model, p *Plan, d Defaults) (*Resolved, error) {
	for _, f := range []string{d.MLP, d.Mixer, d.KV, d.Head} {
		if err := checkFormat(f); err != nil {
			return nil, fmt.Errorf("plan defaults: %w", err)
		}
	}
	ms, layers := Quantizable(cfg, d)
	r := &Resolved{Layers: layers, Block: d.Block}
	if p == nil {
		p = &Plan{}
	}
	used := make([]bool, len(p.Entries))
	// Patterns first, so flat keys override them.
	for i := range ms {
		m := &ms[i]
		var by *Entry
		for k := range p.Entries {
			e := &p.Entries[k]
			if e.re == nil || !e.re.MatchString(m.Name) {
				continue
			}
			used[k] = true
			if by != nil && by.Value != e.Value {
				return nil, fmt.Errorf("plan: %s matches pattern %q (%s) and pattern %q (%s)", m.Name, by.Key, by.Value, e.Key, e.Value)
			}
			by = e
		}
		if by != nil {
			m.Format, m.From = by.Value, "pattern "+strconv.Quote(by.Key)
		}
	}
	for k := range p.Entries {
		e := &p.Entries[k]
		if e.re != nil {
			continue
		}
		if e.Layer >= cfg.NumHiddenLayers {
			return nil, fmt.Errorf("plan: key %q names layer %d, the model has layers 0..%d", e.Key, e.Layer, cfg.NumHiddenLayers-1)
		}
		used[k] = true
		switch e.Part {
		case "basis":
			layers[e.Layer].Online = e.Value == "online"
			continue
		case "mixer":
			layers[e.Layer].MixerFormat = e.Value
		}
		for i := range ms {
			m := &ms[i]
			if m.Layer != e.Layer {
				continue
			}
			kv := m.Module == "self_attn.k_proj" || m.Module == "self_attn.v_proj"
			if (e.Part == "mixer" && m.File == export.MixerFile(e.Layer) && (!kv || e.Value == export.BF16)) || m.Key == e.Part {
				m.Format, m.From = e.Value, "key "+strconv.Quote(e.Key)
			}
		}
	}
	for k, e := range p.Entries {
		if !used[k] {
			return nil, fmt.Errorf("plan: pattern %q matches no quantizable matrix (names look like %q or \"lm_head\")",
				e.Key, layout.LayerPrefix(0)+"mlp.gate_proj")
		}
	}
	for i := range ms {
		m := &ms[i]
		if m.Layer >= 0 && m.File == export.MixerFile(m.Layer) {
			L := &layers[m.Layer]
			if m.Module == "self_attn.k_proj" || m.Module == "self_attn.v_proj" {
				L.KVFormat = m.Format
			} else if first := firstMixer(ms, m.Layer); first != i && ms[first].Format != m.Format {
				return nil, fmt.Errorf("plan: layer %d mixer: %s is %q (%s) but %s is %q (%s); one mixer file holds one format",
					m.Layer, ms[first].Module, ms[first].Format, ms[first].From, m.Module, m.Format, m.From)
			} else {
				L.MixerFormat = m.Format
			}
		}
		s, err := export.MatrixSize(m.Name, m.Format, m.Rows, m.Cols, 0)
		if err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
		if f, _ := qformat.Lookup(m.Format); f.Kind == qformat.KindLUT && f.Entries > 256 {
			return nil, fmt.Errorf("plan: %s: format %q has more codebook entries than a uint8 index holds", m.Name, m.Format)
		}
		m.Size = s
		r.Total = r.Total.Add(s)
	}
	if r.Block <= 0 || cfg.HiddenSize%r.Block != 0 || cfg.IntermediateSize%r.Block != 0 || r.Block&(r.Block-1) != 0 {
		for i, L := range layers {
			if L.Online {
				return nil, fmt.Errorf("plan: layer %d has an online basis but block %d is not a power of two dividing %d and %d",
					i, r.Block, cfg.HiddenSize, cfg.IntermediateSize)
			}
		}
	}
	r.Matrices = ms
	return r, nil
}

func firstMixer(ms []Matrix, layer int) int {
	return slices.IndexFunc(ms, func(m Matrix) bool {
		return m.Layer == layer && m.File == export.MixerFile(layer) && m.Module != "self_attn.k_proj" && m.Module != "self_attn.v_proj"
	})
}

// Print writes the resolved plan: one line per matrix with its shape,
// format, realised bits per weight and what decided it, then the totals
// and the predicted export size.
func (r *Resolved) Print(w io.Writer) {
	fmt.Fprintf(w, "%-52s %-13s %-24s %6s  %s\n", "matrix", "shape", "format", "bpw", "from")
	for _, m := range r.Matrices {
		fmt.Fprintf(w, "%-52s %-13s %-24s %6.3f  %s\n", m.Name, fmt.Sprintf("%dx%d", m.Rows, m.Cols), m.Format,
			m.Size.BitsPerWeight(), m.From)
	}
	for i, L := range r.Layers {
		if L.Online {
			fmt.Fprintf(w, "layer %d MLP basis online (seeds %d/%d, block %d)\n", i, export.SeedIn(i), export.SeedMid(i), r.Block)
		}
	}
	fmt.Fprintf(w, "total: %d weights, %.4f bits/weight realised (indices+LUT+scales), %d bytes packed, export tensor data %d bytes\n",
		r.Total.Weights, r.Total.BitsPerWeight(), r.Total.PackedBytes, r.Total.ExportBytes)
}

// Find returns the resolved matrix of a layer's module ("lm_head" with layer −1).
func (r *Resolved) Find(layer int, module string) (*Matrix, bool) {
	for i := range r.Matrices {
		if r.Matrices[i].Layer == layer && r.Matrices[i].Module == module {
			return &r.Matrices[i], true
		}
	}
	return nil, false
}
