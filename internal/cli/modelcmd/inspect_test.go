package modelcmd

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
)

func TestInspectSafetensors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	err := tensor.WriteSafetensors(path, map[string]string{"format": "pt"}, []tensor.Tensor{
		{Name: "w", DType: tensor.BF16, Shape: []int{2, 3}, Data: make([]byte, 12)},
		{Name: "b", DType: tensor.F32, Shape: []int{3}, Data: make([]byte, 12)},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runCtl(t, "", "inspect", path, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Format   string            `json:"format"`
		Header   int64             `json:"header_size"`
		Metadata map[string]string `json:"metadata"`
		Tensors  []tensorJSON      `json:"tensors"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	start := 8 + got.Header
	want := []tensorJSON{
		{"b", "F32", []int{3}, [2]int64{0, 12}, [2]int64{start, start + 12}},
		{"w", "BF16", []int{2, 3}, [2]int64{12, 24}, [2]int64{start + 12, start + 24}},
	}
	if got.Format != "safetensors" || got.Metadata["format"] != "pt" || len(got.Tensors) != 2 {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		g := got.Tensors[i]
		if g.Name != want[i].Name || g.DType != want[i].DType || !slices.Equal(g.Shape, want[i].Shape) ||
			g.DataOffsets != want[i].DataOffsets || g.FileOffsets != want[i].FileOffsets {
			t.Errorf("tensor %d = %+v, want %+v", i, g, want[i])
		}
	}
	st, _ := os.Stat(path)
	if got.Tensors[1].FileOffsets[1] != st.Size() {
		t.Errorf("last tensor ends at %d, file is %d bytes", got.Tensors[1].FileOffsets[1], st.Size())
	}
	text, _, err := runCtl(t, "", "inspect", path)
	if err != nil || !strings.Contains(text, "format = pt") || !strings.Contains(text, "BF16") ||
		!strings.Contains(text, "[2 3]") || strings.HasPrefix(text, "{") {
		t.Errorf("text output:\n%s (%v)", text, err)
	}
}

func TestInspectNPY(t *testing.T) {
	path := filepath.Join(t.TempDir(), "embed.npy")
	if err := tensor.WriteNPY(path, "<f2", []int{4, 2}, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCtl(t, "", "inspect", "--json", path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal([]byte(out), &got)
	if got["format"] != "npy" || got["descr"] != "<f2" || got["order"] != "C" || got["version"] != "1.0" ||
		got["data_size"] != float64(16) || len(got["shape"].([]any)) != 2 {
		t.Errorf("got %v", got)
	}
}

func TestInspectConfigs(t *testing.T) {
	dir := t.TempDir()
	m := &hfconfig.Model{ModelType: "qwen3_5", VocabSize: 1000, HiddenSize: 64, IntermediateSize: 128, NumHiddenLayers: 4,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, LinearNumKeyHeads: 2, LinearNumValueHeads: 4,
		LinearKeyHeadDim: 8, LinearValueHeadDim: 8, LinearConvKernelDim: 4, RopeTheta: 1e7, PartialRotaryFactor: 0.25,
		RMSNormEps: 1e-6, MaxPositionEmbeddings: 4096, EOSTokenIDs: []int{7},
		LayerTypes: []string{hfconfig.LinearAttention, hfconfig.LinearAttention, hfconfig.LinearAttention, hfconfig.FullAttention}}
	data, err := m.MarshalHF()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
	out, _, err := runCtl(t, "", "inspect", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Kind   string         `json:"kind"`
		Config hfconfig.Model `json:"config"`
		Rot    int            `json:"rotary_dim"`
		Full   []int          `json:"full_attention_layers"`
	}
	json.Unmarshal([]byte(out), &got)
	if got.Kind != "model" || got.Config.HiddenSize != 64 || got.Rot != 4 || !slices.Equal(got.Full, []int{3}) {
		t.Errorf("got %+v\n%s", got, out)
	}

	d := &hfconfig.Drafter{HiddenSize: 64, IntermediateSize: 128, NumHiddenLayers: 2, NumAttentionHeads: 4,
		NumKeyValueHeads: 2, HeadDim: 16, VocabSize: 1000, SlidingWindow: 32, NumTargetLayers: 4, RMSNormEps: 1e-6,
		RopeTheta: 1e7, DFlash: hfconfig.DFlashConfig{BlockSize: 8, MaskTokenID: 999, SelectorTopK: 4, SelectorRank: 8,
			ConvGroupSize: 16, ConvKernelSize: 2, TargetLayerIDs: []int{1, 3}}}
	data, _ = d.MarshalHF()
	dpath := filepath.Join(dir, "drafter.json")
	os.WriteFile(dpath, data, 0o644)
	text, _, err := runCtl(t, "", "inspect", dpath)
	if err != nil || !strings.Contains(text, "DFlash drafter") || !strings.Contains(text, "target layers [1 3] of 4") {
		t.Errorf("drafter text:\n%s (%v)", text, err)
	}
}

func TestInspectMalformedNamesRule(t *testing.T) {
	dir := t.TempDir()
	overlap := `{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}`
	st := binary.LittleEndian.AppendUint64(nil, uint64(len(overlap)))
	st = append(append(st, overlap...), make([]byte, 6)...)
	cases := []struct{ name, content, want string }{
		{"bad.safetensors", string(st), "offsets contiguous"},
		{"bad.npy", "\x93NUMPY\x01\x00\x3c\x00{'descr': '<f2', 'fortran_order': True, 'shape': (2,), }   \n", "npy fortran_order"},
		{"config.json", `{"model_type":"qwen3_5","num_attention_heads":6,"num_key_value_heads":4}`, "hidden_size: missing"},
		{"short.safetensors", "abc", "header length"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		os.WriteFile(p, []byte(c.content), 0o644)
		out, _, err := runCtl(t, "", "inspect", p, "--json")
		if err == nil {
			t.Errorf("%s: inspect succeeded:\n%s", c.name, out)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, p) {
			t.Errorf("%s: error %q should be one line starting with the path and naming %q", c.name, msg, c.want)
		}
		if out != "" {
			t.Errorf("%s: printed %q on failure", c.name, out)
		}
	}
}
