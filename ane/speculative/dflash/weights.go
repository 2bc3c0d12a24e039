package dflash

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
)

// Sides of the two-tap grouped convolution around a sublayer: side 0
// convolves the sublayer's input, side 1 its output.
const convSides = 2

// TensorSpec is one weight of the drafter checkpoint.
type TensorSpec struct {
	Name  string
	Shape []int
}

// CheckpointTensors is the one table of drafter weight names and shapes for
// cfg, given the target feature width (taps × target hidden).
func CheckpointTensors(cfg *hfconfig.Drafter, featureWidth int) []TensorSpec {
	h, hd := cfg.HiddenSize, cfg.HeadDim
	groups := h / cfg.DFlash.ConvGroupSize
	kp := convSides * cfg.DFlash.ConvKernelSize * groups
	specs := []TensorSpec{
		{"fc.weight", []int{h, featureWidth}},
		{"hidden_norm.weight", []int{h}},
	}
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		p := fmt.Sprintf("layers.%d.", i)
		specs = append(specs,
			TensorSpec{p + "input_layernorm.weight", []int{h}},
			TensorSpec{p + "post_attention_layernorm.weight", []int{h}},
			TensorSpec{p + "self_attn.q_proj.weight", []int{cfg.NumAttentionHeads * hd, h}},
			TensorSpec{p + "self_attn.k_proj.weight", []int{cfg.NumKeyValueHeads * hd, h}},
			TensorSpec{p + "self_attn.v_proj.weight", []int{cfg.NumKeyValueHeads * hd, h}},
			TensorSpec{p + "self_attn.o_proj.weight", []int{h, cfg.NumAttentionHeads * hd}},
			TensorSpec{p + "self_attn.q_norm.weight", []int{hd}},
			TensorSpec{p + "self_attn.k_norm.weight", []int{hd}},
			TensorSpec{p + "attention_conv.kernel_projection.weight", []int{kp, h}},
			TensorSpec{p + "attention_conv.base_kernel", []int{convSides, cfg.DFlash.ConvKernelSize, groups}},
			TensorSpec{p + "mlp_conv.kernel_projection.weight", []int{kp, h}},
			TensorSpec{p + "mlp_conv.base_kernel", []int{convSides, cfg.DFlash.ConvKernelSize, groups}},
			TensorSpec{p + "mlp.gate_proj.weight", []int{cfg.IntermediateSize, h}},
			TensorSpec{p + "mlp.up_proj.weight", []int{cfg.IntermediateSize, h}},
			TensorSpec{p + "mlp.down_proj.weight", []int{h, cfg.IntermediateSize}},
		)
	}
	return append(specs,
		TensorSpec{"norm.weight", []int{h}},
		TensorSpec{"candidate_selector.hidden_projection.weight", []int{cfg.DFlash.SelectorRank, h}},
	)
}

// SelectorTensors is the table of selector.safetensors.
func SelectorTensors(cfg *hfconfig.Drafter) []TensorSpec {
	return []TensorSpec{
		{drafter.PredecessorCodebook, []int{cfg.VocabSize, cfg.DFlash.SelectorRank}},
		{drafter.SuccessorCodebook, []int{cfg.VocabSize, cfg.DFlash.SelectorRank}},
	}
}

// Weights are a drafter checkpoint as float32, row-major, keyed by name.
type Weights struct {
	Config   *hfconfig.Drafter
	Features int // target feature width per row
	T        map[string][]float32
}

// LoadWeights reads a drafter directory (config.json, model.safetensors,
// selector.safetensors). Every tensor of the table must be present with
// its shape and a float dtype, and nothing else may be (a stray tensor
// means a different architecture). The target features are taps × hidden
// wide: pairing requires the target's hidden size to equal the drafter's.
func LoadWeights(dir string) (*Weights, error) {
	cfg, err := hfconfig.LoadDrafter(dir)
	if err != nil {
		return nil, err
	}
	featureWidth := cfg.FeatureSize(cfg.HiddenSize)
	w := &Weights{Config: cfg, Features: featureWidth, T: map[string][]float32{}}
	if err := w.read(filepath.Join(dir, drafter.WeightsFile), CheckpointTensors(cfg, featureWidth)); err != nil {
		return nil, err
	}
	if err := w.read(filepath.Join(dir, drafter.SelectorFile), SelectorTensors(cfg)); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Weights) read(path string, table []TensorSpec) error {
	f, err := tensor.OpenSafetensors(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var errs []error
	known := map[string]bool{}
	for _, s := range table {
		known[s.Name] = true
		info, ok := f.Tensor(s.Name)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: tensor %s is missing (want shape %v)", path, s.Name, s.Shape))
			continue
		}
		if !slices.Equal(info.Shape, s.Shape) {
			errs = append(errs, fmt.Errorf("%s: tensor %s has shape %v, want %v", path, s.Name, info.Shape, s.Shape))
			continue
		}
		v, err := f.Float32(s.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: tensor %s: %w", path, s.Name, err))
			continue
		}
		w.T[s.Name] = v
	}
	for _, t := range f.Tensors() {
		if !known[t.Name] {
			errs = append(errs, fmt.Errorf("%s: unexpected tensor %s (not part of the DFlash2 drafter layout)", path, t.Name))
		}
	}
	return errors.Join(errs...)
}
