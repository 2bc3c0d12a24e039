package standintest

import (
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/ref"
)

// TestContexts are the contexts of the tests' tiny runtimes; TestTaps are
// their tap layers unless a Spec names others.
var (
	TestContexts = []int{1024, 2048}
	TestTaps     = []int{0, 1, 3}
)

// Spec says how to lay out the tiny model's test runtime.
type Spec struct {
	KV       ane.KVFormat // "" is fp16
	KeysT    bool         // keys stored transposed (dim_token)
	AliasKV  bool         // selectable fp16/kv cache with entries_by_kv names
	NoPrefix bool         // no p64 entries (manifest without pctxs)
	Taps     []int        // nil: TestTaps
}

// Format is the spec's KV format ("" is fp16).
func (s Spec) Format() ane.KVFormat {
	if s.KV == "" {
		return ane.KVFP16
	}
	return s.KV
}

// Options lay the runtime out with standin: contexts 1024 and 2048,
// chunks of 2 layers, export "tiny".
func (s Spec) Options() standin.RuntimeOptions {
	taps := s.Taps
	if taps == nil {
		taps = TestTaps
	}
	return standin.RuntimeOptions{Contexts: TestContexts, ChunkLayers: 2, KV: s.Format(), KeysT: s.KeysT, Taps: taps,
		Prefill: !s.NoPrefix, Export: "tiny", Selectable: s.AliasKV}
}

// WriteRuntime writes the tiny model's runtime laid out by spec.
func WriteRuntime(t *testing.T, spec Spec) string {
	t.Helper()
	return WriteRuntimeIn(t, t.TempDir(), spec)
}

// WriteRuntimeIn writes the tiny model's runtime laid out by spec into dir.
func WriteRuntimeIn(t testing.TB, dir string, spec Spec) string {
	t.Helper()
	TinyRuntime(t, dir, spec.Options())
	return dir
}

// SameRecords fails unless two runs recorded exactly the same values.
func SameRecords(t *testing.T, what string, got, want [][]float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("%s: result %d differs (%d values)", what, i, len(want[i]))
		}
	}
}

// RefGreedy decodes n tokens greedily with ane/ref's plain path over the
// tiny model at TestContexts.
func RefGreedy(t *testing.T, prompt []int, n int) []int {
	dir, _, _ := Tiny(t)
	m, err := ref.Open(dir, ref.Options{Numerics: GraphNumerics, Ladder: TestContexts, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	defer s.Close()
	lg, err := s.Feed(prompt)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for len(out) < n {
		id := Argmax(lg)
		out = append(out, id)
		if lg, err = s.Feed([]int{id}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Session opens a session with open and closes it when the test ends.
func Session[S interface{ Close() error }](t *testing.T, open func() (S, error)) S {
	t.Helper()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
