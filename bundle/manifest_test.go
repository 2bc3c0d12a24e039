package bundle_test

import (
	"strings"
	"testing"

	"github.com/forgedaemon/forged/bundle"
)

func TestKVLenRule(t *testing.T) {
	for _, tc := range []struct{ ctx, pend, want int }{
		{8192, 8, 8192}, {49152, 8, 49152}, {65536, 8, 65472}, {131072, 8, 131072},
	} {
		if got := bundle.KVLenFor(tc.ctx, tc.pend, 8, 64); got != tc.want {
			t.Errorf("KVLenFor(%d) = %d, want %d", tc.ctx, got, tc.want)
		}
	}
	// Without a prefill width the widest block is the 8 pending rows.
	if got := bundle.KVLenFor(65536, 8, 8); got != 65528 {
		t.Errorf("KVLenFor without prefill = %d, want 65528", got)
	}
}

func TestParseManifestAcceptsGenerated(t *testing.T) {
	m, err := bundle.ParseManifest(validManifest)
	if err != nil {
		t.Fatal(err)
	}
	if m.Layers() != 8 || m.ValidateLayers(8) != nil {
		t.Fatalf("generated manifest covers %d layers", m.Layers())
	}
	if err := m.ValidateLayers(64); err == nil || !strings.Contains(err.Error(), "model has 64 layers") {
		t.Fatalf("coverage against 64 layers: %v", err)
	}
}

func TestManifestRules(t *testing.T) {
	chunks := func(m map[string]any) []any { return m["chunks"].([]any) }
	chunk := func(m map[string]any, i int) map[string]any { return chunks(m)[i].(map[string]any) }
	f16, i8 := "float16", "int8"
	cases := []struct {
		name, want string
		fn         func(m map[string]any)
	}{
		{"version", "version: is \"coreai2\"", func(m map[string]any) { m["version"] = "coreai2" }},
		{"T", "T: is 64", func(m map[string]any) { m["T"] = 64 }},
		{"pend", "pend", func(m map[string]any) { m["pend"] = 0 }},
		{"ctxs order", "ctxs: must be strictly ascending", func(m map[string]any) { m["ctxs"] = []int{16384, 8192} }},
		{"ctxs empty", "ctxs: is empty", func(m map[string]any) { m["ctxs"] = []int{}; m["kv_len"] = map[string]int{} }},
		{"kv_len value", "kv_len.8192: is 8000", func(m map[string]any) { m["kv_len"].(map[string]any)["8192"] = 8000 }},
		{"kv_len missing", "kv_len: has 1 entries", func(m map[string]any) { delete(m["kv_len"].(map[string]any), "8192") }},
		{"kv_len 64k", "kv_len.65536: is 65536, want", func(m map[string]any) {
			m["ctxs"], m["pctxs"] = []int{65536}, []int{65536}
			m["kv_len"], m["pkv_len"] = map[string]int{"65536": 65536}, map[string]int{"65536": 65472}
			for _, c := range chunks(m) {
				c.(map[string]any)["entries"] = []string{"v8_64k", "p64_64k"}
			}
		}},
		{"gap", "chunks[1].layers: starts at layer 5", func(m map[string]any) { chunk(m, 1)["layers"] = []int{5, 7} }},
		{"order", "chunks[0].layers: starts at layer 4", func(m map[string]any) {
			m["chunks"] = []any{chunks(m)[1], chunks(m)[0]}
		}},
		{"empty chunk", "is empty", func(m map[string]any) { chunk(m, 1)["layers"] = []int{4, 3} }},
		{"v8 entry", "has no v8_16k entry", func(m map[string]any) { chunk(m, 1)["entries"] = []string{"v8_8k"} }},
		{"duplicate chunk", "listed twice", func(m map[string]any) { chunk(m, 1)["file"] = chunk(m, 0)["file"] }},
		{"chunk tap", "tap 3 is not an inner layer", func(m map[string]any) { chunk(m, 0)["taps"] = []int{3} }},
		{"compiled name", "compiled", func(m map[string]any) { chunk(m, 0)["compiled"] = "x.bin" }},
		{"head", "head: must be an object", func(m map[string]any) { delete(m, "head") }},
		{"kv format", "unknown KV cache format", func(m map[string]any) { m["kv_cache"] = map[string]any{"format": "int4"} }},
		{"v8 values", "needs keys float16 and values int8", func(m map[string]any) {
			m["kv_cache"] = map[string]any{"format": "v8", "keys": f16, "values": f16, "scales": f16, "scale_granularity": "token_head"}
		}},
		{"fp16 scales", "scales: format fp16: scales must be null", func(m map[string]any) {
			m["kv_cache"] = map[string]any{"format": "fp16", "keys": f16, "values": f16, "scales": f16}
		}},
		{"v8 granularity", "scale_granularity", func(m map[string]any) {
			m["kv_cache"] = map[string]any{"format": "v8", "keys": f16, "values": i8, "scales": f16}
		}},
		{"selectable default", "default: \"kv8\" is not one of the formats", func(m map[string]any) {
			m["kv_cache"] = map[string]any{"format": "selectable", "default": "kv8", "formats": map[string]any{
				"fp16": map[string]any{"format": "fp16", "keys": f16, "values": f16}}}
		}},
		{"selectable name", "formats.v8: format is \"fp16\"", func(m map[string]any) {
			m["kv_cache"] = map[string]any{"format": "selectable", "default": "v8", "formats": map[string]any{
				"v8": map[string]any{"format": "fp16", "keys": f16, "values": f16}}}
		}},
		{"duplicate key", "duplicate key", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := []byte(strings.Replace(string(validManifest), `"T": 8,`, `"T": 8, "T": 8,`, 1))
			if tc.fn != nil {
				doc = edit(t, validManifest, tc.fn)
			}
			_, err := bundle.ParseManifest(doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "manifest.json") {
				t.Fatalf("err = %v, want it to name manifest.json and contain %q", err, tc.want)
			}
		})
	}
	// A selectable cache with both published layouts is valid.
	ok := edit(t, validManifest, func(m map[string]any) {
		m["kv_cache"] = map[string]any{"format": "selectable", "default": "v8", "formats": map[string]any{
			"fp16": map[string]any{"format": "fp16", "keys": f16, "values": f16, "scales": nil, "scale_granularity": nil},
			"v8":   map[string]any{"format": "v8", "keys": f16, "values": i8, "scales": f16, "scale_granularity": "token_head", "key_layout": "dim_token"}}}
	})
	if _, err := bundle.ParseManifest(ok); err != nil {
		t.Fatalf("selectable fp16/v8 rejected: %v", err)
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add(validManifest)
	f.Add([]byte(`{"version":"coreai1","T":8,"chunks":[{"layers":[0,-1]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := bundle.ParseManifest(data)
		if err != nil {
			return
		}
		if m.T != 8 || m.Layers() <= 0 || m.Head == nil {
			t.Fatalf("accepted an invalid manifest: %+v", m)
		}
	})
}
