package plan

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/rebuild/export"
)

// qwen38 is the Qwen3.8-27B text config (text_config of the published bundle's
// model/config.json, anemll/anemll-forge-qwen3.8-27B on Hugging Face).
func qwen38() *hfconfig.Model {
	types := make([]string, 64)
	for i := range types {
		types[i] = hfconfig.LinearAttention
		if i%4 == 3 {
			types[i] = hfconfig.FullAttention
		}
	}
	return &hfconfig.Model{ModelType: "qwen3_5_text", VocabSize: 248320, HiddenSize: 5120, IntermediateSize: 17408,
		NumHiddenLayers: 64, NumAttentionHeads: 24, NumKeyValueHeads: 4, HeadDim: 256, LayerTypes: types,
		LinearNumKeyHeads: 16, LinearNumValueHeads: 48, LinearKeyHeadDim: 128, LinearValueHeadDim: 128,
		LinearConvKernelDim: 4, RopeTheta: 1e7, PartialRotaryFactor: 0.25, RMSNormEps: 1e-6}
}

// mix25inMixr is the published plan's allocation (Anemll/anemll-forge
// configs/quantization/mix25in_mixr.json): LUT4 MLPs in 26
// layers, vector 2x16 mixers in layers 0–23.
func mix25inMixr() string {
	var keys []string
	for _, l := range []int{23, 24, 25, 27, 28, 30, 32, 35, 36, 37, 39, 40, 41, 42, 44, 45, 49, 51, 53, 54, 55, 58, 60, 61, 62, 63} {
		for _, p := range []string{"gate", "up", "down"} {
			keys = append(keys, fmt.Sprintf(`"%d.%s": "LUT4 per-tensor + pcs"`, l, p))
		}
	}
	for l := 0; l < 24; l++ {
		keys = append(keys, fmt.Sprintf(`"%d.mixer": "vector 2x16 + pcs"`, l))
	}
	return "{" + strings.Join(keys, ", ") + "}"
}

// TestPublishedSizes: the published plan on the 27B shapes reproduces the
// recorded sizes (the size_gib of Anemll/anemll-forge scripts/qwen38_kl.py, as that
// repository records it for this export): 9.07 GiB of
// weights excluding the embedding and 9.36 GiB with rank-64 factors on the 208
// mixer matrices — once the DeltaNet in_proj_a/b, which stay BF16 outside the
// export (48 layers × 2 × 48×5120 × 2 B = 0.044 GiB), are counted as the
// published figure does.
func TestPublishedSizes(t *testing.T) {
	cfg := qwen38()
	p, err := Parse([]byte(mix25inMixr()))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(cfg, p, PublishedDefaults(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if r.Block != 1024 {
		t.Errorf("block %d, want 1024", r.Block)
	}
	gib := float64(r.Total.PackedBytes) / (1 << 30)
	var factors int64
	mixers := 0
	for _, m := range r.Matrices {
		if m.Layer >= 0 && m.File == export.MixerFile(m.Layer) {
			mixers++
			factors += 2 * 64 * int64(m.Rows+m.Cols)
		}
	}
	withLR := float64(r.Total.PackedBytes+factors) / (1 << 30)
	ab := float64(48*2*48*5120*2) / (1 << 30)
	t.Logf("27B mix25in_mixr: plan %.4f GiB (+ in_proj_a/b %.4f), %.4f GiB with rank-64 factors on %d mixer matrices, %.3f bits/weight",
		gib, ab, withLR, mixers, r.Total.BitsPerWeight())
	if mixers != 208 || math.Abs(gib+ab-9.07) > 0.005 || math.Abs(withLR+ab-9.36) > 0.005 {
		t.Errorf("published: 9.07 GiB, 9.36 GiB with factors on 208 matrices")
	}
}
