package coreai

import (
	"path/filepath"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/internal/refchunk"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
)

// Published figures the host overhead is set against (measured on an M6,
// V8, faster graph, in github.com/Anemll/anemll-forge docs/verifier_len.md):
// a verify call at 8K and the published runtime's host time per cycle.
const (
	publishedVerify8KMS = 91.5
	publishedHostMS     = 1.8
)

type zeroEmbedding = standintest.ZeroEmbedding

var cpuTime = standintest.CPUTime

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
	e, err := Open(dir, Options{Bridge: bridge, Embedding: zeroEmbedding{RowCount: cfg.VocabSize, ColCount: cfg.HiddenSize}, CacheDir: b.TempDir()})
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
