package ref

import (
	"math"
	"math/rand/v2"
	"testing"
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
