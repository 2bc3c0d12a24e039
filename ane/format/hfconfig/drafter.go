package hfconfig

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// Drafter is the DFlash2 block drafter's configuration.
type Drafter struct {
	HiddenSize        int          `json:"hidden_size"`
	IntermediateSize  int          `json:"intermediate_size"`
	NumHiddenLayers   int          `json:"num_hidden_layers"`
	NumAttentionHeads int          `json:"num_attention_heads"`
	NumKeyValueHeads  int          `json:"num_key_value_heads"`
	HeadDim           int          `json:"head_dim"`
	VocabSize         int          `json:"vocab_size"`
	SlidingWindow     int          `json:"sliding_window"`
	NumTargetLayers   int          `json:"num_target_layers"` // layers of the target model the features come from
	RMSNormEps        float64      `json:"rms_norm_eps"`
	RopeTheta         float64      `json:"rope_theta"`
	DFlash            DFlashConfig `json:"dflash_config"`
}

// DFlashConfig is the drafter's "dflash_config" object.
type DFlashConfig struct {
	BlockSize      int   `json:"block_size"`       // anchor + mask rows drafted per call
	MaskTokenID    int   `json:"mask_token_id"`    // token id that fills the masked rows
	SelectorTopK   int   `json:"selector_top_k"`   // candidates per row the selector rescores
	SelectorRank   int   `json:"selector_rank"`    // rank of the selector codebooks
	ConvGroupSize  int   `json:"conv_group_size"`  // channels per group of the token-shift convolution
	ConvKernelSize int   `json:"conv_kernel_size"` // taps of that convolution
	TargetLayerIDs []int `json:"target_layer_ids"` // 0-based target layers whose outputs form the features
}

type dflashJSON struct {
	BlockSize      *int  `json:"block_size"`
	MaskTokenID    *int  `json:"mask_token_id"`
	SelectorTopK   *int  `json:"selector_top_k"`
	SelectorRank   *int  `json:"selector_rank"`
	ConvGroupSize  *int  `json:"conv_group_size"`
	ConvKernelSize *int  `json:"conv_kernel_size"`
	TargetLayerIDs []int `json:"target_layer_ids"`
}

type drafterJSON struct {
	HiddenSize        *int        `json:"hidden_size"`
	IntermediateSize  *int        `json:"intermediate_size"`
	NumHiddenLayers   *int        `json:"num_hidden_layers"`
	NumAttentionHeads *int        `json:"num_attention_heads"`
	NumKeyValueHeads  *int        `json:"num_key_value_heads"`
	HeadDim           *int        `json:"head_dim"`
	VocabSize         *int        `json:"vocab_size"`
	SlidingWindow     *int        `json:"sliding_window"`
	NumTargetLayers   *int        `json:"num_target_layers"`
	RMSNormEps        *float64    `json:"rms_norm_eps"`
	RopeTheta         *float64    `json:"rope_theta"`
	RopeParameters    *ropeParams `json:"rope_parameters"`
	DFlash            *dflashJSON `json:"dflash_config"`
}

// ParseDrafter parses and validates a DFlash2 drafter config.json.
func ParseDrafter(data []byte) (*Drafter, error) {
	var j drafterJSON
	if err := decodeStrict(data, &j); err != nil {
		return nil, err
	}
	var errs []error
	d := &Drafter{
		HiddenSize:        require("hidden_size", j.HiddenSize, &errs),
		IntermediateSize:  require("intermediate_size", j.IntermediateSize, &errs),
		NumHiddenLayers:   require("num_hidden_layers", j.NumHiddenLayers, &errs),
		NumAttentionHeads: require("num_attention_heads", j.NumAttentionHeads, &errs),
		NumKeyValueHeads:  require("num_key_value_heads", j.NumKeyValueHeads, &errs),
		HeadDim:           require("head_dim", j.HeadDim, &errs),
		VocabSize:         require("vocab_size", j.VocabSize, &errs),
		SlidingWindow:     require("sliding_window", j.SlidingWindow, &errs),
		NumTargetLayers:   require("num_target_layers", j.NumTargetLayers, &errs),
	}
	if j.RMSNormEps != nil {
		d.RMSNormEps = *j.RMSNormEps
	} else {
		errs = append(errs, fieldErr("rms_norm_eps", "missing"))
	}
	var nested *float64
	if j.RopeParameters != nil {
		nested = j.RopeParameters.RopeTheta
	}
	if v := first(nested, j.RopeTheta); v != nil {
		d.RopeTheta = *v
	} else {
		errs = append(errs, fieldErr("rope_parameters.rope_theta", "missing (also looked for rope_theta)"))
	}
	if f := j.DFlash; f == nil {
		errs = append(errs, fieldErr("dflash_config", "missing"))
	} else {
		d.DFlash = DFlashConfig{
			BlockSize:      require("dflash_config.block_size", f.BlockSize, &errs),
			MaskTokenID:    require("dflash_config.mask_token_id", f.MaskTokenID, &errs),
			SelectorTopK:   require("dflash_config.selector_top_k", f.SelectorTopK, &errs),
			SelectorRank:   require("dflash_config.selector_rank", f.SelectorRank, &errs),
			ConvGroupSize:  require("dflash_config.conv_group_size", f.ConvGroupSize, &errs),
			ConvKernelSize: require("dflash_config.conv_kernel_size", f.ConvKernelSize, &errs),
			TargetLayerIDs: slices.Clone(f.TargetLayerIDs),
		}
		if f.TargetLayerIDs == nil {
			errs = append(errs, fieldErr("dflash_config.target_layer_ids", "missing"))
		}
	}
	if len(errs) > 0 {
		return nil, joinErrs(errs)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// LoadDrafter reads a drafter config.json (path is the file or its directory).
func LoadDrafter(path string) (*Drafter, error) { return loadWith(path, ParseDrafter) }

// Validate checks the drafter configuration; errors name the field and rule.
func (d *Drafter) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"hidden_size", d.HiddenSize}, {"intermediate_size", d.IntermediateSize},
		{"num_hidden_layers", d.NumHiddenLayers}, {"num_attention_heads", d.NumAttentionHeads},
		{"num_key_value_heads", d.NumKeyValueHeads}, {"head_dim", d.HeadDim}, {"vocab_size", d.VocabSize},
		{"sliding_window", d.SlidingWindow}, {"num_target_layers", d.NumTargetLayers},
		{"dflash_config.block_size", d.DFlash.BlockSize}, {"dflash_config.selector_top_k", d.DFlash.SelectorTopK},
		{"dflash_config.selector_rank", d.DFlash.SelectorRank}, {"dflash_config.conv_group_size", d.DFlash.ConvGroupSize},
		{"dflash_config.conv_kernel_size", d.DFlash.ConvKernelSize},
	} {
		add(positive(f.name, f.v))
	}
	if d.NumKeyValueHeads > 0 && d.NumAttentionHeads%d.NumKeyValueHeads != 0 {
		add(fieldErr("num_key_value_heads", "must divide num_attention_heads (%d is not a multiple of %d)", d.NumAttentionHeads, d.NumKeyValueHeads))
	}
	if d.HeadDim%2 != 0 {
		add(fieldErr("head_dim", "must be even (RoPE rotates all %d dims in pairs)", d.HeadDim))
	}
	if d.DFlash.BlockSize < 2 && d.DFlash.BlockSize > 0 {
		add(fieldErr("dflash_config.block_size", "must be at least 2 (an anchor and one masked row), got %d", d.DFlash.BlockSize))
	}
	if d.DFlash.ConvGroupSize > 0 && d.HiddenSize%d.DFlash.ConvGroupSize != 0 {
		add(fieldErr("dflash_config.conv_group_size", "must divide hidden_size (%d is not a multiple of %d)", d.HiddenSize, d.DFlash.ConvGroupSize))
	}
	if id := d.DFlash.MaskTokenID; id < 0 || (d.VocabSize > 0 && id >= d.VocabSize) {
		add(fieldErr("dflash_config.mask_token_id", "%d is outside the vocabulary [0, %d)", id, d.VocabSize))
	}
	if k := d.DFlash.SelectorTopK; d.VocabSize > 0 && k > d.VocabSize {
		add(fieldErr("dflash_config.selector_top_k", "%d exceeds vocab_size %d", k, d.VocabSize))
	}
	ids := d.DFlash.TargetLayerIDs
	if len(ids) == 0 {
		add(fieldErr("dflash_config.target_layer_ids", "must list at least one target layer"))
	}
	for i, id := range ids {
		if id < 0 || id >= d.NumTargetLayers {
			add(fieldErr(fmt.Sprintf("dflash_config.target_layer_ids[%d]", i), "%d is outside the target's layers [0, %d)", id, d.NumTargetLayers))
		} else if i > 0 && id <= ids[i-1] {
			add(fieldErr(fmt.Sprintf("dflash_config.target_layer_ids[%d]", i), "%d must be greater than the previous id %d (strictly increasing)", id, ids[i-1]))
		}
	}
	if !(d.RopeTheta > 0) || math.IsInf(d.RopeTheta, 0) {
		add(fieldErr("rope_parameters.rope_theta", "must be a positive finite number, got %v", d.RopeTheta))
	}
	if e := d.RMSNormEps; !(e > 0 && e < 1) {
		add(fieldErr("rms_norm_eps", "must be in (0, 1), got %v", e))
	}
	return joinErrs(errs)
}

// FeatureSize is the width of the concatenated target features the
// drafter consumes: one hidden state per target layer id.
func (d *Drafter) FeatureSize(targetHidden int) int {
	return targetHidden * len(d.DFlash.TargetLayerIDs)
}

// MarshalHF writes the drafter config.json. The layout follows the public
// DFlash drafters (architectures DFlashDraftModel, model_type qwen3, the
// drafter fields at the top level, dflash_config nested); the exact file of
// the published DFlash2 drafter was not available to check against.
func (d *Drafter) MarshalHF() ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	type dflash struct {
		BlockSize      int   `json:"block_size"`
		MaskTokenID    int   `json:"mask_token_id"`
		SelectorTopK   int   `json:"selector_top_k"`
		SelectorRank   int   `json:"selector_rank"`
		ConvGroupSize  int   `json:"conv_group_size"`
		ConvKernelSize int   `json:"conv_kernel_size"`
		TargetLayerIDs []int `json:"target_layer_ids"`
	}
	out := struct {
		Architectures     []string `json:"architectures"`
		ModelType         string   `json:"model_type"`
		HiddenSize        int      `json:"hidden_size"`
		IntermediateSize  int      `json:"intermediate_size"`
		NumHiddenLayers   int      `json:"num_hidden_layers"`
		NumAttentionHeads int      `json:"num_attention_heads"`
		NumKeyValueHeads  int      `json:"num_key_value_heads"`
		HeadDim           int      `json:"head_dim"`
		VocabSize         int      `json:"vocab_size"`
		SlidingWindow     int      `json:"sliding_window"`
		NumTargetLayers   int      `json:"num_target_layers"`
		RMSNormEps        float64  `json:"rms_norm_eps"`
		RopeParameters    struct {
			RopeType  string  `json:"rope_type"`
			RopeTheta float64 `json:"rope_theta"`
		} `json:"rope_parameters"`
		DFlash dflash `json:"dflash_config"`
	}{
		Architectures: []string{"DFlashDraftModel"}, ModelType: "qwen3",
		HiddenSize: d.HiddenSize, IntermediateSize: d.IntermediateSize, NumHiddenLayers: d.NumHiddenLayers,
		NumAttentionHeads: d.NumAttentionHeads, NumKeyValueHeads: d.NumKeyValueHeads, HeadDim: d.HeadDim,
		VocabSize: d.VocabSize, SlidingWindow: d.SlidingWindow, NumTargetLayers: d.NumTargetLayers,
		RMSNormEps: d.RMSNormEps,
		DFlash:     dflash(d.DFlash),
	}
	out.RopeParameters.RopeType = "default"
	out.RopeParameters.RopeTheta = d.RopeTheta
	return json.MarshalIndent(out, "", "  ")
}
