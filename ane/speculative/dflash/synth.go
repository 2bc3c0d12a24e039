package dflash

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/atomicfile"
)

// SynthReport describes a generated synthetic drafter.
type SynthReport struct {
	Dir        string   `json:"dir"`
	Target     string   `json:"target"`
	Seed       uint64   `json:"seed"`
	Taps       []int    `json:"taps"`
	Hidden     int      `json:"hidden_size"`
	Vocab      int      `json:"vocab_size"`
	MaskToken  int      `json:"mask_token_id"`
	Parameters int64    `json:"parameters"`
	Files      []string `json:"files"`
}

// SynthConfig is the drafter configuration that pairs with target: the
// published architecture (5 layers, 8 KV heads of 128, block 8, window
// 2048, selector top-16 / rank 256, conv 2 taps / group 16) at the
// target's hidden size and vocabulary; 2:1 grouped query heads and an MLP
// twice the hidden size keep it cheap next to small targets. The mask
// token is the last vocabulary row, a padding id no text encodes to.
func SynthConfig(target *hfconfig.Model) *hfconfig.Drafter {
	return &hfconfig.Drafter{
		HiddenSize: target.HiddenSize, IntermediateSize: 2 * target.HiddenSize,
		NumHiddenLayers: drafter.PublishedLayers, NumAttentionHeads: 2 * drafter.PublishedKVHeads, NumKeyValueHeads: drafter.PublishedKVHeads,
		HeadDim: drafter.PublishedHeadDim, VocabSize: target.VocabSize, SlidingWindow: drafter.PublishedWindow,
		NumTargetLayers: target.NumHiddenLayers, RMSNormEps: 1e-6, RopeTheta: 1e7,
		DFlash: hfconfig.DFlashConfig{BlockSize: drafter.PublishedBlockSize, MaskTokenID: target.VocabSize - 1,
			SelectorTopK: 16, SelectorRank: drafter.PublishedSelectorRk, ConvGroupSize: 16, ConvKernelSize: 2,
			TargetLayerIDs: bundle.SpreadTaps(target.NumHiddenLayers)},
	}
}

// GenerateSynthetic writes a deterministic drafter for the checkpoint in
// targetDir into outDir: config.json, model.safetensors (BF16),
// selector.safetensors (the two codebooks) and the dflash2_lut4_gptq.json
// sidecar naming its target export — exportDir if given (the target runs
// a quantized export), else targetDir. The same inputs give the same
// bytes. On error the files it wrote are removed.
func GenerateSynthetic(targetDir, exportDir, outDir string, seed uint64) (rep *SynthReport, err error) {
	target, err := hfconfig.LoadModel(targetDir)
	if err != nil {
		return nil, fmt.Errorf("synthetic drafter: target: %w", err)
	}
	cfg := SynthConfig(target)
	if target.VocabSize < cfg.DFlash.SelectorTopK {
		return nil, fmt.Errorf("synthetic drafter: target vocab_size %d is below the selector's top-%d", target.VocabSize, cfg.DFlash.SelectorTopK)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("synthetic drafter for %s: %w", targetDir, err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	if exportDir == "" {
		exportDir = targetDir
	}
	absTarget, err := filepath.Abs(exportDir)
	if err != nil {
		return nil, err
	}
	rep = &SynthReport{Dir: outDir, Target: absTarget, Seed: seed, Taps: cfg.DFlash.TargetLayerIDs,
		Hidden: cfg.HiddenSize, Vocab: cfg.VocabSize, MaskToken: cfg.DFlash.MaskTokenID}
	defer func() {
		if err != nil {
			for _, f := range rep.Files {
				os.Remove(filepath.Join(outDir, f))
			}
			rep = nil
		}
	}()
	rng := rand.New(rand.NewPCG(seed, 0xdf1a5e2))
	feat := cfg.FeatureSize(cfg.HiddenSize)
	var weights []tensor.Tensor
	for _, s := range CheckpointTensors(cfg, feat) {
		weights = append(weights, bf16Tensor(s, synthValues(rng, s, cfg)))
		rep.Parameters += int64(shapeSize(s.Shape))
	}
	var sel []tensor.Tensor
	for _, s := range SelectorTensors(cfg) {
		sel = append(sel, bf16Tensor(s, normals(rng, shapeSize(s.Shape), 0.25)))
		rep.Parameters += int64(shapeSize(s.Shape))
	}
	cj, err := cfg.MarshalHF()
	if err != nil {
		return rep, err
	}
	meta := synthMetadata(absTarget)
	mj, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return rep, err
	}
	meta2 := map[string]string{"format": "pt", "generator": "forged synthetic DFlash2 drafter", "seed": fmt.Sprint(seed)}
	steps := []struct {
		name  string
		write func(path string) error
	}{
		{drafter.WeightsFile, func(p string) error { return tensor.WriteSafetensors(p, meta2, weights) }},
		{drafter.SelectorFile, func(p string) error { return tensor.WriteSafetensors(p, nil, sel) }},
		{drafter.MetadataFile, func(p string) error { return atomicfile.Write(p, append(mj, '\n'), 0o644) }},
		{drafter.ConfigFile, func(p string) error { return atomicfile.Write(p, append(cj, '\n'), 0o644) }},
	}
	for _, s := range steps {
		if err := s.write(filepath.Join(outDir, s.name)); err != nil {
			return rep, err
		}
		rep.Files = append(rep.Files, s.name)
	}
	return rep, nil
}

// synthValues draws one tensor: norm gains near 1, base kernels near the
// identity (tap 0 = 1, tap 1 small), dynamic kernel projections small, and
// matrices with unit-variance outputs (std 1/sqrt(fan_in)).
func synthValues(rng *rand.Rand, s TensorSpec, cfg *hfconfig.Drafter) []float32 {
	n := shapeSize(s.Shape)
	switch {
	case len(s.Shape) == 1:
		v := normals(rng, n, 0.05)
		for i := range v {
			v[i] += 1
		}
		return v
	case filepath.Ext(s.Name) == ".base_kernel":
		v := normals(rng, n, 0.1)
		G, K := s.Shape[2], s.Shape[1]
		for side := 0; side < convSides; side++ {
			for g := 0; g < G; g++ {
				v[(side*K)*G+g] += 1
			}
		}
		return v
	}
	std := 1 / math.Sqrt(float64(s.Shape[1]))
	if strings.HasSuffix(s.Name, "kernel_projection.weight") {
		std *= 0.1
	}
	return normals(rng, n, std)
}

func normals(rng *rand.Rand, n int, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * std)
	}
	return v
}

func bf16Tensor(s TensorSpec, v []float32) tensor.Tensor {
	data := make([]byte, 2*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint16(data[2*i:], half.BF16(f))
	}
	return tensor.Tensor{Name: s.Name, DType: tensor.BF16, Shape: s.Shape, Data: data}
}

// synthMetadata is the sidecar of a reference drafter: the published
// T/R/RP/W and entry names, and the target it pairs with.
func synthMetadata(target string) *drafter.Metadata {
	m := &drafter.Metadata{W: drafter.PublishedWindow, T: drafter.PublishedBlockSize, R: drafter.PendingRows, RP: drafter.FlushRows, FeatScale: drafter.PublishedFeatScale,
		Export: "reference (ane/speculative/dflash, no Core AI package)", TargetExport: target,
		HeadExport: filepath.Join(target, "lm_head.safetensors")}
	m.Entries = map[string]struct {
		Inputs  []string `json:"inputs,omitempty"`
		Outputs []string `json:"outputs"`
	}{
		"draft": {Inputs: []string{"feat", "ctx_cos", "ctx_sin", "anchor", "q_cos", "q_sin", "mask"}, Outputs: []string{"logits", "hp", "hidden"}},
		"ctx64": {Inputs: []string{"feat", "ctx_cos", "ctx_sin"}, Outputs: []string{"k_new", "v_new"}},
	}
	return m
}
