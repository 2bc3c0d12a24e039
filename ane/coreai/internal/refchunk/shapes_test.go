package refchunk

import (
	"fmt"
	"testing"
)

// The published Qwen3.8-27B chunk I/O (Anemll/anemll-forge coreai/qwen38_coreai_build.py,
// scripts/qwen38_coreai_model.py) must come out of
// the generalised shapes for the 27B config.
func TestPublishedShapes(t *testing.T) {
	cfg := Published27B()
	want := map[string]string{
		"x": "[1 5120 1 8]", "cos": "[8 64]", "mask": "[1 8192]", "conv_sel": "[3 11]", "commit": "[1 8 1]",
		"commit_last": "[1 8 1]", "conv0": "[11 10240]", "rec0": "[48 128 128]", "pend0": "[48 25 128]",
		"k3": "[4 8192 256]", "v3": "[4 8192 256]", "vs3": "[4 8192]", "y": "[1 5120 1 8]", "tap1": "[1 5120 1 8]",
		"conv2_out": "[11 10240]", "rec1_out": "[48 128 128]", "pend0_out": "[48 25 128]", "k3_new": "[4 8 256]",
		"v3_new": "[4 8 256]",
	}
	c := NewLayout(cfg, 0, 3, []int{1}, 8, KV{V8: true})
	if fmt.Sprint(c.GDNJ(), c.AttJ()) != "[0 1 2] [3]" {
		t.Fatalf("gdn_j/att_j %v %v", c.GDNJ(), c.AttJ())
	}
	got := map[string]Spec{}
	for _, s := range c.Tensors(Entry{Name: "v8_8k", Rows: 8, KVLen: 8192}) {
		got[s.Name] = s
	}
	for name, shape := range want {
		if s, ok := got[name]; !ok || fmt.Sprint(s.Shape) != shape {
			t.Errorf("%s: %v, want %s", name, s.Shape, shape)
		}
	}
	if got["v3"].DType != "i8" || got["k3"].DType != "f16" {
		t.Errorf("v8 dtypes: k %s v %s", got["k3"].DType, got["v3"].DType)
	}
	p := map[string]Spec{}
	for _, s := range c.Tensors(Entry{Name: "p64_8k", Rows: 64, Prefill: true, KVLen: 8192}) {
		p[s.Name] = s
	}
	for name, shape := range map[string]string{"x": "[1 5120 1 64]", "cos": "[64 64]", "conv_sel_out": "[3 67]",
		"valid": "[1 64 1]", "conv0_out": "[11 10240]", "k3_new": "[4 64 256]"} {
		if fmt.Sprint(p[name].Shape) != shape {
			t.Errorf("prefill %s: %v, want %s", name, p[name].Shape, shape)
		}
	}
	c.KV = KV{KeysT: true}
	for _, s := range c.Tensors(Entry{Name: "v8_8k", Rows: 8, KVLen: 65472}) {
		if s.Name == "k3" && fmt.Sprint(s.Shape) != "[4 256 65472]" {
			t.Errorf("transposed keys: %v", s.Shape)
		}
	}
	// kv8 (coreai/qwen38_coreai_build.py): int8 keys and values, vs{j} then ks{j} scales (4, L).
	c.KV = KV{K8: true, KeysT: true}
	kv8 := ""
	for _, s := range c.Tensors(Entry{Name: "v8_8k", Rows: 8, KVLen: 8192}) {
		if s.Name == "k3" || s.Name == "v3" || s.Name == "vs3" || s.Name == "ks3" {
			kv8 += fmt.Sprintf("%s %s %v; ", s.Name, s.DType, s.Shape)
		}
	}
	if want := "k3 i8 [4 256 8192]; v3 i8 [4 8192 256]; vs3 f16 [4 8192]; ks3 f16 [4 8192]; "; kv8 != want {
		t.Errorf("kv8 history: %s, want %s", kv8, want)
	}
	h := NewHeadLayout(cfg, 8)
	if err := c.Run(Entry{Name: "v8_8k", Rows: 8, KVLen: 8192}, nil); err == nil {
		t.Error("a layout without weights ran")
	}
	if fmt.Sprint(h.Tensors()[1].Shape) != "[8 248320]" {
		t.Errorf("head logits %v", h.Tensors()[1].Shape)
	}
}
