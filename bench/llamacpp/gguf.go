package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/forgedaemon/forged/ane/format/gguf"
	"github.com/forgedaemon/forged/ane/ref"
)

// The llama.cpp peer runs the same synthetic checkpoint converted to its
// qwen35 GGUF layout (llama.cpp src/llama-model.cpp, LLM_ARCH_QWEN35, and
// convert_hf_to_gguf.py's Qwen3.5 conversion), the matrices BF16 as
// stored and the vectors F32, for llama-quantize to quantize:
//   - names: model.language_model.layers.N.linear_attn.in_proj_qkv →
//     blk.N.attn_qkv and so on (qwen35Names);
//   - the zero-centred RMSNorm weights get +1 (llama.cpp multiplies by
//     the weight plainly), the gated one of the DeltaNet (linear_attn.norm)
//     does not;
//   - ssm_a = −exp(A_log); conv1d [C, 1, K] becomes [C, K];
//   - the DeltaNet value heads go from the checkpoint's grouped order
//     (head g·r + i for key head g, r = value heads / key heads) to the
//     tiled order llama.cpp broadcasts the key heads in (head i·nk + g),
//     wherever a tensor has a value-head axis.
// The conversion is for the throughput comparison: llama.cpp's logits on
// it were not compared with the engine's here (docs/KERNELS.md).

const (
	hfPrefix = "model.language_model."
	// ggufContext is the context_length written: the runs need 520.
	ggufContext = 4096
)

// qwen35GGUF converts the checkpoint (cfg, src, its tokenizer.json in
// dir) to llama.cpp's layout, the matrices as matrixType (BF16, or F32
// for the logits comparison).
func qwen35GGUF(dir string, cfg ref.Config, src ref.Source, matrixType gguf.Type) ([]gguf.KV, []gguf.Tensor, error) {
	if cfg.LinKeyDim != cfg.LinValueDim {
		// llama.cpp's qwen35 takes the value head size from ssm.state_size.
		return nil, nil, fmt.Errorf("gguf: llama.cpp's qwen35 needs equal DeltaNet key and value head sizes, have %d and %d", cfg.LinKeyDim, cfg.LinValueDim)
	}
	for i, full := range cfg.FullAttention {
		if full != (i%4 == 3) {
			return nil, nil, fmt.Errorf("gguf: layer %d: llama.cpp's qwen35 puts full attention on every fourth layer (3, 7, …)", i)
		}
	}
	half := int32(cfg.RotaryDim / 2)
	sections := []int32{half - 2*(half/3), half / 3, half / 3, 0} // text positions: any split of the rotary pairs rotates alike
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "qwen35"},
		{Key: "general.name", Value: "forged synthetic checkpoint"},
		{Key: "qwen35.context_length", Value: uint32(ggufContext)},
		{Key: "qwen35.embedding_length", Value: uint32(cfg.Hidden)},
		{Key: "qwen35.block_count", Value: uint32(cfg.Layers)},
		{Key: "qwen35.feed_forward_length", Value: uint32(cfg.Intermediate)},
		{Key: "qwen35.attention.head_count", Value: uint32(cfg.Heads)},
		{Key: "qwen35.attention.head_count_kv", Value: uint32(cfg.KVHeads)},
		{Key: "qwen35.attention.key_length", Value: uint32(cfg.HeadDim)},
		{Key: "qwen35.attention.value_length", Value: uint32(cfg.HeadDim)},
		{Key: "qwen35.attention.layer_norm_rms_epsilon", Value: float32(cfg.Eps)},
		{Key: "qwen35.rope.dimension_count", Value: uint32(cfg.RotaryDim)},
		{Key: "qwen35.rope.freq_base", Value: float32(cfg.RopeTheta)},
		{Key: "qwen35.rope.dimension_sections", Value: sections},
		{Key: "qwen35.ssm.conv_kernel", Value: uint32(cfg.ConvKernel)},
		{Key: "qwen35.ssm.state_size", Value: uint32(cfg.LinKeyDim)},
		{Key: "qwen35.ssm.group_count", Value: uint32(cfg.LinKeyHeads)},
		{Key: "qwen35.ssm.time_step_rank", Value: uint32(cfg.LinValueHeads)},
		{Key: "qwen35.ssm.inner_size", Value: uint32(cfg.LinValueHeads * cfg.LinValueDim)},
		{Key: "qwen35.full_attention_interval", Value: uint32(4)},
	}
	tok, err := qwen35Tokenizer(filepath.Join(dir, "tokenizer.json"), cfg.Vocab)
	if err != nil {
		return nil, nil, err
	}
	kvs = append(kvs, tok...)
	c := &converter{cfg: cfg, src: src, matrixType: matrixType}
	H := cfg.Hidden
	c.matrix("token_embd.weight", hfPrefix+"embed_tokens.weight", cfg.Vocab, H, nil, nil)
	c.vector("output_norm.weight", hfPrefix+"norm.weight", plusOne, H)
	c.matrix("output.weight", "lm_head.weight", cfg.Vocab, H, nil, nil)
	for i := range cfg.Layers {
		c.layer(i)
	}
	return kvs, c.out, c.err
}

// converter accumulates the converted tensors, keeping the first error.
type converter struct {
	cfg        ref.Config
	src        ref.Source
	matrixType gguf.Type
	out        []gguf.Tensor
	err        error
}

func (c *converter) read(name string, shape ...int) []float32 {
	if c.err != nil {
		return nil
	}
	v, err := ref.Floats(c.src, name, shape...)
	c.err = err
	return v
}

// matrix converts the rows×cols matrix name to c.matrixType, rows
// reordered by rowPerm and columns by colPerm (nil: as stored).
func (c *converter) matrix(to, name string, rows, cols int, rowPerm, colPerm []int) {
	w := c.read(name, rows, cols)
	if w == nil {
		return
	}
	w = permute(w, rows, cols, rowPerm, colPerm)
	data := gguf.BF16Bytes(w)
	if c.matrixType == gguf.F32 {
		data = gguf.Float32Bytes(w)
	}
	c.out = append(c.out, gguf.Tensor{Name: to, Dims: []uint64{uint64(cols), uint64(rows)}, Type: c.matrixType, Data: data})
}

// vector converts a tensor of n values (any shape) to F32 through f.
func (c *converter) vector(to, name string, f func(float32) float32, shape ...int) {
	v := c.read(name, shape...)
	if v == nil {
		return
	}
	for i := range v {
		v[i] = f(v[i])
	}
	c.out = append(c.out, gguf.Tensor{Name: to, Dims: []uint64{uint64(len(v))}, Type: gguf.F32, Data: gguf.Float32Bytes(v)})
}

func same(v float32) float32    { return v }
func plusOne(v float32) float32 { return 1 + v }
func negExp(v float32) float32  { return -float32(math.Exp(float64(v))) }

func (c *converter) layer(i int) {
	cfg := &c.cfg
	H, I := cfg.Hidden, cfg.Intermediate
	hf := fmt.Sprintf("%slayers.%d.", hfPrefix, i)
	to := fmt.Sprintf("blk.%d.", i)
	c.vector(to+"attn_norm.weight", hf+"input_layernorm.weight", plusOne, H)
	c.vector(to+"post_attention_norm.weight", hf+"post_attention_layernorm.weight", plusOne, H)
	if cfg.FullAttention[i] {
		q, kv := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
		// q_proj's rows are per head [query, gate], the order llama.cpp views.
		c.matrix(to+"attn_q.weight", hf+"self_attn.q_proj.weight", 2*q, H, nil, nil)
		c.matrix(to+"attn_k.weight", hf+"self_attn.k_proj.weight", kv, H, nil, nil)
		c.matrix(to+"attn_v.weight", hf+"self_attn.v_proj.weight", kv, H, nil, nil)
		c.matrix(to+"attn_output.weight", hf+"self_attn.o_proj.weight", H, q, nil, nil)
		c.vector(to+"attn_q_norm.weight", hf+"self_attn.q_norm.weight", plusOne, cfg.HeadDim)
		c.vector(to+"attn_k_norm.weight", hf+"self_attn.k_norm.weight", plusOne, cfg.HeadDim)
	} else {
		nk, nv, dk, dv := cfg.LinKeyHeads, cfg.LinValueHeads, cfg.LinKeyDim, cfg.LinValueDim
		kd, vd := nk*dk, nv*dv
		heads := tiledHeads(nk, nv)
		vRows := headRows(heads, dv)
		qkvRows := make([]int, 0, 2*kd+vd) // q and k as stored, the value rows tiled
		for r := range 2 * kd {
			qkvRows = append(qkvRows, r)
		}
		for _, r := range vRows {
			qkvRows = append(qkvRows, 2*kd+r)
		}
		c.matrix(to+"attn_qkv.weight", hf+"linear_attn.in_proj_qkv.weight", 2*kd+vd, H, qkvRows, nil)
		c.matrix(to+"attn_gate.weight", hf+"linear_attn.in_proj_z.weight", vd, H, vRows, nil)
		c.matrix(to+"ssm_beta.weight", hf+"linear_attn.in_proj_b.weight", nv, H, heads, nil)
		c.matrix(to+"ssm_alpha.weight", hf+"linear_attn.in_proj_a.weight", nv, H, heads, nil)
		c.matrix(to+"ssm_out.weight", hf+"linear_attn.out_proj.weight", H, vd, nil, vRows)
		if conv := c.read(hf+"linear_attn.conv1d.weight", 2*kd+vd, 1, cfg.ConvKernel); conv != nil {
			conv = permute(conv, 2*kd+vd, cfg.ConvKernel, qkvRows, nil)
			c.out = append(c.out, gguf.Tensor{Name: to + "ssm_conv1d.weight", Dims: []uint64{uint64(cfg.ConvKernel), uint64(2*kd + vd)},
				Type: gguf.F32, Data: gguf.Float32Bytes(conv)})
		}
		c.headVector(to+"ssm_a", hf+"linear_attn.A_log", negExp, heads)
		c.headVector(to+"ssm_dt.bias", hf+"linear_attn.dt_bias", same, heads)
		c.vector(to+"ssm_norm.weight", hf+"linear_attn.norm.weight", same, dv)
	}
	c.matrix(to+"ffn_gate.weight", hf+"mlp.gate_proj.weight", I, H, nil, nil)
	c.matrix(to+"ffn_up.weight", hf+"mlp.up_proj.weight", I, H, nil, nil)
	c.matrix(to+"ffn_down.weight", hf+"mlp.down_proj.weight", H, I, nil, nil)
}

// headVector converts a per-value-head vector through f, in the tiled
// head order.
func (c *converter) headVector(to, name string, f func(float32) float32, heads []int) {
	v := c.read(name, len(heads))
	if v == nil {
		return
	}
	out := make([]float32, len(heads))
	for j, h := range heads {
		out[j] = f(v[h])
	}
	c.out = append(c.out, gguf.Tensor{Name: to, Dims: []uint64{uint64(len(out))}, Type: gguf.F32, Data: gguf.Float32Bytes(out)})
}

// tiledHeads[j] is the checkpoint's value head at llama.cpp's position j:
// position j = i·nk + g holds key group g's i-th value head, stored at
// g·(nv/nk) + i.
func tiledHeads(nk, nv int) []int {
	r := nv / nk
	heads := make([]int, nv)
	for j := range heads {
		heads[j] = (j%nk)*r + j/nk
	}
	return heads
}

// headRows expands a head order to the rows of heads of size d each.
func headRows(heads []int, d int) []int {
	rows := make([]int, 0, len(heads)*d)
	for _, h := range heads {
		for k := range d {
			rows = append(rows, h*d+k)
		}
	}
	return rows
}

// permute returns w (rows×cols) with out[r][c] = w[rowPerm[r]][colPerm[c]]
// (a nil order keeps that axis).
func permute(w []float32, rows, cols int, rowPerm, colPerm []int) []float32 {
	if rowPerm == nil && colPerm == nil {
		return w
	}
	out := make([]float32, len(w))
	for r := range rows {
		src := r
		if rowPerm != nil {
			src = rowPerm[r]
		}
		row, dst := w[src*cols:(src+1)*cols], out[r*cols:(r+1)*cols]
		if colPerm == nil {
			copy(dst, row)
			continue
		}
		for k, from := range colPerm {
			dst[k] = row[from]
		}
	}
	return out
}

// qwen35Tokenizer is the checkpoint's byte-level BPE (tokenizer.json) as
// llama.cpp's "gpt2" tokenizer metadata: the tokens by id, the merges,
// the added tokens as control tokens, and the rows past the tokenizer (the
// config's vocab_size pads the embedding) as unused tokens.
func qwen35Tokenizer(path string, vocab int) ([]gguf.KV, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tj struct {
		Model struct {
			Type   string         `json:"type"`
			Vocab  map[string]int `json:"vocab"`
			Merges [][2]string    `json:"merges"`
		} `json:"model"`
		Added []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if tj.Model.Type != "BPE" {
		return nil, fmt.Errorf("%s: model type %q, want BPE", path, tj.Model.Type)
	}
	const normal, control, unused = 1, 3, 5 // llama_token_type
	tokens, types := make([]string, vocab), make([]int32, vocab)
	set := func(id int, s string, typ int32) error {
		if id < 0 || id >= vocab || tokens[id] != "" {
			return fmt.Errorf("%s: token id %d (%q) is out of range or repeated (vocab %d)", path, id, s, vocab)
		}
		tokens[id], types[id] = s, typ
		return nil
	}
	for s, id := range tj.Model.Vocab {
		if err := set(id, s, normal); err != nil {
			return nil, err
		}
	}
	for _, a := range tj.Added {
		if err := set(a.ID, a.Content, control); err != nil {
			return nil, err
		}
	}
	for id := range tokens {
		if tokens[id] == "" {
			tokens[id], types[id] = fmt.Sprintf("<|unused_%d|>", id), unused
		}
	}
	merges := make([]string, len(tj.Model.Merges))
	for i, m := range tj.Model.Merges {
		merges[i] = m[0] + " " + m[1]
	}
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		{Key: "tokenizer.ggml.pre", Value: "qwen2"},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.merges", Value: merges},
	}, nil
}
