package hfconfig

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// Layer types of qwen3_5's hybrid stack.
const (
	LinearAttention = "linear_attention" // Gated DeltaNet
	FullAttention   = "full_attention"
)

// Defaults transformers' Qwen3_5TextConfig applies when a field is absent.
const (
	defaultPartialRotaryFactor   = 0.25
	defaultFullAttentionInterval = 4
	defaultMaxPositionEmbeddings = 32768
)

// Model is the target model's text configuration. The JSON tags give the
// flat summary form (forgectl inspect --json); config.json itself is written
// by MarshalHF.
type Model struct {
	ModelType             string   `json:"model_type"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	LayerTypes            []string `json:"layer_types"` // LinearAttention or FullAttention, one per layer
	LinearNumKeyHeads     int      `json:"linear_num_key_heads"`
	LinearNumValueHeads   int      `json:"linear_num_value_heads"`
	LinearKeyHeadDim      int      `json:"linear_key_head_dim"`
	LinearValueHeadDim    int      `json:"linear_value_head_dim"`
	LinearConvKernelDim   int      `json:"linear_conv_kernel_dim"`
	RopeTheta             float64  `json:"rope_theta"`
	PartialRotaryFactor   float64  `json:"partial_rotary_factor"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	EOSTokenIDs           []int    `json:"eos_token_ids"`
}

// modelJSON holds the fields as they may appear at either level.
type modelJSON struct {
	ModelType             *string     `json:"model_type"`
	VocabSize             *int        `json:"vocab_size"`
	HiddenSize            *int        `json:"hidden_size"`
	IntermediateSize      *int        `json:"intermediate_size"`
	NumHiddenLayers       *int        `json:"num_hidden_layers"`
	NumAttentionHeads     *int        `json:"num_attention_heads"`
	NumKeyValueHeads      *int        `json:"num_key_value_heads"`
	HeadDim               *int        `json:"head_dim"`
	LayerTypes            []string    `json:"layer_types"`
	FullAttentionInterval *int        `json:"full_attention_interval"`
	LinearNumKeyHeads     *int        `json:"linear_num_key_heads"`
	LinearNumValueHeads   *int        `json:"linear_num_value_heads"`
	LinearKeyHeadDim      *int        `json:"linear_key_head_dim"`
	LinearValueHeadDim    *int        `json:"linear_value_head_dim"`
	LinearConvKernelDim   *int        `json:"linear_conv_kernel_dim"`
	RopeParameters        *ropeParams `json:"rope_parameters"`
	RopeTheta             *float64    `json:"rope_theta"`
	PartialRotaryFactor   *float64    `json:"partial_rotary_factor"`
	RMSNormEps            *float64    `json:"rms_norm_eps"`
	TieWordEmbeddings     *bool       `json:"tie_word_embeddings"`
	MaxPositionEmbeddings *int        `json:"max_position_embeddings"`
	EOSTokenID            *eosIDs     `json:"eos_token_id"`
	TextConfig            *modelJSON  `json:"text_config"`
}

// ParseModel parses and validates a qwen3_5 config.json.
func ParseModel(data []byte) (*Model, error) {
	var top modelJSON
	if err := decodeStrict(data, &top); err != nil {
		return nil, err
	}
	text := top.TextConfig
	if text == nil {
		text = &modelJSON{}
	} else if text.TextConfig != nil {
		return nil, fieldErr("text_config.text_config", "nested text_config is not allowed")
	}
	// Each field: text_config first, then the top level.
	var errs []error
	rope := func(j *modelJSON) *ropeParams {
		if j.RopeParameters == nil {
			return &ropeParams{}
		}
		return j.RopeParameters
	}
	rt, rtop := rope(text), rope(&top)
	m := &Model{
		VocabSize:           require("vocab_size", first(text.VocabSize, top.VocabSize), &errs),
		HiddenSize:          require("hidden_size", first(text.HiddenSize, top.HiddenSize), &errs),
		IntermediateSize:    require("intermediate_size", first(text.IntermediateSize, top.IntermediateSize), &errs),
		NumHiddenLayers:     require("num_hidden_layers", first(text.NumHiddenLayers, top.NumHiddenLayers), &errs),
		NumAttentionHeads:   require("num_attention_heads", first(text.NumAttentionHeads, top.NumAttentionHeads), &errs),
		NumKeyValueHeads:    require("num_key_value_heads", first(text.NumKeyValueHeads, top.NumKeyValueHeads), &errs),
		HeadDim:             require("head_dim", first(text.HeadDim, top.HeadDim), &errs),
		LinearNumKeyHeads:   require("linear_num_key_heads", first(text.LinearNumKeyHeads, top.LinearNumKeyHeads), &errs),
		LinearNumValueHeads: require("linear_num_value_heads", first(text.LinearNumValueHeads, top.LinearNumValueHeads), &errs),
		LinearKeyHeadDim:    require("linear_key_head_dim", first(text.LinearKeyHeadDim, top.LinearKeyHeadDim), &errs),
		LinearValueHeadDim:  require("linear_value_head_dim", first(text.LinearValueHeadDim, top.LinearValueHeadDim), &errs),
		LinearConvKernelDim: require("linear_conv_kernel_dim", first(text.LinearConvKernelDim, top.LinearConvKernelDim), &errs),
	}
	if mt := first(top.ModelType, text.ModelType); mt != nil {
		m.ModelType = *mt
	} else {
		errs = append(errs, fieldErr("model_type", "missing"))
	}
	if v := first(rt.RopeTheta, text.RopeTheta, rtop.RopeTheta, top.RopeTheta); v != nil {
		m.RopeTheta = *v
	} else {
		errs = append(errs, fieldErr("rope_parameters.rope_theta", "missing (also looked for rope_theta)"))
	}
	if v := first(text.RMSNormEps, top.RMSNormEps); v != nil {
		m.RMSNormEps = *v
	} else {
		errs = append(errs, fieldErr("rms_norm_eps", "missing"))
	}
	m.PartialRotaryFactor = defaultPartialRotaryFactor
	if v := first(rt.PartialRotaryFactor, text.PartialRotaryFactor, rtop.PartialRotaryFactor, top.PartialRotaryFactor); v != nil {
		m.PartialRotaryFactor = *v
	}
	if v := first(text.TieWordEmbeddings, top.TieWordEmbeddings); v != nil {
		m.TieWordEmbeddings = *v
	}
	m.MaxPositionEmbeddings = defaultMaxPositionEmbeddings
	if v := first(text.MaxPositionEmbeddings, top.MaxPositionEmbeddings); v != nil {
		m.MaxPositionEmbeddings = *v
	}
	if v := first(text.EOSTokenID, top.EOSTokenID); v != nil && len(*v) > 0 {
		m.EOSTokenIDs = slices.Clone([]int(*v))
	}
	switch {
	case text.LayerTypes != nil:
		m.LayerTypes = slices.Clone(text.LayerTypes)
	case top.LayerTypes != nil:
		m.LayerTypes = slices.Clone(top.LayerTypes)
	default: // transformers derives the pattern: every interval-th layer is full attention
		interval := defaultFullAttentionInterval
		if v := first(text.FullAttentionInterval, top.FullAttentionInterval); v != nil {
			interval = *v
		}
		if interval <= 0 {
			errs = append(errs, fieldErr("full_attention_interval", "must be positive, got %d", interval))
		} else if m.NumHiddenLayers > 0 && m.NumHiddenLayers <= maxLayers {
			m.LayerTypes = make([]string, m.NumHiddenLayers)
			for i := range m.LayerTypes {
				m.LayerTypes[i] = LinearAttention
				if (i+1)%interval == 0 {
					m.LayerTypes[i] = FullAttention
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, joinErrs(errs)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// LoadModel reads a config.json (path is the file or its directory).
func LoadModel(path string) (*Model, error) { return loadWith(path, ParseModel) }

// maxLayers bounds num_hidden_layers so a hostile config cannot make us
// allocate a huge layer_types table.
const maxLayers = 1 << 12

// Validate checks the configuration is internally consistent; every error
// names the field and the rule it breaks.
func (m *Model) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if m.ModelType != "qwen3_5" && m.ModelType != "qwen3_5_text" {
		add(fieldErr("model_type", "is %q, want qwen3_5 (or qwen3_5_text)", m.ModelType))
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"vocab_size", m.VocabSize}, {"hidden_size", m.HiddenSize}, {"intermediate_size", m.IntermediateSize},
		{"num_hidden_layers", m.NumHiddenLayers}, {"num_attention_heads", m.NumAttentionHeads},
		{"num_key_value_heads", m.NumKeyValueHeads}, {"head_dim", m.HeadDim},
		{"linear_num_key_heads", m.LinearNumKeyHeads}, {"linear_num_value_heads", m.LinearNumValueHeads},
		{"linear_key_head_dim", m.LinearKeyHeadDim}, {"linear_value_head_dim", m.LinearValueHeadDim},
		{"linear_conv_kernel_dim", m.LinearConvKernelDim}, {"max_position_embeddings", m.MaxPositionEmbeddings},
	} {
		add(positive(f.name, f.v))
	}
	if m.NumHiddenLayers > maxLayers {
		add(fieldErr("num_hidden_layers", "is %d, more than the %d this runtime supports", m.NumHiddenLayers, maxLayers))
	}
	if m.NumKeyValueHeads > 0 && m.NumAttentionHeads%m.NumKeyValueHeads != 0 {
		add(fieldErr("num_key_value_heads", "must divide num_attention_heads (%d is not a multiple of %d)", m.NumAttentionHeads, m.NumKeyValueHeads))
	}
	if m.LinearNumKeyHeads > 0 && m.LinearNumValueHeads%m.LinearNumKeyHeads != 0 {
		add(fieldErr("linear_num_key_heads", "must divide linear_num_value_heads (%d is not a multiple of %d)", m.LinearNumValueHeads, m.LinearNumKeyHeads))
	}
	if len(m.LayerTypes) != m.NumHiddenLayers {
		add(fieldErr("layer_types", "has %d entries, num_hidden_layers is %d", len(m.LayerTypes), m.NumHiddenLayers))
	}
	for i, t := range m.LayerTypes {
		if t != LinearAttention && t != FullAttention {
			add(fieldErr(fmt.Sprintf("layer_types[%d]", i), "is %q, want %q or %q", t, LinearAttention, FullAttention))
			break
		}
	}
	if !(m.RopeTheta > 0) || math.IsInf(m.RopeTheta, 0) {
		add(fieldErr("rope_parameters.rope_theta", "must be a positive finite number, got %v", m.RopeTheta))
	}
	if p := m.PartialRotaryFactor; !(p > 0 && p <= 1) {
		add(fieldErr("partial_rotary_factor", "must be in (0, 1], got %v", p))
	} else if rot := float64(m.HeadDim) * p; rot != math.Trunc(rot) || int(rot)%2 != 0 {
		add(fieldErr("partial_rotary_factor", "head_dim × partial_rotary_factor = %d × %v = %v must be an even integer (RoPE rotates pairs)", m.HeadDim, p, rot))
	}
	if e := m.RMSNormEps; !(e > 0 && e < 1) {
		add(fieldErr("rms_norm_eps", "must be in (0, 1), got %v", e))
	}
	for i, id := range m.EOSTokenIDs {
		if id < 0 || (m.VocabSize > 0 && id >= m.VocabSize) {
			add(fieldErr(fmt.Sprintf("eos_token_id[%d]", i), "%d is outside the vocabulary [0, %d)", id, m.VocabSize))
		}
	}
	return joinErrs(errs)
}

// RotaryDim is the number of leading dimensions of each head RoPE rotates.
func (m *Model) RotaryDim() int { return int(float64(m.HeadDim) * m.PartialRotaryFactor) }

// IsFullAttention reports whether layer uses softmax attention (false for
// Gated DeltaNet layers and for layers out of range).
func (m *Model) IsFullAttention(layer int) bool {
	return layer >= 0 && layer < len(m.LayerTypes) && m.LayerTypes[layer] == FullAttention
}

// NumFullAttentionLayers counts the softmax-attention layers (the ones with a KV cache).
func (m *Model) NumFullAttentionLayers() int {
	n := 0
	for i := range m.LayerTypes {
		if m.IsFullAttention(i) {
			n++
		}
	}
	return n
}

// hfTextConfig is text_config as transformers writes it (field order fixed
// so output is byte-stable).
type hfTextConfig struct {
	ModelType             string   `json:"model_type"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	HiddenAct             string   `json:"hidden_act"`
	AttentionBias         bool     `json:"attention_bias"`
	LayerTypes            []string `json:"layer_types"`
	LinearNumKeyHeads     int      `json:"linear_num_key_heads"`
	LinearNumValueHeads   int      `json:"linear_num_value_heads"`
	LinearKeyHeadDim      int      `json:"linear_key_head_dim"`
	LinearValueHeadDim    int      `json:"linear_value_head_dim"`
	LinearConvKernelDim   int      `json:"linear_conv_kernel_dim"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	RopeParameters        hfRope   `json:"rope_parameters"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	EOSTokenID            any      `json:"eos_token_id,omitempty"`
	DType                 string   `json:"dtype"`
}

type hfRope struct {
	RopeType            string  `json:"rope_type"`
	RopeTheta           float64 `json:"rope_theta"`
	PartialRotaryFactor float64 `json:"partial_rotary_factor"`
}

// MarshalHF writes the config in the Hugging Face qwen3_5 layout:
// Qwen3_5ForConditionalGeneration with the text model under text_config
// and RoPE under rope_parameters. The vision tower is not described: this
// project serves text only.
func (m *Model) MarshalHF() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	text := hfTextConfig{
		ModelType: "qwen3_5_text", VocabSize: m.VocabSize, HiddenSize: m.HiddenSize,
		IntermediateSize: m.IntermediateSize, NumHiddenLayers: m.NumHiddenLayers,
		NumAttentionHeads: m.NumAttentionHeads, NumKeyValueHeads: m.NumKeyValueHeads, HeadDim: m.HeadDim,
		HiddenAct: "silu", LayerTypes: m.LayerTypes,
		LinearNumKeyHeads: m.LinearNumKeyHeads, LinearNumValueHeads: m.LinearNumValueHeads,
		LinearKeyHeadDim: m.LinearKeyHeadDim, LinearValueHeadDim: m.LinearValueHeadDim,
		LinearConvKernelDim: m.LinearConvKernelDim, RMSNormEps: m.RMSNormEps,
		MaxPositionEmbeddings: m.MaxPositionEmbeddings,
		RopeParameters:        hfRope{RopeType: "default", RopeTheta: m.RopeTheta, PartialRotaryFactor: m.PartialRotaryFactor},
		TieWordEmbeddings:     m.TieWordEmbeddings, DType: "bfloat16",
	}
	text.EOSTokenID = eosValue(m.EOSTokenIDs)
	top := struct {
		Architectures     []string     `json:"architectures"`
		ModelType         string       `json:"model_type"`
		TextConfig        hfTextConfig `json:"text_config"`
		TieWordEmbeddings bool         `json:"tie_word_embeddings"`
		EOSTokenID        any          `json:"eos_token_id,omitempty"`
	}{[]string{"Qwen3_5ForConditionalGeneration"}, "qwen3_5", text, m.TieWordEmbeddings, text.EOSTokenID}
	return json.MarshalIndent(top, "", "  ")
}

// eosValue writes one id as an integer and several as a list, like HF.
func eosValue(ids []int) any {
	switch len(ids) {
	case 0:
		return nil
	case 1:
		return ids[0]
	}
	return ids
}
