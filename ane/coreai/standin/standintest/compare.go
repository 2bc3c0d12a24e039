package standintest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
)

// CloseLogits compares logit rows of vocab values and returns the worst
// difference relative to the logit range of want. The chunk path stores
// hidden rows, K/V, DeltaNet state and logits in fp16 between steps, so
// it agrees with the float32 reference to a few parts in a thousand of
// the range (docs/COREAI.md measured ≤ 0.42%): t fails beyond 1%, or when
// a row's argmax differs from want's where want's top two are not nearly
// tied (apart by more than 4× the worst difference).
func CloseLogits(t testing.TB, what string, got, want []float32, vocab int) float64 {
	t.Helper()
	var worst, scale float64
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i]-want[i])))
		scale = max(scale, math.Abs(float64(want[i])))
	}
	rel := worst / scale
	if rel > 0.01 || math.IsNaN(rel) {
		t.Fatalf("%s: logits differ by %.4g (%.3g of the range %.3g)", what, worst, rel, scale)
	}
	for r := 0; r < len(want)/vocab; r++ {
		g, w := got[r*vocab:(r+1)*vocab], want[r*vocab:(r+1)*vocab]
		if gi, wi := Argmax(g), Argmax(w); gi != wi && Margin(w) > 4*worst {
			t.Fatalf("%s row %d: argmax %d, reference %d (margin %.3g)", what, r, gi, wi, Margin(w))
		}
	}
	return rel
}

// Argmax is the index of the first largest value.
func Argmax(v []float32) int {
	b := 0
	for i, x := range v {
		if x > v[b] {
			b = i
		}
	}
	return b
}

// Margin is how far the largest value is above the second largest.
func Margin(v []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, x := range v {
		if f := float64(x); f > a {
			a, b = f, a
		} else if f > b {
			b = f
		}
	}
	return a - b
}

// RandIDs draws n token ids below vocab.
func RandIDs(r *rand.Rand, n, vocab int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = r.IntN(vocab)
	}
	return ids
}

// Pair drives an engine under test (E) and a reference (S, ane/ref)
// through the same calls and compares them after each: logits and
// features with CloseLogits, positions and contexts exactly.
type Pair struct {
	T     testing.TB
	E, S  ane.Engine
	Vocab int
	Worst float64 // the worst logit difference seen, relative to the range
}

// both calls f on E, then on S, failing T on either's error.
func both[V any](p *Pair, f func(ane.Engine) (V, error)) (got, want V) {
	p.T.Helper()
	var err error
	if got, err = f(p.E); err != nil {
		p.T.Fatal(err)
	}
	if want, err = f(p.S); err != nil {
		p.T.Fatal(err)
	}
	return got, want
}

// Feed feeds ids to both.
func (p *Pair) Feed(ids []int) {
	p.T.Helper()
	got, want := both(p, func(e ane.Engine) ([]float32, error) { return e.Feed(ids) })
	p.Worst = max(p.Worst, CloseLogits(p.T, fmt.Sprintf("Feed(%d) at %d", len(ids), p.S.Position()), got, want, p.Vocab))
	p.Same()
}

// Verify verifies ids on both, compares their logits and features, and
// accepts k rows.
func (p *Pair) Verify(ids []int, k int) {
	p.T.Helper()
	got, want := both(p, func(e ane.Engine) (ane.Logits, error) { return e.Verify(ids) })
	p.Worst = max(p.Worst, CloseLogits(p.T, fmt.Sprintf("Verify(%d) at %d", len(ids), p.S.Position()), got.Data, want.Data, p.Vocab))
	if got.Rows != len(ids) || got.Vocab != p.Vocab {
		p.T.Fatalf("Verify logits %d×%d", got.Rows, got.Vocab)
	}
	gf, wf := both(p, func(e ane.Engine) ([]float32, error) { return e.Features(len(ids)) })
	CloseLogits(p.T, "Features", gf, wf, len(wf))
	both(p, func(e ane.Engine) (struct{}, error) { return struct{}{}, e.Accept(k) })
	p.Same()
}

// Same fails unless both are at the same position and context.
func (p *Pair) Same() {
	p.T.Helper()
	if p.E.Position() != p.S.Position() || p.E.Context() != p.S.Context() {
		p.T.Fatalf("position/context %d/%d, reference %d/%d", p.E.Position(), p.E.Context(), p.S.Position(), p.S.Context())
	}
}

// DrafterRun feeds random feature rows to a drafter under test (D) and
// the CPU drafter (CPU) and compares their proposals. Blind, a CPU
// drafter Reset before each of its proposals, tells whether the context
// changed what was proposed.
type DrafterRun struct {
	T          testing.TB
	D          speculative.Drafter
	CPU, Blind *dflash.Drafter
	Rng        *rand.Rand
	// Compare, when set, judges proposals that differ: it returns true
	// for a difference it accepts (a near-tie) and fails T for any other.
	// Without it every difference fails T.
	Compare func(anchor, pos int, got, want []int) (nearTie bool)

	Next      int // the next context position
	Proposals int
	NearTies  int // differences Compare accepted
	Informed  int // proposals that differ from Blind's
}

// Add gives both drafters n rows of random features at the next positions.
func (r *DrafterRun) Add(n int) {
	r.T.Helper()
	F := r.CPU.Features()
	f := make([]float32, n*F)
	for i := range f {
		f[i] = float32(r.Rng.NormFloat64() * 3)
	}
	pos := make([]int, n)
	for i := range pos {
		pos[i] = r.Next + i
	}
	if err := r.D.AddContext(f, pos); err != nil {
		r.T.Fatal(err)
	}
	if err := r.CPU.AddContext(f, pos); err != nil {
		r.T.Fatal(err)
	}
	r.Next += n
}

// Propose has both drafters propose after a random anchor at the next
// position, and Blind too.
func (r *DrafterRun) Propose() {
	r.T.Helper()
	anchor := r.Rng.IntN(400)
	got, err := r.D.Propose(anchor, r.Next)
	if err != nil {
		r.T.Fatal(err)
	}
	want, err := r.CPU.Propose(anchor, r.Next)
	if err != nil {
		r.T.Fatal(err)
	}
	if len(want.Tokens) != speculative.MaxDrafts {
		r.T.Fatalf("at position %d the CPU drafter proposes %v", r.Next, want.Tokens)
	}
	if !slices.Equal(got.Tokens, want.Tokens) {
		if r.Compare == nil {
			r.T.Fatalf("at %d: the drafter proposes %v, the CPU drafter %v", r.Next, got.Tokens, want.Tokens)
		}
		if r.Compare(anchor, r.Next, got.Tokens, want.Tokens) {
			r.NearTies++
		}
	}
	r.Blind.Reset()
	b, err := r.Blind.Propose(anchor, r.Next)
	if err != nil {
		r.T.Fatal(err)
	}
	r.Proposals++
	if !slices.Equal(b.Tokens, want.Tokens) {
		r.Informed++
	}
}
