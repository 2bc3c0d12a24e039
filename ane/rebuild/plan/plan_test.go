package plan

import (
	"bytes"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/internal/synth"
)

func mustParse(t *testing.T, s string) *Plan {
	t.Helper()
	p, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolvePublishedStyle(t *testing.T) {
	cfg, err := synth.PresetConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	d := PublishedDefaults(cfg)
	p := mustParse(t, `{"1.gate": "LUT4 per-tensor + pcs", "1.up": "LUT4 per-tensor + pcs", "1.down": "bf16",
		"0.mixer": "vector 2x16 + pcs", "2.basis": "plain", "3.mixer": "bf16",
		"lm_head": "vector 2x16 + pcs", "model\\.language_model\\.layers\\.[23]\\.mlp\\.down_proj": "vector 4x16 + pcs"}`)
	r, err := Resolve(cfg, p, d)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"model.language_model.layers.0.linear_attn.in_proj_qkv": "vector 2x16 + pcs",
		"model.language_model.layers.0.linear_attn.out_proj":    "vector 2x16 + pcs",
		"model.language_model.layers.0.mlp.gate_proj":           "vector 2x16 + pcs",
		"model.language_model.layers.1.mlp.gate_proj":           "LUT4 per-tensor + pcs",
		"model.language_model.layers.1.mlp.down_proj":           "bf16",
		"model.language_model.layers.1.linear_attn.in_proj_z":   "LUT4 per-tensor + pcs",
		"model.language_model.layers.2.mlp.down_proj":           "vector 4x16 + pcs",
		"model.language_model.layers.3.mlp.down_proj":           "vector 4x16 + pcs",
		"model.language_model.layers.3.self_attn.q_proj":        "bf16",
		"model.language_model.layers.3.self_attn.k_proj":        "bf16",
		"lm_head": "vector 2x16 + pcs",
	}
	seen := 0
	for _, m := range r.Matrices {
		if f, ok := want[m.Name]; ok {
			seen++
			if m.Format != f {
				t.Errorf("%s resolved to %q (%s), want %q", m.Name, m.Format, m.From, f)
			}
		}
		if strings.Contains(m.Name, "in_proj_a") || strings.Contains(m.Name, "in_proj_b") {
			t.Errorf("%s is not quantizable but was planned", m.Name)
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of %d expected matrices", seen, len(want))
	}
	// 4 layers: 3 DeltaNet × 6 + 1 attention × 7 matrices + head.
	if len(r.Matrices) != 3*6+7+1 {
		t.Errorf("%d matrices planned", len(r.Matrices))
	}
	if r.Layers[2].Online || !r.Layers[1].Online {
		t.Errorf("basis keys not applied: %+v", r.Layers)
	}
	if r.Layers[3].KVFormat != "bf16" || r.Layers[0].KVFormat != "INT8 per-channel" || r.Layers[0].MixerFormat != "vector 2x16 + pcs" {
		t.Errorf("layer settings %+v", r.Layers)
	}
	if r.Block != 64 {
		t.Errorf("block %d for hidden 64, intermediate 192", r.Block)
	}
	var sum int64
	for _, m := range r.Matrices {
		sum += m.Size.ExportBytes
	}
	if sum != r.Total.ExportBytes {
		t.Errorf("total %d, sum %d", r.Total.ExportBytes, sum)
	}
	var out bytes.Buffer
	r.Print(&out)
	if !strings.Contains(out.String(), `key "1.down"`) || !strings.Contains(out.String(), "bits/weight realised") {
		t.Errorf("printed plan lacks decisions or totals:\n%s", out.String())
	}
}

func TestBadPlans(t *testing.T) {
	cfg, _ := synth.PresetConfig("tiny")
	d := PublishedDefaults(cfg)
	odd := *cfg
	odd.IntermediateSize = 190
	cases := []struct {
		name, plan string
		cfg        any
		want       []string
	}{
		{"unknown format", `{"1.gate": "vector 3x16"}`, nil, []string{`"1.gate"`, `"vector 3x16"`}},
		{"pattern matching nothing", `{"model\\.layers\\.0\\.mlp\\.gate_proj": "bf16"}`, nil, []string{"matches no quantizable matrix"}},
		{"unknown flat part", `{"1.gates": "bf16"}`, nil, []string{`"1.gates"`, "matches no"}},
		{"missing layer", `{"7.gate": "bf16"}`, nil, []string{`"7.gate"`, "layer 7", "0..3"}},
		{"bad basis", `{"1.basis": "rotated"}`, nil, []string{`"1.basis"`, "rotated"}},
		{"non-string", `{"1.gate": 4}`, nil, []string{`"1.gate"`, "not a string"}},
		{"duplicate", `{"1.gate": "bf16", "1.gate": "bf16"}`, nil, []string{"twice"}},
		{"bad regexp", `{"layers.(": "bf16"}`, nil, []string{"valid pattern"}},
		{"conflicting patterns", `{".*gate_proj": "bf16", ".*layers\\.0\\.mlp.*": "LUT4 per-tensor + pcs"}`, nil, []string{"layers.0.mlp.gate_proj", "and pattern"}},
		{"split mixer", `{".*layers\\.0\\.linear_attn\\.in_proj_z": "bf16"}`, nil, []string{"layer 0 mixer", "one format"}},
		{"shape the format cannot take", `{"0.gate": "vector 4x16 + pcs"}`, &odd, []string{"layers.0.mlp.gate_proj", "190", "not divisible by 4"}},
		{"trailing data", `{"1.gate": "bf16"} {}`, nil, []string{"after the JSON object"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse([]byte(c.plan))
			if err == nil {
				use := cfg
				if c.cfg != nil {
					use = c.cfg.(*hfconfig.Model)
				}
				_, err = Resolve(use, p, d)
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	bad := d
	bad.MLP = "LUT3"
	if _, err := Resolve(cfg, nil, bad); err == nil || !strings.Contains(err.Error(), "LUT3") {
		t.Errorf("unknown default format: %v", err)
	}
}
