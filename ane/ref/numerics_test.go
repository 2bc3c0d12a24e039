package ref

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane"
)

// TestFastModeWithinBound: the fast mode runs the vectorised functions
// (its logits are not the exact mode's bits), stays as close to the
// float64 oracle as the exact mode must be, and within 1e-4 of the exact
// mode (the largest logit's scale), over a prompt and decode steps (attention, DeltaNet and MLP all
// run through the switched functions).
func TestFastModeWithinBound(t *testing.T) {
	nm, exact := newTiny(t, Options{})
	_, fast := newTiny(t, Options{Fast: true})
	if exact.NumericMode() != ModeExact || fast.NumericMode() != ModeFast {
		t.Fatalf("modes %q, %q; want %q, %q", exact.NumericMode(), fast.NumericMode(), ModeExact, ModeFast)
	}
	ids := randIDs(rand.New(rand.NewPCG(5, 5)), 48, nm.cfg.Vocab)
	st := nm.newState()
	se, sf := openSession(t, exact), openSession(t, fast)
	differ, worst := false, 0.0
	for i, id := range ids {
		want := nm.step(st, id)
		le, err := se.Feed([]int{id})
		if err != nil {
			t.Fatal(err)
		}
		lf, err := sf.Feed([]int{id})
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr(lf, want); e > 1e-4 {
			t.Fatalf("step %d: fast logits differ from the float64 reference by %.3g (> 1e-4)", i, e)
		}
		e := relErr32(lf, le)
		if e > 1e-4 {
			t.Fatalf("step %d: fast logits differ from the exact mode by %.3g (> 1e-4)", i, e)
		}
		worst = max(worst, e)
		for j := range le {
			differ = differ || math.Float32bits(le[j]) != math.Float32bits(lf[j])
		}
	}
	t.Logf("fast vs exact: max %.3g of the largest logit", worst)
	if !differ {
		t.Fatal("fast and exact modes gave bit-identical logits: the fast functions are not in use")
	}
}

// The fast mode prefills in blocks of fastFeedRows (ane.FeedRows says so)
// and the exact mode in Core AI's ane.PrefillRows. A block's rows come out
// as they do in smaller blocks: 300 tokens fed as a 256-row Feed and a
// 44-row one, and as 64-row Feeds, give the same logits and the same
// features of the first 256 rows, to the bit, on the quick export
// (integer panel path).
func TestFastFeedBlock(t *testing.T) {
	cfg := tinyConfig()
	_, src := newTinyModel(cfg, 1)
	w, err := QuickExport(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	models := map[bool]*Model{}
	for _, fast := range []bool{false, true} {
		if models[fast], err = NewModel(cfg, w, Options{Fast: fast, Taps: []int{1, 3}, Ladder: ane.Ladder{512}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := ane.FeedRows(openSession(t, models[false])); got != ane.PrefillRows {
		t.Fatalf("exact mode: FeedRows %d, want Core AI's %d", got, ane.PrefillRows)
	}
	fast := models[true]
	whole, pieces := openSession(t, fast), openSession(t, fast)
	if got := ane.FeedRows(whole); got != fastFeedRows || got <= ane.PrefillRows {
		t.Fatalf("fast mode: FeedRows %d, want fastFeedRows (%d)", got, fastFeedRows)
	}
	ids := randIDs(rand.New(rand.NewPCG(9, 9)), 300, cfg.Vocab)
	block := fastFeedRows
	if _, err := whole.Feed(ids[:block]); err != nil {
		t.Fatal(err)
	}
	fw, err := whole.Features(block)
	if err != nil {
		t.Fatalf("Features(%d) after a %d-row Feed: %v", block, block, err)
	}
	fw = append([]float32(nil), fw...)
	lw, err := whole.Feed(ids[block:])
	if err != nil {
		t.Fatal(err)
	}
	var fp []float32
	var lp []float32
	for i := 0; i < len(ids); i += ane.PrefillRows {
		piece := ids[i:min(i+ane.PrefillRows, len(ids))]
		if lp, err = pieces.Feed(piece); err != nil {
			t.Fatal(err)
		}
		if i < block {
			f, err := pieces.Features(len(piece))
			if err != nil {
				t.Fatal(err)
			}
			fp = append(fp, f...)
		}
	}
	if !slices.Equal(fw, fp) {
		t.Fatalf("features of a %d-row block differ from those of %d-row pieces", block, ane.PrefillRows)
	}
	if !slices.Equal(lw, lp) {
		t.Fatalf("logits after a %d-row block differ from those after %d-row pieces (%.3g)", block, ane.PrefillRows, relErr32(lw, lp))
	}
	if _, err := whole.Features(len(ids) - block + 1); err == nil {
		t.Fatal("Features past the last block's rows: no error")
	}
}
