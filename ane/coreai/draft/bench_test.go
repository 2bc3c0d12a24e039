package draft

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/bundle"
)

type zeroEmbedding = standintest.ZeroEmbedding

var cpuTime = standintest.CPUTime

// Published drafter figure (Anemll/anemll-forge docs/verifier_len.md):
// drafter time per cycle, including the 3 ms gap the runtime leaves after each
// verify.
const publishedDrafterMS = 16.7

// BenchmarkDrafterHost27B measures the drafter driver's host work per
// speculative cycle at the published shapes (25,600-wide features, W =
// 2048, 5 layers of 8 KV heads × 128, vocab 248,320, top-16 / rank 256):
// AddContext of 8 committed rows, then Propose (feature and mask filling,
// one draft run, ring writes, fp16 → fp32 of 7 logits rows, top-16 and
// the selector walk), with functions that compute nothing (their logits
// are zero). Every eighth cycle adds 64 more rows, so a ctx64 flush is
// included at its real rate for a long prompt's tail. Needs ~0.6 GB.
func BenchmarkDrafterHost27B(b *testing.B) {
	bridge := standintest.Bridge(b)
	cfg := &hfconfig.Drafter{HiddenSize: 5120, IntermediateSize: 17408, NumHiddenLayers: 5, NumAttentionHeads: 32,
		NumKeyValueHeads: 8, HeadDim: 128, VocabSize: 248320, SlidingWindow: 2048, NumTargetLayers: 64,
		RMSNormEps: 1e-6, RopeTheta: 1e7, DFlash: hfconfig.DFlashConfig{BlockSize: 8, MaskTokenID: 248070,
			SelectorTopK: 16, SelectorRank: 256, ConvGroupSize: 16, ConvKernelSize: 2, TargetLayerIDs: []int{5, 19, 33, 47, 61}}}
	dir := b.TempDir()
	cj, err := cfg.MarshalHF()
	if err != nil {
		b.Fatal(err)
	}
	meta := &drafter.Metadata{W: 2048, T: 8, R: 8, RP: 64, FeatScale: 0.125, TargetExport: "x", HeadExport: "x/lm_head.safetensors"}
	meta.Entries = map[string]struct {
		Inputs  []string `json:"inputs,omitempty"`
		Outputs []string `json:"outputs"`
	}{"draft": {Outputs: []string{"logits"}}, "ctx64": {Outputs: []string{"k_new0"}}}
	mj, _ := json.Marshal(meta)
	codebook := make([]byte, cfg.VocabSize*cfg.DFlash.SelectorRank*2)
	for i := range codebook {
		codebook[i] = byte(i * 7) // arbitrary bf16 values
	}
	shape := []int{cfg.VocabSize, cfg.DFlash.SelectorRank}
	if err := errors.Join(os.WriteFile(filepath.Join(dir, drafter.ConfigFile), cj, 0o644),
		os.WriteFile(filepath.Join(dir, drafter.MetadataFile), mj, 0o644),
		tensor.WriteSafetensors(filepath.Join(dir, drafter.SelectorFile), nil, []tensor.Tensor{
			{Name: drafter.PredecessorCodebook, DType: tensor.BF16, Shape: shape, Data: codebook},
			{Name: drafter.SuccessorCodebook, DType: tensor.BF16, Shape: shape, Data: codebook}})); err != nil {
		b.Fatal(err)
	}
	fns, err := standin.DrafterFunctions(dir)
	if err != nil {
		b.Fatal(err)
	}
	pkg := filepath.Join(dir, bundle.DrafterModel)
	if err := standin.WriteFunctions(pkg, standin.FunctionsText(standin.MPSGraphVersion, fns)); err != nil {
		b.Fatal(err)
	}
	standintest.Handle(b, pkg, func(string, map[string][]byte) error { return nil })
	d, err := Open(dir, Options{Bridge: bridge, Embedding: zeroEmbedding{RowCount: cfg.VocabSize, ColCount: cfg.HiddenSize}, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	F := cfg.FeatureSize(cfg.HiddenSize)
	feat := make([]float32, 72*F) // committed rows' features, allocated once
	positions := make([]int, 72)
	rows := func(pos, n int) ([]float32, []int) {
		for i := range positions[:n] {
			positions[i] = pos + i
		}
		return feat[:n*F], positions[:n]
	}
	pos := 0
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		n := 8
		if i%8 == 7 {
			n += 64
		}
		f, p := rows(pos, n)
		if err := d.AddContext(f, p); err != nil {
			b.Fatal(err)
		}
		pos += n
		if _, err := d.Propose(1, pos); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(b.N), "cpu_ms/cycle")
	ms := float64(b.Elapsed().Microseconds()) / 1000 / float64(b.N)
	b.ReportMetric(ms, "host_ms/cycle")
	b.ReportMetric(ms/publishedDrafterMS, "share_of_published_drafter")
}
