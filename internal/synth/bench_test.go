package synth

import (
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane/format/layout"
)

// BenchmarkGenerate reports the time to write each preset and the
// throughput in MB/s of checkpoint written (fsync included). small and
// medium take seconds per op: run them with -benchtime 1x.
func BenchmarkGenerate(b *testing.B) {
	for _, name := range []string{"tiny", "small"} {
		b.Run(name, func(b *testing.B) {
			var bytes int64
			for b.Loop() {
				rep, err := Write(b.TempDir(), Options{Preset: name, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				bytes = rep.TotalBytes
			}
			b.SetBytes(bytes)
		})
	}
}

// Values do not depend on how rows are grouped into chunks (the tiny preset
// fits every tensor in one chunk, so this covers the multi-chunk path).
func TestFillerChunkingIndependent(t *testing.T) {
	for _, spec := range []layout.TensorSpec{
		{Name: "w", Shape: []int{37, 11}, Kind: layout.Linear},
		{Name: "c", Shape: []int{12, 1, 4}, Kind: layout.Conv},
		{Name: "e", Shape: []int{9, 5}, Kind: layout.Embedding},
	} {
		whole := make([]float32, spec.Elements())
		newFiller(5, spec).next(whole)
		f := newFiller(5, spec)
		cols := int(spec.Elements()) / spec.Shape[0]
		var parts []float32
		for r := 0; r < spec.Shape[0]; r += 3 {
			chunk := make([]float32, min(3, spec.Shape[0]-r)*cols)
			f.next(chunk)
			parts = append(parts, chunk...)
		}
		if !slices.Equal(whole, parts) {
			t.Errorf("%s: chunked generation differs from whole-tensor generation", spec.Name)
		}
	}
}
