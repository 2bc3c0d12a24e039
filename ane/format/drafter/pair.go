package drafter

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
)

// The published drafter package's fixed shape and host scale (Anemll/anemll-forge
// scripts/hf_release.py check_drafter_pair, scripts/dflash2_coreai_drafter.py): these are
// properties of the DFlash2 architecture, not of the target.
const (
	PublishedLayers     = 5
	PublishedHeadDim    = 128
	PublishedKVHeads    = 8
	PublishedBlockSize  = 8
	PublishedSelectorRk = 256
	PublishedWindow     = 2048
	PublishedFeatScale  = 0.125
)

// Metadata is the part of the drafter's dflash2_lut4_gptq.json sidecar the
// pairing rules and the Core AI driver read.
type Metadata struct {
	W  int `json:"W"`
	T  int `json:"T"`
	R  int `json:"R"`
	RP int `json:"RP"`
	// FeatScale multiplies the features the host writes into the entries'
	// feat inputs (fp16 range); absent or 0 means 1.
	FeatScale    float64 `json:"feat_scale,omitempty"`
	Export       string  `json:"export,omitempty"`
	TargetExport string  `json:"target_export"`
	HeadExport   string  `json:"head_export"`
	Entries      map[string]struct {
		Inputs  []string `json:"inputs,omitempty"`
		Outputs []string `json:"outputs"`
	} `json:"entries"`
}

// Violation is one failed pairing rule. Rule is one of drafter.meta,
// drafter.config, drafter.pair, drafter.selector (the names the bundle
// integrity check reports).
type Violation struct {
	Rule, File, Msg string
}

func (v Violation) Error() string { return fmt.Sprintf("%s: %s: %s", v.Rule, v.File, v.Msg) }

// Target is what a drafter is paired against.
type Target struct {
	Model *hfconfig.Model
	// Taps are the target's tap layers (the runtime manifest's taps, or the
	// layers an engine is opened with); nil skips that rule.
	Taps []int
	// ExportName is the name of the target export the drafter's head and
	// features must come from (the export directory's base name, or the
	// checkpoint directory's for a BF16 run); "" skips that rule.
	ExportName string
}

// MetaRules checks the sidecar against the published T/R/RP/W and entries.
func MetaRules(meta *Metadata, file string) []Violation {
	var out []Violation
	fail := func(f string, a ...any) { out = append(out, Violation{"drafter.meta", file, fmt.Sprintf(f, a...)}) }
	if meta.T != PublishedBlockSize || meta.R != PendingRows || meta.RP != FlushRows {
		fail("T=%d R=%d RP=%d, want %d, %d, %d", meta.T, meta.R, meta.RP, PublishedBlockSize, PendingRows, FlushRows)
	}
	if meta.W != PublishedWindow {
		fail("W=%d, want %d", meta.W, PublishedWindow)
	}
	if _, ok := meta.Entries["ctx64"]; !ok {
		fail(`entries has no "ctx64"`)
	}
	if e, ok := meta.Entries["draft"]; !ok || !slices.Contains(e.Outputs, "logits") {
		fail(`entries.draft is missing or has no "logits" output`)
	}
	return out
}

// ConfigRules checks the drafter config against the published architecture
// and against the target (layers, hidden size, vocabulary, taps).
func ConfigRules(cfg *hfconfig.Drafter, meta *Metadata, t Target, file string) []Violation {
	var out []Violation
	type want struct {
		field     string
		got, want int
	}
	checks := []want{
		{"num_hidden_layers", cfg.NumHiddenLayers, PublishedLayers}, {"head_dim", cfg.HeadDim, PublishedHeadDim},
		{"num_key_value_heads", cfg.NumKeyValueHeads, PublishedKVHeads},
		{"dflash_config.block_size", cfg.DFlash.BlockSize, PublishedBlockSize},
		{"dflash_config.selector_rank", cfg.DFlash.SelectorRank, PublishedSelectorRk},
	}
	if meta != nil {
		checks = append(checks, want{"sliding_window (= metadata W)", cfg.SlidingWindow, meta.W})
	}
	if m := t.Model; m != nil {
		checks = append(checks, want{"num_target_layers (= target num_hidden_layers)", cfg.NumTargetLayers, m.NumHiddenLayers},
			want{"hidden_size (= target)", cfg.HiddenSize, m.HiddenSize}, want{"vocab_size (= target)", cfg.VocabSize, m.VocabSize})
	}
	for _, w := range checks {
		if w.got != w.want {
			out = append(out, Violation{"drafter.config", file, fmt.Sprintf("%s is %d, want %d", w.field, w.got, w.want)})
		}
	}
	if t.Taps != nil && !slices.Equal(cfg.DFlash.TargetLayerIDs, t.Taps) {
		out = append(out, Violation{"drafter.pair", file, fmt.Sprintf("dflash_config.target_layer_ids %v differ from the target's taps %v", cfg.DFlash.TargetLayerIDs, t.Taps)})
	}
	return out
}

// ExportRules: the sidecar's target_export and head_export must name the
// target export (basename(target_export) == name == parent of head_export).
func ExportRules(meta *Metadata, exportName, file string) []Violation {
	if exportName == "" {
		return nil
	}
	te, he := baseName(meta.TargetExport), baseName(parentDir(meta.HeadExport))
	if te != exportName || he != exportName {
		return []Violation{{"drafter.pair", file, fmt.Sprintf("target_export %q / head_export %q do not name the target export %q", meta.TargetExport, meta.HeadExport, exportName)}}
	}
	return nil
}

// SelectorRules checks selector.safetensors: exactly the two codebooks,
// each [vocab, rank] in BF16, F16 or F32 (OpenSafetensors checks offsets,
// overlap and the file size).
func SelectorRules(path, file string, vocab, rank int) []Violation {
	fail := func(f string, a ...any) Violation { return Violation{"drafter.selector", file, fmt.Sprintf(f, a...)} }
	f, err := tensor.OpenSafetensors(path)
	if err != nil {
		return []Violation{fail("%v", err)}
	}
	defer f.Close()
	var names []string
	for _, t := range f.Tensors() {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{PredecessorCodebook, SuccessorCodebook}) {
		return []Violation{fail("tensors %v, want exactly %s and %s", names, PredecessorCodebook, SuccessorCodebook)}
	}
	var out []Violation
	for _, t := range f.Tensors() {
		if t.DType != tensor.BF16 && t.DType != tensor.F16 && t.DType != tensor.F32 {
			out = append(out, fail("%s has dtype %s, want BF16, F16 or F32", t.Name, t.DType))
		}
		if !slices.Equal(t.Shape, []int{vocab, rank}) {
			out = append(out, fail("%s has shape %v, want [%d, %d]", t.Name, t.Shape, vocab, rank))
		}
	}
	return out
}

// PairError lists every failed rule.
type PairError struct{ Violations []Violation }

func (e *PairError) Error() string {
	var b strings.Builder
	b.WriteString("drafter does not pair with the target:")
	for _, v := range e.Violations {
		b.WriteString("\n  " + v.Error())
	}
	return b.String()
}

// Rules returns the names of the failed rules, in order.
func (e *PairError) Rules() []string {
	var r []string
	for _, v := range e.Violations {
		r = append(r, v.Rule)
	}
	return r
}

// CheckDirs applies every pairing rule to a drafter directory and a target
// (checkpoint directory modelDir, optional exportDir): a *PairError names
// each rule that failed. taps are the layers the target engine will tap
// (nil: the drafter's own target_layer_ids are used, so only their range is
// checked, by the config).
func CheckDirs(drafterDir, modelDir, exportDir string, taps []int) error {
	name := filepath.Base(filepath.Clean(modelDir))
	if exportDir != "" {
		name = filepath.Base(filepath.Clean(exportDir))
	}
	return CheckPair(drafterDir, modelDir, name, taps)
}

// CheckPair is CheckDirs with the target's export identity given by name
// (a Core AI runtime names it in its manifest's export key).
func CheckPair(drafterDir, modelDir, name string, taps []int) error {
	model, err := hfconfig.LoadModel(modelDir)
	if err != nil {
		return fmt.Errorf("drafter pairing: target: %w", err)
	}
	var vs []Violation
	meta, err := ReadMetadata(drafterDir)
	if err != nil {
		vs = append(vs, Violation{"drafter.meta", MetadataFile, err.Error()})
		meta = nil
	} else {
		vs = append(vs, MetaRules(meta, MetadataFile)...)
		vs = append(vs, ExportRules(meta, name, MetadataFile)...)
	}
	cfg, err := hfconfig.LoadDrafter(drafterDir)
	if err != nil {
		vs = append(vs, Violation{"drafter.config", ConfigFile, err.Error()})
	} else {
		vs = append(vs, ConfigRules(cfg, meta, Target{Model: model, Taps: taps, ExportName: name}, ConfigFile)...)
	}
	vs = append(vs, SelectorRules(filepath.Join(drafterDir, SelectorFile), SelectorFile, model.VocabSize, PublishedSelectorRk)...)
	if len(vs) > 0 {
		return &PairError{vs}
	}
	return nil
}

// ReadMetadata reads the sidecar of a drafter directory.
func ReadMetadata(dir string) (*Metadata, error) {
	data, err := os.ReadFile(filepath.Join(dir, MetadataFile))
	if err != nil {
		return nil, err
	}
	var m Metadata
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", MetadataFile, err)
	}
	return &m, nil
}

// baseName and parentDir treat both / and \ as separators: the published
// sidecar records paths of the machine that built it.
func baseName(p string) string {
	p = strings.TrimRight(strings.ReplaceAll(p, `\`, "/"), "/")
	return p[strings.LastIndex(p, "/")+1:]
}

func parentDir(p string) string {
	p = strings.TrimRight(strings.ReplaceAll(p, `\`, "/"), "/")
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[:i]
	}
	return ""
}
