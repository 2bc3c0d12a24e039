package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/gguf"
	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/internal/synth"
)

func TestTiledHeads(t *testing.T) {
	// Two key heads, three value heads each: llama.cpp position j = i·2 + g
	// holds group g's i-th head, stored at g·3 + i.
	if got, want := tiledHeads(2, 6), []int{0, 3, 1, 4, 2, 5}; !slices.Equal(got, want) {
		t.Fatalf("tiledHeads(2, 6) = %v, want %v", got, want)
	}
	if got, want := headRows([]int{1, 0}, 2), []int{2, 3, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("headRows = %v, want %v", got, want)
	}
}

func values(t *testing.T, tn gguf.Tensor) []float32 {
	t.Helper()
	switch tn.Type {
	case gguf.F32:
		v := make([]float32, len(tn.Data)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(tn.Data[4*i:]))
		}
		return v
	case gguf.BF16:
		v := make([]float32, len(tn.Data)/2)
		half.BF16ToF32(v, half.View(tn.Data))
		return v
	}
	t.Fatalf("%s: type %v", tn.Name, tn.Type)
	return nil
}

// TestQwen35GGUF converts the tiny preset and checks the layout llama.cpp
// loads (names, ggml shapes, types) and each transformation against the
// checkpoint's own tensors.
func TestQwen35GGUF(t *testing.T) {
	dir := t.TempDir()
	if err := synth.Generate(dir, synth.Options{Preset: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	cm, err := hfconfig.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ref.ConfigFromModel(cm)
	src, closer, err := ref.OpenCheckpointSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	kvs, tensors, err := qwen35GGUF(dir, cfg, src, gguf.BF16)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]gguf.Tensor{}
	for _, tn := range tensors {
		byName[tn.Name] = tn
	}
	hf := func(name string, shape ...int) []float32 {
		v, err := ref.Floats(src, name, shape...)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	get := func(name string, typ gguf.Type, dims ...uint64) []float32 {
		tn, ok := byName[name]
		if !ok {
			t.Fatalf("no tensor %s", name)
		}
		if tn.Type != typ || !slices.Equal(tn.Dims, dims) {
			t.Fatalf("%s: %v %v, want %v %v", name, tn.Type, tn.Dims, typ, dims)
		}
		return values(t, tn)
	}
	H, V := uint64(cfg.Hidden), uint64(cfg.Vocab)
	if got, want := get("token_embd.weight", gguf.BF16, H, V), hf(hfPrefix+"embed_tokens.weight", cfg.Vocab, cfg.Hidden); !slices.Equal(got, want) {
		t.Error("token_embd differs from embed_tokens")
	}
	get("output.weight", gguf.BF16, H, V)
	norm := hf(hfPrefix+"norm.weight", cfg.Hidden)
	if got := get("output_norm.weight", gguf.F32, H); got[5] != 1+norm[5] {
		t.Errorf("output_norm[5] = %v, want 1 + %v", got[5], norm[5])
	}
	nk, nv, d := cfg.LinKeyHeads, cfg.LinValueHeads, cfg.LinValueDim
	kd, vd := nk*cfg.LinKeyDim, nv*d
	cd := 2*kd + vd
	heads := tiledHeads(nk, nv)
	want := 3
	for i, full := range cfg.FullAttention {
		p, q := fmt.Sprintf("blk.%d.", i), fmt.Sprintf("%slayers.%d.", hfPrefix, i)
		want += 5 // norms and the MLP
		get(p+"ffn_down.weight", gguf.BF16, uint64(cfg.Intermediate), H)
		if full {
			want += 6
			get(p+"attn_q.weight", gguf.BF16, H, uint64(2*cfg.Heads*cfg.HeadDim))
			get(p+"attn_output.weight", gguf.BF16, uint64(cfg.Heads*cfg.HeadDim), H)
			kn := hf(q+"self_attn.k_norm.weight", cfg.HeadDim)
			if got := get(p+"attn_k_norm.weight", gguf.F32, uint64(cfg.HeadDim)); got[1] != 1+kn[1] {
				t.Errorf("layer %d: attn_k_norm[1] = %v, want 1 + %v", i, got[1], kn[1])
			}
			continue
		}
		want += 9
		aLog, dt := hf(q+"linear_attn.A_log", nv), hf(q+"linear_attn.dt_bias", nv)
		a, bias := get(p+"ssm_a", gguf.F32, uint64(nv)), get(p+"ssm_dt.bias", gguf.F32, uint64(nv))
		for j, h := range heads {
			if a[j] != -float32(math.Exp(float64(aLog[h]))) || bias[j] != dt[h] {
				t.Fatalf("layer %d head %d: ssm_a %v, dt %v; want −exp(%v), %v (checkpoint head %d)", i, j, a[j], bias[j], aLog[h], dt[h], h)
			}
		}
		qkv, wq := get(p+"attn_qkv.weight", gguf.BF16, H, uint64(cd)), hf(q+"linear_attn.in_proj_qkv.weight", cd, cfg.Hidden)
		conv, wc := get(p+"ssm_conv1d.weight", gguf.F32, uint64(cfg.ConvKernel), uint64(cd)), hf(q+"linear_attn.conv1d.weight", cd, 1, cfg.ConvKernel)
		out, wo := get(p+"ssm_out.weight", gguf.BF16, uint64(vd), H), hf(q+"linear_attn.out_proj.weight", cfg.Hidden, vd)
		for j, h := range heads {
			for k := range d {
				dst, from := 2*kd+j*d+k, 2*kd+h*d+k // a value row: tiled head j from stored head h
				if qkv[dst*cfg.Hidden+3] != wq[from*cfg.Hidden+3] || conv[dst*cfg.ConvKernel+1] != wc[from*cfg.ConvKernel+1] {
					t.Fatalf("layer %d: value channel %d is not stored channel %d", i, dst, from)
				}
				if out[2*vd+j*d+k] != wo[2*vd+h*d+k] { // row 2 of out_proj, column of head j
					t.Fatalf("layer %d: ssm_out column %d is not out_proj column %d", i, j*d+k, h*d+k)
				}
			}
		}
		if qkv[7*cfg.Hidden+2] != wq[7*cfg.Hidden+2] {
			t.Errorf("layer %d: a query row moved", i)
		}
		gn := hf(q+"linear_attn.norm.weight", d)
		if got := get(p+"ssm_norm.weight", gguf.F32, uint64(d)); got[2] != gn[2] {
			t.Errorf("layer %d: ssm_norm[2] = %v, want %v unchanged (the gated norm has no +1)", i, got[2], gn[2])
		}
	}
	if len(tensors) != want {
		t.Errorf("%d tensors, want %d", len(tensors), want)
	}
	meta := map[string]any{}
	for _, kv := range kvs {
		meta[kv.Key] = kv.Value
	}
	if meta["general.architecture"] != "qwen35" || meta["qwen35.ssm.time_step_rank"] != uint32(nv) || meta["qwen35.ssm.group_count"] != uint32(nk) {
		t.Errorf("metadata %v", meta)
	}
	if s := meta["qwen35.rope.dimension_sections"].([]int32); len(s) != 4 || int(s[0]+s[1]+s[2]+s[3]) != cfg.RotaryDim/2 {
		t.Errorf("rope sections %v, want 4 summing to %d", s, cfg.RotaryDim/2)
	}
	toks, types := meta["tokenizer.ggml.tokens"].([]string), meta["tokenizer.ggml.token_type"].([]int32)
	if len(toks) != cfg.Vocab || len(types) != cfg.Vocab {
		t.Fatalf("%d tokens, %d types, want %d", len(toks), len(types), cfg.Vocab)
	}
	eos := cm.EOSTokenIDs[0]
	if types[eos] != 3 || toks[eos] != "<|im_end|>" || types[0] != 1 {
		t.Errorf("tokens: eos %q (type %d), 0 type %d", toks[eos], types[eos], types[0])
	}
	if len(slices.Compact(slices.Sorted(slices.Values(toks)))) != cfg.Vocab || slices.Contains(toks, "") {
		t.Error("token strings repeat or are empty (llama.cpp asserts they are unique)")
	}
}

// TestQwen35TokenizerPads: ids past the tokenizer's (the config's padding
// rows) become unused tokens, and a repeated id is an error.
func TestQwen35TokenizerPads(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/tokenizer.json"
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}, "added_tokens": [{"id": 3, "content": "<|end|>"}]}`)
	kvs, err := qwen35Tokenizer(path, 6)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{}
	for _, kv := range kvs {
		meta[kv.Key] = kv.Value
	}
	if got := meta["tokenizer.ggml.tokens"].([]string); !slices.Equal(got, []string{"a", "b", "ab", "<|end|>", "<|unused_4|>", "<|unused_5|>"}) {
		t.Errorf("tokens %q", got)
	}
	if got := meta["tokenizer.ggml.token_type"].([]int32); !slices.Equal(got, []int32{1, 1, 1, 3, 5, 5}) {
		t.Errorf("types %v", got)
	}
	if got := meta["tokenizer.ggml.merges"].([]string); !slices.Equal(got, []string{"a b"}) {
		t.Errorf("merges %q", got)
	}
	write(`{"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": [{"id": 0, "content": "<|end|>"}]}`)
	if _, err := qwen35Tokenizer(path, 6); err == nil || !strings.Contains(err.Error(), "token id 0") {
		t.Errorf("repeated id: %v", err)
	}
	write(`{"model": {"type": "Unigram"}}`)
	if _, err := qwen35Tokenizer(path, 6); err == nil || !strings.Contains(err.Error(), "want BPE") {
		t.Errorf("unigram: %v", err)
	}
}

func TestQwen35GGUFRejects(t *testing.T) {
	cfg := ref.Config{LinKeyDim: 128, LinValueDim: 64}
	if _, _, err := qwen35GGUF("", cfg, ref.MapSource{}, gguf.BF16); err == nil || !strings.Contains(err.Error(), "equal DeltaNet key and value head sizes") {
		t.Errorf("unequal head sizes: %v", err)
	}
	cfg = ref.Config{LinKeyDim: 64, LinValueDim: 64, FullAttention: []bool{false, true, false, false}}
	if _, _, err := qwen35GGUF("", cfg, ref.MapSource{}, gguf.BF16); err == nil || !strings.Contains(err.Error(), "layer 1") {
		t.Errorf("full attention on layer 1: %v", err)
	}
}

// FuzzQwen35Tokenizer: any tokenizer.json gives an error or vocab token
// strings, none empty, never a panic.
func FuzzQwen35Tokenizer(f *testing.F) {
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]}, "added_tokens": [{"id": 2, "content": "<|e|>"}]}`))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": -1}}}`))
	path := filepath.Join(f.TempDir(), "tokenizer.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		kvs, err := qwen35Tokenizer(path, 8)
		if err != nil {
			return
		}
		for _, kv := range kvs {
			if toks, ok := kv.Value.([]string); ok && kv.Key == "tokenizer.ggml.tokens" && (len(toks) != 8 || slices.Contains(toks, "")) {
				t.Fatalf("tokens %q", toks)
			}
		}
	})
}
