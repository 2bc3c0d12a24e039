package speculative

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/sample"
)

// toyEngine presents the toy model through ane.Engine, with the engine's
// Features contract (the last n rows of the last call).
type toyEngine struct{ t *toyTarget }

var errToy = errors.New("not part of the toy engine")

func (e toyEngine) Feed(ids []int) ([]float32, error) { return e.t.Feed(ids), nil }
func (e toyEngine) Verify(tokens []int) (ane.Logits, error) {
	rows, err := e.t.Verify(tokens)
	return ane.Logits{Rows: len(tokens), Vocab: e.t.vocab, Data: rows}, err
}
func (e toyEngine) Accept(k int) error { return e.t.Accept(k) }
func (e toyEngine) Features(n int) ([]float32, error) {
	all, err := e.t.Features(len(e.t.pending))
	if err != nil || n > len(e.t.pending) {
		return nil, errToy
	}
	return all[2*(len(e.t.pending)-n):], nil
}
func (e toyEngine) Fit(int) error                   { return nil }
func (e toyEngine) Resize(int) error                { return errToy }
func (e toyEngine) Snapshot() (ane.Snapshot, error) { return nil, errToy }
func (e toyEngine) Restore(ane.Snapshot) error      { return errToy }
func (e toyEngine) Reset()                          {}
func (e toyEngine) Memory() ane.MemoryReport        { return ane.MemoryReport{} }
func (e toyEngine) Position() int                   { return len(e.t.committed) }
func (e toyEngine) Context() int                    { return 8192 }

// Through the adapter, the drafter must still see the committed rows' own
// features (the toy features carry their position, which the drafter
// checks) when cycles accept fewer than seven drafts, and the output
// equals plain decoding.
func TestEngineTargetFeedsCommittedRows(t *testing.T) {
	const vocab = 40
	prompt := []int{4, 5, 6}
	opts := sample.Options{Temperature: 0, MaxTokens: 120}
	plain, _, _, _ := run(t, vocab, 1, prompt, opts, nil, Config{})

	toy := newToyTarget(vocab, 77)
	eng := toyEngine{toy}
	first, _ := eng.Feed(prompt)
	d := &oracleDrafter{t: toy, hit: 0.9, rng: rand.New(rand.NewPCG(1, 1))}
	if err := d.AddContext(toy.promptFeatures()); err != nil {
		t.Fatal(err)
	}
	s, _ := sample.New(opts)
	stop, _ := sample.NewStopper(opts)
	sp, err := New(NewEngineTarget(eng, vocab), d, s, Config{Mode: ModeOn})
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	if _, err := sp.Generate(first, len(prompt), stop, nil, func(tok Token) error { out = append(out, tok.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, plain) {
		t.Fatalf("through the engine adapter: %v, plain %v", out, plain)
	}
	if st := sp.Stats(); st.Histogram[MaxDrafts] == st.Cycles || st.Accepted < 2*st.Cycles {
		t.Fatalf("histogram %v: want partial cycles, and most drafts kept", st.Histogram)
	}
	if _, err := NewEngineTarget(eng, vocab+1).Verify([]int{1}); err == nil {
		t.Fatal("a vocabulary mismatch went unnoticed")
	}
}
