package coreai

import (
	"math/rand/v2"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
	"github.com/forgedaemon/forged/ane/ref"
)

// The driver tests write a Core AI runtime directory for the tiny
// synthetic model with ane/coreai/standin: a manifest with two chunks
// (layers 0-1 and 2-3) and a head, each a stand-in package whose
// functions refchunk computes. The driver then runs for real over the
// purego binding and must give the logits of ane/ref's direct path.

var (
	testCtxs       = standintest.TestContexts
	testTaps       = standintest.TestTaps
	writeRuntime   = standintest.WriteRuntime
	writeRuntimeIn = standintest.WriteRuntimeIn
)

// bundleSpec says how to lay out the test runtime.
type bundleSpec = standintest.Spec

// openPair opens the runtime laid out by spec and ane/ref beside it.
func openPair(t *testing.T, spec bundleSpec) (*Engine, *ref.Session) {
	t.Helper()
	bridge := testBridge(t)
	_, cfg, _ := tiny(t)
	rt := t.TempDir()
	man := standintest.TinyRuntime(t, rt, spec.Options())
	e, err := Open(rt, Options{Bridge: bridge, Embedding: standintest.TinyEmbedding(t), KV: spec.Format(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.SetRoPE(cfg.RopeTheta)
	return e, standintest.Reference(t, man, spec.Format())
}

// newPair compares e with the reference s.
func newPair(t *testing.T, e *Engine, s *ref.Session) *standintest.Pair {
	_, cfg, _ := tiny(t)
	return &standintest.Pair{T: t, E: e, S: s, Vocab: cfg.VocabSize}
}

func TestDriverMatchesReference(t *testing.T) {
	for _, c := range []struct {
		name string
		spec bundleSpec
	}{
		{"fp16", bundleSpec{}},
		{"v8-keysT-selectable", bundleSpec{KV: ane.KVV8, KeysT: true, AliasKV: true}},
		{"fp16-no-prefill", bundleSpec{NoPrefix: true}}, // every prompt row through 8-row verify calls
		{"kv8-keysT-selectable", bundleSpec{KV: ane.KVKV8, KeysT: true, AliasKV: true}},
		{"kv8", bundleSpec{KV: ane.KVKV8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, s := openPair(t, c.spec)
			p := newPair(t, e, s)
			r := rand.New(rand.NewPCG(1, 2))
			V := 400                   // ids the synthetic tokenizer uses, well inside the vocab
			p.Feed(randIDs(r, 100, V)) // prefill 64 + 36 (padded block)
			p.Feed(randIDs(r, 5, V))   // verify entry, all accepted
			for _, k := range []int{3, 0, 8, 1, 5} {
				p.Verify(randIDs(r, 8, V), k) // partial accepts exercise the lazy commit
			}
			p.Verify(randIDs(r, 2, V), 2)
			snap, err := e.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			rsnap, _ := s.Snapshot()
			p.Verify(randIDs(r, 8, V), 4)
			if err := e.Restore(snap); err != nil {
				t.Fatal(err)
			}
			if err := s.Restore(rsnap); err != nil {
				t.Fatal(err)
			}
			p.Same()
			p.Verify(randIDs(r, 8, V), 6)
			p.Feed(randIDs(r, 940, V)) // crosses 1024: resize to 2048 copies the history
			if e.Context() != 2048 {
				t.Fatalf("context %d after 1000+ positions", e.Context())
			}
			p.Verify(randIDs(r, 8, V), 7)
			t.Logf("worst logit difference: %.3g of the logit range", p.Worst)
		})
	}
}

// A run that fails at any binding (either chunk or the head, verify or
// prefill) returns the error and leaves the session where it was: the
// next calls still match the reference.
func TestRunFailureLeavesSessionIntact(t *testing.T) {
	e, s := openPair(t, bundleSpec{})
	p := newPair(t, e, s)
	r := rand.New(rand.NewPCG(3, 4))
	p.Feed(randIDs(r, 20, 400))
	p.Verify(randIDs(r, 8, 400), 3)
	for at := 0; at < 3; at++ {
		pos := e.Position()
		failRun(t, at)
		_, err := e.Verify(randIDs(r, 8, 400))
		wantErr(t, err, "injected ANE failure")
		failRun(t, at)
		_, err = e.Feed(randIDs(r, 30, 400))
		wantErr(t, err, "injected ANE failure")
		clearFault()
		if e.Position() != pos {
			t.Fatalf("failure at binding %d moved the position %d → %d", at, pos, e.Position())
		}
		p.Verify(randIDs(r, 8, 400), 5)
		p.Feed(randIDs(r, 12, 400))
	}
}

// Restore moves back to the smallest context entry holding the snapshot's
// position, and the session continues with the reference's logits; a
// snapshot past the rows the shrink dropped is refused.
func TestRestoreShrinksContext(t *testing.T) {
	e, s := openPair(t, bundleSpec{})
	p := newPair(t, e, s)
	r := rand.New(rand.NewPCG(11, 12))
	p.Feed(randIDs(r, 100, 400))
	early, err := e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	rEarly, _ := s.Snapshot()
	p.Feed(randIDs(r, 940, 400))
	late, err := e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if e.Context() != 2048 {
		t.Fatalf("context %d at position %d", e.Context(), e.Position())
	}
	if err := e.Restore(early); err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(rEarly); err != nil {
		t.Fatal(err)
	}
	if e.Context() != 1024 || e.Position() != 100 {
		t.Fatalf("after Restore: context %d, position %d; want 1024, 100", e.Context(), e.Position())
	}
	// ane/ref keeps its 2048 context: logits are compared, not contexts.
	ids := randIDs(r, 8, 400)
	got, err := e.Verify(ids)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Verify(ids)
	if err != nil {
		t.Fatal(err)
	}
	standintest.CloseLogits(t, "Verify after a shrinking Restore", got.Data, want.Data, p.Vocab)
	if err := e.Accept(5); err != nil {
		t.Fatal(err)
	}
	if err := s.Accept(5); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.Restore(late), "only 1024 history rows are held")
}
