// Package layout is the one table of qwen3_5 checkpoint tensors: for a
// model configuration it lists every tensor a Hugging Face Qwen3.5/3.8
// checkpoint holds, with its name and shape. The synthetic checkpoint
// generator writes exactly this list and the engine loads against it, so
// the two can never disagree.
//
// Names and shapes follow transformers' qwen3_5 modeling code
// (Qwen3_5GatedDeltaNet, Qwen3_5Attention, Qwen3_5MLP, the decoder layer and
// the text model nested as model.language_model in
// Qwen3_5ForConditionalGeneration). Linear weights are (out, in).
package layout

import (
	"fmt"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
)

// Prefix is the name prefix of every tensor of the text model; the LM head
// (HeadName) sits outside it.
const Prefix = "model.language_model."

// Names of the tensors outside the decoder layers.
const (
	EmbedName = Prefix + "embed_tokens.weight"
	NormName  = Prefix + "norm.weight"
	HeadName  = "lm_head.weight"
)

// Kind says how a tensor is used, so consumers (the quantizer, the weight
// generator) can treat matrices, norms and the DeltaNet parameters apart
// without parsing names.
type Kind string

const (
	Linear    Kind = "linear"     // a projection (out, in)
	Embedding Kind = "embedding"  // (vocab, hidden) rows looked up by token id
	Norm      Kind = "norm"       // zero-centred RMSNorm gain: the layer computes x·(1+w)
	GatedNorm Kind = "gated_norm" // the DeltaNet output norm: plain gain w, then ·silu(z)
	Conv      Kind = "conv"       // DeltaNet depthwise causal conv (channels, 1, kernel)
	ALog      Kind = "a_log"      // DeltaNet log decay rate per value head
	DtBias    Kind = "dt_bias"    // DeltaNet time-step bias per value head
)

// TensorSpec is one checkpoint tensor. Layer is the decoder layer index, or
// -1 for the embedding, final norm and head.
type TensorSpec struct {
	Name  string
	Shape []int
	Kind  Kind
	Layer int
}

// Elements is the number of values in the tensor.
func (t TensorSpec) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// LayerPrefix is the name prefix of decoder layer i.
func LayerPrefix(i int) string { return fmt.Sprintf("%slayers.%d.", Prefix, i) }

// CheckpointTensors lists every tensor of a qwen3_5 checkpoint for cfg, in
// a fixed order: the embedding, then each layer (mixer, MLP, norms), then
// the final norm and the LM head. The config must be valid (cfg.Validate);
// the function does not re-check divisibility.
func CheckpointTensors(cfg *hfconfig.Model) []TensorSpec {
	h := cfg.HiddenSize
	specs := []TensorSpec{{EmbedName, []int{cfg.VocabSize, h}, Embedding, -1}}
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		specs = append(specs, LayerTensors(cfg, i)...)
	}
	return append(specs,
		TensorSpec{NormName, []int{h}, Norm, -1},
		TensorSpec{HeadName, []int{cfg.VocabSize, h}, Linear, -1},
	)
}

// LayerTensors lists the tensors of decoder layer i.
func LayerTensors(cfg *hfconfig.Model, i int) []TensorSpec {
	h := cfg.HiddenSize
	p := LayerPrefix(i)
	t := func(name string, kind Kind, shape ...int) TensorSpec {
		return TensorSpec{p + name, shape, kind, i}
	}
	var specs []TensorSpec
	if cfg.IsFullAttention(i) {
		hd := cfg.HeadDim
		q := cfg.NumAttentionHeads * hd
		kv := cfg.NumKeyValueHeads * hd
		specs = []TensorSpec{
			// q_proj emits, per head, the query then the output gate.
			t("self_attn.q_proj.weight", Linear, 2*q, h),
			t("self_attn.k_proj.weight", Linear, kv, h),
			t("self_attn.v_proj.weight", Linear, kv, h),
			t("self_attn.o_proj.weight", Linear, h, q),
			t("self_attn.q_norm.weight", Norm, hd),
			t("self_attn.k_norm.weight", Norm, hd),
		}
	} else {
		kd := cfg.LinearNumKeyHeads * cfg.LinearKeyHeadDim
		vd := cfg.LinearNumValueHeads * cfg.LinearValueHeadDim
		nv := cfg.LinearNumValueHeads
		conv := 2*kd + vd // q ‖ k ‖ v channels go through the conv
		specs = []TensorSpec{
			t("linear_attn.in_proj_qkv.weight", Linear, conv, h),
			t("linear_attn.in_proj_z.weight", Linear, vd, h),
			t("linear_attn.in_proj_b.weight", Linear, nv, h),
			t("linear_attn.in_proj_a.weight", Linear, nv, h),
			t("linear_attn.conv1d.weight", Conv, conv, 1, cfg.LinearConvKernelDim),
			t("linear_attn.A_log", ALog, nv),
			t("linear_attn.dt_bias", DtBias, nv),
			t("linear_attn.norm.weight", GatedNorm, cfg.LinearValueHeadDim),
			t("linear_attn.out_proj.weight", Linear, h, vd),
		}
	}
	inter := cfg.IntermediateSize
	return append(specs,
		t("mlp.gate_proj.weight", Linear, inter, h),
		t("mlp.up_proj.weight", Linear, inter, h),
		t("mlp.down_proj.weight", Linear, h, inter),
		t("input_layernorm.weight", Norm, h),
		t("post_attention_layernorm.weight", Norm, h),
	)
}

// ParameterCount is the total number of values in the checkpoint.
func ParameterCount(cfg *hfconfig.Model) int64 {
	var n int64
	for _, t := range CheckpointTensors(cfg) {
		n += t.Elements()
	}
	return n
}
