package layout

import (
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
)

// qwen38 is the published Qwen3.8-27B text configuration
// (text_config of the published bundle's model/config.json,
// anemll/anemll-forge-qwen3.8-27B on Hugging Face).
func qwen38() *hfconfig.Model {
	types := make([]string, 64)
	for i := range types {
		types[i] = hfconfig.LinearAttention
		if i%4 == 3 {
			types[i] = hfconfig.FullAttention
		}
	}
	return &hfconfig.Model{
		ModelType: "qwen3_5", VocabSize: 248320, HiddenSize: 5120, IntermediateSize: 17408,
		NumHiddenLayers: 64, NumAttentionHeads: 24, NumKeyValueHeads: 4, HeadDim: 256, LayerTypes: types,
		LinearNumKeyHeads: 16, LinearNumValueHeads: 48, LinearKeyHeadDim: 128, LinearValueHeadDim: 128,
		LinearConvKernelDim: 4, RopeTheta: 1e7, PartialRotaryFactor: 0.25, RMSNormEps: 1e-6,
		MaxPositionEmbeddings: 262144,
	}
}

func TestPublishedShapes(t *testing.T) {
	cfg := qwen38()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	byName := map[string]TensorSpec{}
	for _, s := range CheckpointTensors(cfg) {
		if _, dup := byName[s.Name]; dup {
			t.Fatalf("duplicate tensor %s", s.Name)
		}
		byName[s.Name] = s
	}
	// Shapes from the export headers and the published model/config.json.
	want := map[string][]int{
		"model.language_model.embed_tokens.weight": {248320, 5120},
		"lm_head.weight":                   {248320, 5120},
		"model.language_model.norm.weight": {5120},
		"model.language_model.layers.0.linear_attn.in_proj_qkv.weight":   {10240, 5120},
		"model.language_model.layers.0.linear_attn.in_proj_z.weight":     {6144, 5120},
		"model.language_model.layers.0.linear_attn.in_proj_a.weight":     {48, 5120},
		"model.language_model.layers.0.linear_attn.in_proj_b.weight":     {48, 5120},
		"model.language_model.layers.0.linear_attn.out_proj.weight":      {5120, 6144},
		"model.language_model.layers.0.linear_attn.conv1d.weight":        {10240, 1, 4},
		"model.language_model.layers.0.linear_attn.A_log":                {48},
		"model.language_model.layers.0.linear_attn.dt_bias":              {48},
		"model.language_model.layers.0.linear_attn.norm.weight":          {128},
		"model.language_model.layers.3.self_attn.q_proj.weight":          {12288, 5120},
		"model.language_model.layers.3.self_attn.k_proj.weight":          {1024, 5120},
		"model.language_model.layers.3.self_attn.v_proj.weight":          {1024, 5120},
		"model.language_model.layers.3.self_attn.o_proj.weight":          {5120, 6144},
		"model.language_model.layers.3.self_attn.q_norm.weight":          {256},
		"model.language_model.layers.3.self_attn.k_norm.weight":          {256},
		"model.language_model.layers.63.mlp.gate_proj.weight":            {17408, 5120},
		"model.language_model.layers.63.mlp.up_proj.weight":              {17408, 5120},
		"model.language_model.layers.63.mlp.down_proj.weight":            {5120, 17408},
		"model.language_model.layers.62.input_layernorm.weight":          {5120},
		"model.language_model.layers.62.post_attention_layernorm.weight": {5120},
	}
	for name, shape := range want {
		got, ok := byName[name]
		if !ok {
			t.Errorf("missing %s", name)
			continue
		}
		if !equal(got.Shape, shape) {
			t.Errorf("%s: shape %v, want %v", name, got.Shape, shape)
		}
	}
	// 48 DeltaNet layers × 14 tensors + 16 attention layers × 11 + 3.
	if n := len(byName); n != 48*14+16*11+3 {
		t.Errorf("%d tensors, want %d", n, 48*14+16*11+3)
	}
	// Attention layers carry no DeltaNet tensors and vice versa.
	for name := range byName {
		if strings.Contains(name, "layers.3.linear_attn") || strings.Contains(name, "layers.0.self_attn") {
			t.Errorf("%s belongs to the other layer type", name)
		}
	}
	// The published model is "27B": 26.9e9 parameters with the untied head.
	if n := ParameterCount(cfg); n < 26.5e9 || n > 27.5e9 {
		t.Errorf("parameter count %d, want ≈ 27e9", n)
	}
}

func TestKindsAndLayers(t *testing.T) {
	for _, s := range CheckpointTensors(qwen38()) {
		wantLayer := -1
		if strings.HasPrefix(s.Name, Prefix+"layers.") {
			var i int
			rest := strings.TrimPrefix(s.Name, Prefix+"layers.")
			for _, c := range rest {
				if c < '0' || c > '9' {
					break
				}
				i = i*10 + int(c-'0')
			}
			wantLayer = i
			if !strings.HasPrefix(s.Name, LayerPrefix(i)) {
				t.Errorf("%s: LayerPrefix(%d) = %s", s.Name, i, LayerPrefix(i))
			}
		}
		if s.Layer != wantLayer {
			t.Errorf("%s: Layer %d, want %d", s.Name, s.Layer, wantLayer)
		}
		var want Kind
		switch {
		case strings.Contains(s.Name, "_proj") || s.Name == HeadName:
			want = Linear
		case s.Name == EmbedName:
			want = Embedding
		case strings.HasSuffix(s.Name, "linear_attn.norm.weight"):
			want = GatedNorm
		case strings.HasSuffix(s.Name, "norm.weight"):
			want = Norm
		case strings.HasSuffix(s.Name, "conv1d.weight"):
			want = Conv
		case strings.HasSuffix(s.Name, "A_log"):
			want = ALog
		case strings.HasSuffix(s.Name, "dt_bias"):
			want = DtBias
		}
		if s.Kind != want {
			t.Errorf("%s: kind %q, want %q", s.Name, s.Kind, want)
		}
		if (s.Kind == Linear || s.Kind == Embedding) && len(s.Shape) != 2 {
			t.Errorf("%s: a matrix with shape %v", s.Name, s.Shape)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
