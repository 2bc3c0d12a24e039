package sample

import (
	"math/rand/v2"
	"testing"
)

// Qwen3.5-family vocabulary size: the row the published runtime samples.
const qwenVocab = 248320

// BenchmarkSample measures one sample over a full 248,320-entry logits row
// with a 2,000-token history.
func BenchmarkSample(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 11))
	logits := randomLogits(r, qwenVocab)
	hist := repetitiveHistory(r, qwenVocab, 2000)
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"greedy", Options{Temperature: 0}},
		{"nonthinking", Defaults(false)},
		{"thinking", Defaults(true)},
		{"presence+dry", Options{Temperature: 0.7, TopP: 0.8, PresencePenalty: 1, DRY: DRY{Multiplier: 0.8}}},
		{"topk1000", Options{Temperature: 1, TopK: 1000, TopP: 0.95}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := New(c.o)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Sample(logits, hist); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
