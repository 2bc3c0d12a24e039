package refchunk

import (
	"fmt"
	"testing"

	"github.com/forgedaemon/forged/ane/config"
)

// The published Qwen3.8-27B chunk I/O (anemll-forge §3.2) must come out of
// the generalised shapes for the 27B config.
func TestPublishedShapes(t *testing.T) {
	types := make([]string, 64)
	for i := range types {
		types[i] = "linear_attention"
		if i%4 == 3 {
			types[i] = "full_attention"
		}
	}
	cfg := &config.Model{ModelType: "qwen3_5", VocabSize: 248320, HiddenSize: 5120, IntermediateSize: 17408,
		NumHiddenLayers: 64, NumAttentionHeads: 24, NumKeyValueHeads: 4, HeadDim: 256, LayerTypes: types,
		LinearNumKeyHeads: 16, LinearNumValueHeads: 48, LinearKeyHeadDim: 128, LinearValueHeadDim: 128,
		LinearConvKernelDim: 4, RopeTheta: 1e7, PartialRotaryFactor: 0.25, RMSNormEps: 1e-6}
	w := &Weights{Cfg: cfg}
	want := map[string]string{
		"x": "[1 5120 1 8]", "cos": "[8 64]", "mask": "[1 8192]", "conv_sel": "[3 11]", "commit": "[1 8 1]",
		"commit_last": "[1 8 1]", "conv0": "[11 10240]", "rec0": "[48 128 128]", "pend0": "[48 25 128]",
		"k3": "[4 8192 256]", "v3": "[4 8192 256]", "vs3": "[4 8192]", "y": "[1 5120 1 8]", "tap1": "[1 5120 1 8]",
		"conv2_out": "[11 10240]", "rec1_out": "[48 128 128]", "pend0_out": "[48 25 128]", "k3_new": "[4 8 256]",
		"v3_new": "[4 8 256]",
	}
	c := &Chunk{w: w, Lo: 0, Hi: 3, Taps: []int{1}, Pend: 8, KV: KV{V8: true}}
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
	h := &Head{w: w, Rows: 8}
	if fmt.Sprint(h.Tensors()[1].Shape) != "[8 248320]" {
		t.Errorf("head logits %v", h.Tensors()[1].Shape)
	}
}
