package grammar

import (
	"errors"
	"slices"
	"testing"
)

// balanced builds P := "(" P* ")" as a rule that calls itself.
func balanced(t *testing.T) *Grammar {
	t.Helper()
	b := NewBuilder(Limits{})
	p := b.Rule("P")
	s := b.State()
	open := b.Lit(s, "(")
	loop := b.State()
	b.Eps(open, loop)
	b.Call(loop, p, loop)
	end := b.Lit(loop, ")")
	b.Define(p, s, end)
	g, err := b.Build(p)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var parenTokens = [][]byte{[]byte("("), []byte(")"), []byte("(("), []byte("))"), []byte("()"), []byte(")("), []byte("x"), nil, []byte("())")}

// allowed is the brute-force mask: each token tried with Allows.
func allowed(m *Matcher) []int {
	var ids []int
	for id := range parenTokens {
		if m.Allows(id) {
			ids = append(ids, id)
		}
	}
	return ids
}

func maskIDs(m *Matcher) []int {
	mask := NewMask(m.Vocab().Size())
	m.Mask(mask)
	var ids []int
	for id := range parenTokens {
		if mask.Has(id) {
			ids = append(ids, id)
		}
	}
	return ids
}

func TestRecursiveRuleMaskAcceptRollback(t *testing.T) {
	g := balanced(t)
	v := NewVocab(parenTokens)
	m := NewMatcher(g, v)
	// "(" "((" "))" "()" ")": a tokenization of (( () ) () ).
	seq := []int{0, 2, 3, 4, 1}
	var masks [][]int
	for i, id := range seq {
		got, want := maskIDs(m), allowed(m)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: mask %v, Allows %v", i, got, want)
		}
		if !slices.Contains(got, id) {
			t.Fatalf("step %d: token %q not allowed (mask %v)", i, parenTokens[id], got)
		}
		masks = append(masks, got)
		if m.Accepting() {
			t.Fatalf("step %d: accepting before the last )", i)
		}
		if err := m.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	if !m.Accepting() {
		t.Fatal("not accepting after a balanced string")
	}
	if got := maskIDs(m); len(got) != 0 {
		t.Fatalf("after the end, tokens %v allowed", got)
	}
	if err := m.Accept(1); !errors.Is(err, ErrRejected) {
		t.Fatalf("extra ) accepted: %v", err)
	}
	// Rolling back three tokens restores the mask seen there.
	if err := m.Rollback(3); err != nil {
		t.Fatal(err)
	}
	if got := maskIDs(m); !slices.Equal(got, masks[2]) {
		t.Fatalf("after rollback: mask %v, want %v", got, masks[2])
	}
	if m.Allows(6) || m.Allows(7) {
		t.Fatal("a token outside the grammar (or with no bytes) is allowed")
	}
	if err := m.Rollback(10); err == nil {
		t.Fatal("rolling back past the start succeeded")
	}
}

func TestBuildRefusals(t *testing.T) {
	// Left recursion: A := A "x" | "y".
	b := NewBuilder(Limits{})
	a := b.Rule("A")
	s, e := b.State(), b.State()
	mid := b.State()
	b.Call(s, a, mid)
	b.Byte(mid, 'x', e)
	b.Byte(s, 'y', e)
	b.Define(a, s, e)
	if _, err := b.Build(a); err == nil {
		t.Fatal("left recursion built")
	}
	// A rule that can only call itself forever accepts nothing.
	b = NewBuilder(Limits{})
	r := b.Rule("R")
	s = b.State()
	o := b.Lit(s, "(")
	e = b.State()
	b.Call(o, r, e)
	b.Define(r, s, e)
	if _, err := b.Build(r); !errors.Is(err, ErrEmpty) {
		t.Fatalf("got %v, want ErrEmpty", err)
	}
	// The NFA limit is reported by name.
	b = NewBuilder(Limits{NFAStates: 10})
	r = b.Rule("R")
	s = b.State()
	b.Define(r, s, b.Lit(s, "a long literal"))
	var le *LimitError
	if _, err := b.Build(r); !errors.As(err, &le) || le.Limit != "NFAStates" {
		t.Fatalf("got %v, want the NFAStates limit", err)
	}
}

// Whitespace at a structural position is bounded by MaxWS.
func TestWhitespaceBound(t *testing.T) {
	b := NewBuilder(Limits{MaxWS: 3})
	r := b.Rule("R")
	s := b.State()
	b.Define(r, s, b.Lit(b.WS(s), "x"))
	g, err := b.Build(r)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVocab([][]byte{[]byte(" "), []byte("  "), []byte("x")})
	m := NewMatcher(g, v)
	for _, id := range []int{1, 0} {
		if err := m.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	mask := NewMask(v.Size())
	m.Mask(mask)
	if mask.Has(0) || mask.Has(1) || !mask.Has(2) {
		t.Fatalf("after 3 spaces: mask %b, want only x", mask[0])
	}
}

// TestBlocksSeeOnlyDepthBytes: in "x{0,5}y" the states after 0…3 x's
// accept the same strings of at most 2 bytes, so at depth 2 they share a
// block and the states after 4 and 5 x's do not; at depth 6 every state
// is alone (the refinement splits only where a successor's block split).
func TestBlocksSeeOnlyDepthBytes(t *testing.T) {
	b := NewBuilder(Limits{})
	r := b.Rule("R")
	defineCounter(b, r, 5)
	g, err := b.Build(r)
	if err != nil {
		t.Fatal(err)
	}
	ru := completed(t, g, r)
	var after [6]int32 // after[k]: the state after k x's
	for k := 1; k <= 5; k++ {
		after[k] = ru.trans[after[k-1]*ru.nclass+int32(ru.class['x'])]
	}
	at2 := ru.blocks(2)
	for k := 1; k <= 3; k++ {
		if at2[after[k]] != at2[after[0]] {
			t.Errorf("depth 2: after %d x's in block %d, after none in %d", k, at2[after[k]], at2[after[0]])
		}
	}
	if at2[after[4]] == at2[after[0]] || at2[after[5]] == at2[after[0]] || at2[after[4]] == at2[after[5]] {
		t.Errorf("depth 2: the states after 4 and 5 x's must be alone: %v (states %v)", at2, after)
	}
	at6 := ru.blocks(6)
	for s, rep := range at6 {
		if rep != int32(s) {
			t.Errorf("depth 6: state %d shares block %d", s, rep)
		}
	}
}

// completed is a copy of rule r of g with every state built.
func completed(t *testing.T, g *Grammar, r int32) *rule {
	ru := g.rules[r].clone()
	if !newDet(g.nfa, g.lim.DFAStates, g.built).complete(&ru) {
		t.Fatalf("rule %d did not complete", r)
	}
	return &ru
}

// defineCounter defines rule r as x{0,n} y: a chain of n+1 states, each
// taking y to the end and x to the next.
func defineCounter(b *Builder, r int32, n int) {
	start, end := b.State(), b.State()
	s := start
	for k := 0; k <= n; k++ {
		b.Byte(s, 'y', end)
		if k < n {
			next := b.State()
			b.Byte(s, 'x', next)
			s = next
		}
	}
	b.Define(r, start, end)
}
