package hfconfig

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// qwen38Config is shaped like the real Qwen3.8-27B config.json (the published
// bundle anemll/anemll-forge-qwen3.8-27B, model/config.json): HF layout with
// text_config, rope_parameters, a vision tower we ignore, and eos_token_id as
// an int.
func qwen38Config() string {
	var lt []string
	for i := range 64 {
		if i%4 == 3 {
			lt = append(lt, `"full_attention"`)
		} else {
			lt = append(lt, `"linear_attention"`)
		}
	}
	return `{
  "architectures": ["Qwen3_5ForConditionalGeneration"],
  "model_type": "qwen3_5",
  "image_token_id": 248056,
  "text_config": {
    "model_type": "qwen3_5_text",
    "vocab_size": 248320,
    "hidden_size": 5120,
    "intermediate_size": 17408,
    "num_hidden_layers": 64,
    "num_attention_heads": 24,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "hidden_act": "silu",
    "layer_types": [` + strings.Join(lt, ",") + `],
    "full_attention_interval": 4,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 48,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4,
    "rms_norm_eps": 1e-06,
    "max_position_embeddings": 262144,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                        "mrope_interleaved": true, "mrope_section": [11, 11, 10]},
    "tie_word_embeddings": false,
    "eos_token_id": 248044,
    "dtype": "bfloat16"
  },
  "vision_config": {"depth": 27, "hidden_size": 1152, "num_heads": 16},
  "tie_word_embeddings": false
}`
}

func TestParseQwen38Shape(t *testing.T) {
	m, err := ParseModel([]byte(qwen38Config()))
	if err != nil {
		t.Fatal(err)
	}
	want := &Model{
		ModelType: "qwen3_5", VocabSize: 248320, HiddenSize: 5120, IntermediateSize: 17408,
		NumHiddenLayers: 64, NumAttentionHeads: 24, NumKeyValueHeads: 4, HeadDim: 256,
		LinearNumKeyHeads: 16, LinearNumValueHeads: 48, LinearKeyHeadDim: 128, LinearValueHeadDim: 128,
		LinearConvKernelDim: 4, RopeTheta: 1e7, PartialRotaryFactor: 0.25, RMSNormEps: 1e-6,
		MaxPositionEmbeddings: 262144, EOSTokenIDs: []int{248044},
	}
	want.LayerTypes = m.LayerTypes // checked separately below
	if !reflect.DeepEqual(m, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", m, want)
	}
	if m.RotaryDim() != 64 {
		t.Errorf("RotaryDim = %d, want 64", m.RotaryDim())
	}
	for i := range 64 {
		if m.IsFullAttention(i) != (i%4 == 3) {
			t.Fatalf("IsFullAttention(%d) = %v", i, m.IsFullAttention(i))
		}
	}
	if m.NumFullAttentionLayers() != 16 || m.IsFullAttention(64) || m.IsFullAttention(-1) {
		t.Errorf("full attention layers = %d; out of range reported full", m.NumFullAttentionLayers())
	}
}

func TestParseFlatLegacyLayout(t *testing.T) {
	// Everything at the top level, rope_theta and partial_rotary_factor
	// outside rope_parameters, eos as a list, layer_types derived.
	cfg := `{"model_type":"qwen3_5_text","vocab_size":1000,"hidden_size":64,"intermediate_size":128,
	"num_hidden_layers":6,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,
	"linear_num_key_heads":2,"linear_num_value_heads":4,"linear_key_head_dim":8,"linear_value_head_dim":8,
	"linear_conv_kernel_dim":4,"rope_theta":1000000.0,"partial_rotary_factor":0.5,"rms_norm_eps":1e-5,
	"full_attention_interval":3,"eos_token_id":[1,2],"tie_word_embeddings":true}`
	m, err := ParseModel([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []string{LinearAttention, LinearAttention, FullAttention, LinearAttention, LinearAttention, FullAttention}
	if m.RopeTheta != 1e6 || m.PartialRotaryFactor != 0.5 || m.RotaryDim() != 8 || !m.TieWordEmbeddings ||
		!reflect.DeepEqual(m.EOSTokenIDs, []int{1, 2}) || !reflect.DeepEqual(m.LayerTypes, wantTypes) ||
		m.MaxPositionEmbeddings != defaultMaxPositionEmbeddings {
		t.Errorf("parsed %+v", m)
	}
	// A nested value wins over a top-level one.
	nested := `{"rope_theta": 5, "text_config": ` + strings.Replace(cfg, `"rope_theta":1000000.0`, `"rope_parameters":{"rope_theta":7}`, 1) + `}`
	m, err = ParseModel([]byte(nested))
	if err != nil || m.RopeTheta != 7 {
		t.Errorf("nested rope_theta: %v, %v", m, err)
	}
}

func TestModelRoundTrip(t *testing.T) {
	for _, cfg := range []string{qwen38Config(), strings.Replace(qwen38Config(), `"eos_token_id": 248044`, `"eos_token_id": [248044, 248046]`, 1)} {
		m, err := ParseModel([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.MarshalHF()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseModel(out)
		if err != nil {
			t.Fatalf("re-parsing MarshalHF output: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(m, back) {
			t.Errorf("round trip changed the config:\n%+v\n%+v", m, back)
		}
		var hf struct {
			Architectures []string `json:"architectures"`
			ModelType     string   `json:"model_type"`
			Text          struct {
				ModelType string `json:"model_type"`
				Rope      struct {
					Theta   float64 `json:"rope_theta"`
					Partial float64 `json:"partial_rotary_factor"`
				} `json:"rope_parameters"`
			} `json:"text_config"`
		}
		if err := json.Unmarshal(out, &hf); err != nil {
			t.Fatal(err)
		}
		if hf.ModelType != "qwen3_5" || hf.Architectures[0] != "Qwen3_5ForConditionalGeneration" ||
			hf.Text.ModelType != "qwen3_5_text" || hf.Text.Rope.Theta != 1e7 || hf.Text.Rope.Partial != 0.25 {
			t.Errorf("HF layout wrong: %+v", hf)
		}
	}
}

func TestModelValidation(t *testing.T) {
	cases := []struct {
		name, old, new string
		field, msg     string
	}{
		{"kv heads do not divide", `"num_key_value_heads": 4`, `"num_key_value_heads": 5`, "num_key_value_heads", "must divide num_attention_heads"},
		{"layer_types too short", `"num_hidden_layers": 64`, `"num_hidden_layers": 65`, "layer_types", "has 64 entries, num_hidden_layers is 65"},
		{"unknown layer type", `"linear_attention"`, `"sliding_attention"`, "layer_types[0]", `"sliding_attention"`},
		{"odd rotary dims", `"partial_rotary_factor": 0.25`, `"partial_rotary_factor": 0.2`, "partial_rotary_factor", "must be an even integer"},
		{"rotary factor above 1", `"partial_rotary_factor": 0.25`, `"partial_rotary_factor": 1.5`, "partial_rotary_factor", "(0, 1]"},
		{"missing hidden_size", `"hidden_size": 5120,`, ``, "hidden_size", "missing"},
		{"zero head_dim", `"head_dim": 256`, `"head_dim": 0`, "head_dim", "must be positive"},
		{"negative vocab", `"vocab_size": 248320`, `"vocab_size": -1`, "vocab_size", "must be positive"},
		{"string where int", `"hidden_size": 5120`, `"hidden_size": "5120"`, "hidden_size", "must be an integer"},
		{"fractional int", `"intermediate_size": 17408`, `"intermediate_size": 17408.5`, "intermediate_size", "must be an integer"},
		{"linear heads", `"linear_num_key_heads": 16`, `"linear_num_key_heads": 10`, "linear_num_key_heads", "must divide linear_num_value_heads"},
		{"missing rope_theta", `"rope_theta": 10000000,`, ``, "rope_parameters.rope_theta", "missing"},
		{"negative rope_theta", `"rope_theta": 10000000`, `"rope_theta": -1`, "rope_parameters.rope_theta", "positive"},
		{"rms eps zero", `"rms_norm_eps": 1e-06`, `"rms_norm_eps": 0`, "rms_norm_eps", "(0, 1)"},
		{"eos outside vocab", `"eos_token_id": 248044`, `"eos_token_id": 248320`, "eos_token_id[0]", "outside the vocabulary"},
		{"eos wrong type", `"eos_token_id": 248044`, `"eos_token_id": "</s>"`, "eos_token_id", "integer or a list"},
		{"wrong model", `"model_type": "qwen3_5",`, `"model_type": "llama",`, "model_type", `"llama"`},
		{"not an object", qwen38Config(), `[1]`, "", "not a valid JSON object"},
		{"trailing data", qwen38Config(), qwen38Config() + `{}`, "", "trailing data"},
		{"duplicate key", `"hidden_size": 5120`, `"hidden_size": 5120, "hidden_size": 4096`, "hidden_size", "key given twice"},
		{"nested duplicate key", `"rope_theta": 10000000`, `"rope_theta": 10000000, "rope_theta": 1`, "rope_parameters.rope_theta", "key given twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := strings.Replace(qwen38Config(), c.old, c.new, 1)
			if cfg == qwen38Config() {
				t.Fatalf("replacement %q did not apply", c.old)
			}
			_, err := ParseModel([]byte(cfg))
			if err == nil {
				t.Fatal("accepted an invalid config")
			}
			if !strings.Contains(err.Error(), c.field+": ") && c.field != "" || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want field %q and %q", err, c.field, c.msg)
			}
		})
	}
}

func TestAllProblemsOnOneLine(t *testing.T) {
	cfg := strings.Replace(strings.Replace(qwen38Config(), `"hidden_size": 5120,`, ``, 1), `"head_dim": 256,`, ``, 1)
	_, err := ParseModel([]byte(cfg))
	if err == nil || err.Error() != "hidden_size: missing; head_dim: missing" {
		t.Fatalf("err = %q, want both missing fields on one line", err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "hidden_size" {
		t.Errorf("errors.As found %+v", fe)
	}
	if !IsDrafterConfig([]byte(dflash2Config)) || IsDrafterConfig([]byte(qwen38Config())) {
		t.Error("IsDrafterConfig misclassified the reference configs")
	}
}

func TestLoadModelFromDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(qwen38Config()), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(dir)
	if err != nil || m.HiddenSize != 5120 {
		t.Fatalf("LoadModel(dir) = %+v, %v", m, err)
	}
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"model_type":"qwen3_5"}`), 0o644)
	_, err = LoadModel(filepath.Join(dir, "bad.json"))
	if err == nil || !strings.Contains(err.Error(), "bad.json") || !strings.Contains(err.Error(), "hidden_size: missing") {
		t.Errorf("LoadModel(bad) err = %v", err)
	}
	big := make([]byte, MaxConfigSize+10)
	for i := range big {
		big[i] = ' '
	}
	os.WriteFile(filepath.Join(dir, "big.json"), big, 0o644)
	if _, err := LoadModel(filepath.Join(dir, "big.json")); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized config: err = %v", err)
	}
}

// dflash2Config is shaped like the real DFlash2 drafter (the drafter/config.json
// read by Anemll/anemll-forge scripts/dflash2_drafter_ref.py).
const dflash2Config = `{
  "architectures": ["DFlashDraftModel"],
  "model_type": "qwen3",
  "hidden_size": 5120,
  "intermediate_size": 17408,
  "num_hidden_layers": 5,
  "num_attention_heads": 32,
  "num_key_value_heads": 8,
  "head_dim": 128,
  "vocab_size": 248320,
  "sliding_window": 2048,
  "num_target_layers": 64,
  "rms_norm_eps": 1e-06,
  "rope_parameters": {"rope_type": "default", "rope_theta": 10000000},
  "dflash_config": {"block_size": 8, "mask_token_id": 248070, "selector_top_k": 16, "selector_rank": 256,
                    "conv_group_size": 16, "conv_kernel_size": 2, "target_layer_ids": [5, 19, 33, 47, 61]}
}`

func TestParseDrafterShape(t *testing.T) {
	d, err := ParseDrafter([]byte(dflash2Config))
	if err != nil {
		t.Fatal(err)
	}
	want := &Drafter{
		HiddenSize: 5120, IntermediateSize: 17408, NumHiddenLayers: 5, NumAttentionHeads: 32, NumKeyValueHeads: 8,
		HeadDim: 128, VocabSize: 248320, SlidingWindow: 2048, NumTargetLayers: 64, RMSNormEps: 1e-6, RopeTheta: 1e7,
		DFlash: DFlashConfig{BlockSize: 8, MaskTokenID: 248070, SelectorTopK: 16, SelectorRank: 256,
			ConvGroupSize: 16, ConvKernelSize: 2, TargetLayerIDs: []int{5, 19, 33, 47, 61}},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", d, want)
	}
	if d.FeatureSize(5120) != 25600 {
		t.Errorf("FeatureSize = %d, want 25600", d.FeatureSize(5120))
	}
	out, err := d.MarshalHF()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseDrafter(out)
	if err != nil || !reflect.DeepEqual(back, d) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	// A target config is not a drafter, and says why.
	if _, err := ParseDrafter([]byte(qwen38Config())); err == nil || !strings.Contains(err.Error(), "dflash_config: missing") {
		t.Errorf("ParseDrafter(target config) err = %v", err)
	}
}

func TestDrafterValidation(t *testing.T) {
	cases := []struct {
		name, old, new string
		field, msg     string
	}{
		{"kv heads", `"num_key_value_heads": 8`, `"num_key_value_heads": 5`, "num_key_value_heads", "must divide"},
		{"target layer out of range", `[5, 19, 33, 47, 61]`, `[5, 19, 33, 47, 64]`, "dflash_config.target_layer_ids[4]", "outside the target's layers"},
		{"target layers not increasing", `[5, 19, 33, 47, 61]`, `[5, 33, 19, 47, 61]`, "dflash_config.target_layer_ids[2]", "strictly increasing"},
		{"no target layers", `[5, 19, 33, 47, 61]`, `[]`, "dflash_config.target_layer_ids", "at least one"},
		{"mask outside vocab", `"mask_token_id": 248070`, `"mask_token_id": 300000`, "dflash_config.mask_token_id", "outside the vocabulary"},
		{"conv group", `"conv_group_size": 16`, `"conv_group_size": 7`, "dflash_config.conv_group_size", "must divide hidden_size"},
		{"block size", `"block_size": 8`, `"block_size": 1`, "dflash_config.block_size", "at least 2"},
		{"missing dflash field", `"selector_rank": 256,`, ``, "dflash_config.selector_rank", "missing"},
		{"odd head dim", `"head_dim": 128`, `"head_dim": 127`, "head_dim", "must be even"},
		{"missing window", `"sliding_window": 2048,`, ``, "sliding_window", "missing"},
		{"bad type", `"block_size": 8`, `"block_size": [8]`, "dflash_config.block_size", "must be an integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := strings.Replace(dflash2Config, c.old, c.new, 1)
			if cfg == dflash2Config {
				t.Fatalf("replacement %q did not apply", c.old)
			}
			_, err := ParseDrafter([]byte(cfg))
			if err == nil || !strings.Contains(err.Error(), c.field+": ") || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want field %q and %q", err, c.field, c.msg)
			}
		})
	}
}

// A config.json that names a key twice is refused, naming the key:
// encoding/json would keep the last value, so two readers could disagree.
func TestLoadRefusesDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.Replace(qwen38Config(), `"num_hidden_layers": 64`, `"num_hidden_layers": 64, "num_hidden_layers": 4`, 1)
	if cfg == qwen38Config() {
		t.Fatal("replacement did not apply")
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadModel(dir)
	if err == nil || !strings.Contains(err.Error(), "num_hidden_layers: key given twice") {
		t.Fatalf("err = %v, want the duplicate num_hidden_layers named", err)
	}
}
