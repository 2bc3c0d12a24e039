package coreai

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/internal/refchunk"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/bundle"
)

// Published figures the host overhead is set against (measured on an
// M6, V8, faster graph, in github.com/Anemll/anemll-forge docs/SPECULATIVE_DECODING.md and
// COREAI_PORT_NOTES.md): a verify call at 8K and the published runtime's
// host time per cycle.
const (
	publishedVerify8KMS = 91.5
	publishedHostMS     = 1.8
)

type zeroEmbedding struct{ rows, cols int }

func (z zeroEmbedding) Row(_ int, dst []float32) { clear(dst) }
func (z zeroEmbedding) Rows() int                { return z.rows }
func (z zeroEmbedding) Cols() int                { return z.cols }
func (z zeroEmbedding) Bytes() int64             { return int64(z.rows*z.cols) * 2 }

// BenchmarkHostCycle27B measures the driver's host work per speculative
// cycle (Verify of 8 rows + Accept(8)) at the published 27B shapes: 16
// chunks + head, V8 cache at 8K, with functions that compute nothing, so
// only input filling, the bridge calls, logits conversion and K/V appends
// are timed. It reports host ms per cycle and that time as a share of the
// published 8K verify call and of the published runtime's host time.
// Needs ~0.7 GB of buffers.
func BenchmarkHostCycle27B(b *testing.B) {
	bridge := testBridge(b)
	cfg := refchunk.Published27B()
	dir := b.TempDir()
	man, err := standin.WriteLayout(dir, cfg, standin.RuntimeOptions{Contexts: []int{8192}, ChunkLayers: 4, KV: ane.KVV8,
		Taps: []int{5, 19, 33, 47, 61}, Prefill: true, Export: "x"})
	if err != nil {
		b.Fatal(err)
	}
	noop := func(string, map[string][]byte) error { return nil }
	handle(b, filepath.Join(dir, man.Head.File), noop)
	for _, c := range man.Chunks {
		handle(b, filepath.Join(dir, c.File), noop)
	}
	e, err := Open(dir, Options{Bridge: bridge, Embedding: zeroEmbedding{cfg.VocabSize, cfg.HiddenSize}, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ids := []int{1, 2, 3, 4, 5, 6, 7, 8}
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if e.Position() > 8000 {
			e.Reset()
		}
		if _, err := e.Verify(ids); err != nil {
			b.Fatal(err)
		}
		if err := e.Accept(8); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(b.N), "cpu_ms/cycle") // steadier on a loaded machine
	ms := float64(b.Elapsed().Microseconds()) / 1000 / float64(b.N)
	b.ReportMetric(ms, "host_ms/cycle")
	b.ReportMetric(ms/publishedVerify8KMS, "share_of_verify_8K")
	b.ReportMetric(ms/publishedHostMS, "ratio_vs_published_host")
}

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Published drafter figure (Anemll/anemll-forge docs/SPECULATIVE_DECODING.md):
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
	bridge := testBridge(b)
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
	handle(b, pkg, func(string, map[string][]byte) error { return nil })
	d, err := OpenDrafter(dir, DrafterOptions{Bridge: bridge, Embedding: zeroEmbedding{cfg.VocabSize, cfg.HiddenSize}, CacheDir: b.TempDir()})
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
