package grammar

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// valueGrammar is a small JSON-like language with what the matcher must
// handle: a leaf string rule, a list that calls the value rule
// (recursion), bounded whitespace, a counter (x{0,40}y, many states), and
// two alternatives that share a prefix through different rules (so the
// matcher holds several stacks).
func valueGrammar(t *testing.T) *Grammar {
	t.Helper()
	b := NewBuilder(Limits{MaxWS: 3})
	root, val, str, list, cnt, alt := b.Rule("root"), b.Rule("value"), b.Rule("string"), b.Rule("list"), b.Rule("counter"), b.Rule("alt")
	{ // string: " ([ab] | \ ["n])* "
		s := b.State()
		in := b.Lit(s, `"`)
		b.Bytes(in, 'a', 'b', in)
		esc := b.State()
		b.Byte(in, '\\', esc)
		b.Byte(esc, '"', in)
		b.Byte(esc, 'n', in)
		b.Define(str, s, b.Lit(in, `"`))
	}
	{ // list: [ ws (value (ws , ws value)*)? ws ]
		s := b.State()
		o := b.WS(b.Lit(s, "["))
		items := b.CallNew(o, val)
		more := b.WS(b.Lit(b.WS(items), ","))
		b.Call(more, val, items)
		c := b.WS(items)
		end := b.State()
		b.Byte(c, ']', end)
		b.Byte(o, ']', end)
		b.Define(list, s, end)
	}
	defineCounter(b, cnt, 40) // x{0,40} y
	{                         // alt: "1" [ab]* "2" | "1" string, through a call each
		s := b.State()
		one := b.Lit(s, "1")
		b.Bytes(one, 'a', 'b', one)
		e := b.Lit(one, "2")
		one2 := b.Lit(s, "1")
		b.Call(one2, str, e)
		b.Define(alt, s, e)
	}
	{ // value: string | list | counter | alt
		s := b.State()
		e := b.State()
		for _, r := range []int32{str, list, cnt, alt} {
			b.Call(s, r, e)
		}
		b.Define(val, s, e)
	}
	s := b.State()
	b.Define(root, s, b.WS(b.CallNew(b.WS(s), val)))
	g, err := b.Build(root)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// allStrings is every string of 1…n bytes over alphabet, as tokens.
func allStrings(alphabet string, n int) [][]byte {
	out := [][]byte{nil} // id 0: a token the grammar never allows
	level := [][]byte{nil}
	for range n {
		var next [][]byte
		for _, p := range level {
			for i := range len(alphabet) {
				next = append(next, append(slices.Clone(p), alphabet[i]))
			}
		}
		out = append(out, next...)
		level = next
	}
	return out
}

// eager builds every rule of m whole before its first mask, as the
// compiler did before states were built lazily.
func eager(t *testing.T, m *Matcher) {
	for r := range m.rules {
		ru := &m.rules[r]
		if ru.complete {
			continue
		}
		fresh, remap, ok := m.d.completed(ru, m.g.nfa.rules[r].start, 1<<30)
		if !ok {
			t.Fatalf("rule %s did not complete", ru.name)
		}
		m.renumber(int32(r), remap)
		*ru = fresh
	}
}

// TestLazyMasksEqualEager: along random outputs, a matcher that builds
// states as it reaches them, one that never completes a rule (cache
// entries per state), and one with every rule built up front give the
// same masks and the same Accepting.
func TestLazyMasksEqualEager(t *testing.T) {
	g := valueGrammar(t)
	v := NewVocab(allStrings(`"ab\n[], xy12`, 3))
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 7))
		lazy := NewMatcher(g, v)
		perState := NewMatcher(g, v)
		for r := range perState.lazy {
			perState.lazy[r] = true
		}
		whole := NewMatcher(g, v)
		eager(t, whole)
		ms := []*Matcher{lazy, perState, whole}
		masks := []Mask{NewMask(v.Size()), NewMask(v.Size()), NewMask(v.Size())}
		for step := 0; step < 80; step++ {
			for i, m := range ms {
				m.Mask(masks[i])
				if m.Err() != nil {
					t.Fatal(m.Err())
				}
			}
			for i := 1; i < len(ms); i++ {
				if step == 0 && ms[i] == perState && perState.d.total >= whole.d.total {
					t.Errorf("first mask: %d states built lazily, %d whole: nothing was left unbuilt", perState.d.total, whole.d.total)
				}
				if !slices.Equal(masks[i], masks[0]) || ms[i].Accepting() != ms[0].Accepting() {
					t.Fatalf("seed %d step %d: matcher %d: %d tokens allowed (accepting %v), lazy %d (accepting %v)",
						seed, step, i, masks[i].Count(), ms[i].Accepting(), masks[0].Count(), ms[0].Accepting())
				}
			}
			var ids []int
			for id := range v.Size() {
				if masks[0].Has(id) {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				break
			}
			id := ids[rng.IntN(len(ids))]
			for _, m := range ms {
				if err := m.Accept(id); err != nil {
					t.Fatalf("seed %d step %d: token %q in the mask but refused: %v", seed, step, v.Token(id), err)
				}
			}
		}
	}
}
