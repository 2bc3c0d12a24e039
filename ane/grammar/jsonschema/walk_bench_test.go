package jsonschema

import (
	"testing"

	"github.com/forgedaemon/forged/ane/grammar"
)

// BenchmarkColdMask is the cost of one mask-cache miss inside a free
// string (a walk of the whole token trie).
func BenchmarkColdMask(b *testing.B) {
	_, v := qwen(b)
	g, err := Compile([]byte(`{"type":"string"}`), Options{})
	if err != nil {
		b.Fatal(err)
	}
	mask := grammar.NewMask(v.Size())
	for b.Loop() {
		m := grammar.NewMatcher(g, v)
		if err := m.AcceptBytes([]byte(`"`)); err != nil {
			b.Fatal(err)
		}
		m.Mask(mask)
	}
	b.ReportMetric(float64(v.Nodes()), "trie-nodes")
}
