// Package chars builds character automata for the contents of JSON
// strings (ECMA-262 patterns, lengths, products, name sets) and writes
// them into a grammar as the bytes of their JSON spelling.
package chars

import (
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/forgedaemon/forged/ane/grammar"
)

// An NFA describes a string's decoded characters (what pattern,
// format and the length bounds talk about); Emit turns it into bytes of
// the JSON encoding.
type NFA struct {
	states []rstate
	limit  int
}

type rstate struct {
	eps   []int
	edges []redge
}

type redge struct {
	lo, hi rune
	to     int
}

// MaxRune is the largest character.
const MaxRune = unicode.MaxRune

func (a *NFA) state() (int, error) {
	if len(a.states) >= a.limit {
		return 0, errTooBig
	}
	a.states = append(a.states, rstate{})
	return len(a.states) - 1, nil
}

var errTooBig = fmt.Errorf("string automaton over its size limit")

func (a *NFA) eps(f, t int) { a.states[f].eps = append(a.states[f].eps, t) }
func (a *NFA) edge(f int, lo, hi rune, t int) {
	a.states[f].edges = append(a.states[f].edges, redge{lo, hi, t})
}

// Frag is a piece of a rune automaton from start to end.
type Frag struct{ Start, End int }

// New starts an automaton of at most limit states.
func New(limit int) *NFA { return &NFA{limit: limit} }

// ecmaRewrite turns the ECMA-262 spellings RE2 lacks or reads differently
// into RE2 syntax: \uXXXX, and \s / \S (white space beyond RE2's ASCII
// \s). It refuses \S inside a class.
func ecmaRewrite(p string) (string, error) {
	// \s: white space for ECMA-262 and for the Python and Rust engines that
	// validators use (ECMA's U+FEFF is not theirs), so a generated match is
	// a match for all of them; \S: neither ECMA's nor theirs (they add
	// U+001C…U+001F and U+0085).
	const ws = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`
	const notWS = ws + `\x{1c}-\x{1f}\x{85}\x{feff}`
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' && i+1 < len(p) {
			n := p[i+1]
			switch {
			case n == 'u' && i+5 < len(p) && isHex4(p[i+2:i+6]):
				b.WriteString(`\x{` + p[i+2:i+6] + `}`)
				i += 5
				continue
			case n == 's':
				if inClass {
					b.WriteString(ws)
				} else {
					b.WriteString("[" + ws + "]")
				}
				i++
				continue
			case n == 'S':
				if inClass {
					return "", fmt.Errorf(`\S inside a character class is not supported`)
				}
				b.WriteString("[^" + notWS + "]")
				i++
				continue
			case n == 'd' || n == 'D' || n == 'w' || n == 'W':
				// RE2's Perl classes are ASCII, as ECMA's are.
			}
			b.WriteByte(c)
			b.WriteByte(n)
			i++
			continue
		}
		if c == '[' && !inClass {
			inClass = true
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' { // a leading ] is literal in RE2, an empty class in ECMA
				return "", fmt.Errorf("an empty character class is not supported")
			}
			continue
		}
		if c == ']' && inClass {
			inClass = false
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

func isHex4(s string) bool {
	for i := 0; i < 4; i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// CompilePattern builds the automaton of strings that contain a match of
// the ECMA-262 regular expression p (JSON Schema patterns are unanchored).
func (a *NFA) CompilePattern(p string) (Frag, error) {
	q, err := ecmaRewrite(p)
	if err != nil {
		return Frag{}, err
	}
	re, err := syntax.Parse(q, syntax.Perl)
	if err != nil {
		return Frag{}, fmt.Errorf("unsupported regular expression: %v", err)
	}
	return a.anchored(re)
}

// anchored compiles re as a search: each top-level alternative may be
// anchored at the start (^) and/or the end ($); where it is not, any text
// may precede or follow.
func (a *NFA) anchored(re *syntax.Regexp) (Frag, error) {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op == syntax.OpAlternate {
		s, err := a.state()
		if err != nil {
			return Frag{}, err
		}
		return a.union(s, re.Sub, a.anchored)
	}
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	begin, end := false, false
	if len(subs) > 0 && subs[0].Op == syntax.OpBeginText {
		begin, subs = true, subs[1:]
	}
	if len(subs) > 0 && subs[len(subs)-1].Op == syntax.OpEndText {
		end, subs = true, subs[:len(subs)-1]
	}
	s, err := a.state()
	if err != nil {
		return Frag{}, err
	}
	cur := s
	if !begin {
		a.edge(cur, 0, MaxRune, cur)
	}
	for _, sub := range subs {
		f, err := a.regex(sub)
		if err != nil {
			return Frag{}, err
		}
		a.eps(cur, f.Start)
		cur = f.End
	}
	if !end {
		n, err := a.state()
		if err != nil {
			return Frag{}, err
		}
		a.eps(cur, n)
		a.edge(n, 0, MaxRune, n)
		cur = n
	}
	return Frag{s, cur}, nil
}

// MaxRepeat bounds a counted repetition (and the supported string lengths).
const MaxRepeat = 1000

func (a *NFA) regex(re *syntax.Regexp) (Frag, error) {
	s, err := a.state()
	if err != nil {
		return Frag{}, err
	}
	switch re.Op {
	case syntax.OpEmptyMatch:
		return Frag{s, s}, nil
	case syntax.OpLiteral:
		cur := s
		for _, r := range re.Rune {
			n, err := a.state()
			if err != nil {
				return Frag{}, err
			}
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					a.edge(cur, f, f, n)
				}
			}
			a.edge(cur, r, r, n)
			cur = n
		}
		return Frag{s, cur}, nil
	case syntax.OpCharClass:
		n, err := a.state()
		if err != nil {
			return Frag{}, err
		}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			a.edge(s, re.Rune[i], re.Rune[i+1], n)
		}
		return Frag{s, n}, nil
	case syntax.OpAnyChar:
		n, err := a.state()
		if err != nil {
			return Frag{}, err
		}
		a.edge(s, 0, MaxRune, n)
		return Frag{s, n}, nil
	case syntax.OpAnyCharNotNL: // ECMA's . stops at every line terminator
		n, err := a.state()
		if err != nil {
			return Frag{}, err
		}
		a.edge(s, 0, '\n'-1, n)
		a.edge(s, '\n'+1, '\r'-1, n)
		a.edge(s, '\r'+1, 0x2027, n)
		a.edge(s, 0x202a, MaxRune, n)
		return Frag{s, n}, nil
	case syntax.OpCapture:
		f, err := a.regex(re.Sub[0])
		if err != nil {
			return Frag{}, err
		}
		a.eps(s, f.Start)
		return Frag{s, f.End}, nil
	case syntax.OpConcat:
		cur := s
		for _, sub := range re.Sub {
			f, err := a.regex(sub)
			if err != nil {
				return Frag{}, err
			}
			a.eps(cur, f.Start)
			cur = f.End
		}
		return Frag{s, cur}, nil
	case syntax.OpAlternate:
		return a.union(s, re.Sub, a.regex)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		min, max := 0, -1
		if re.Op == syntax.OpPlus {
			min = 1
		}
		if re.Op == syntax.OpQuest {
			max = 1
		}
		return a.repeat(s, re.Sub[0], min, max)
	case syntax.OpRepeat:
		if re.Min > MaxRepeat || re.Max > MaxRepeat {
			return Frag{}, fmt.Errorf("repetition count over %d", MaxRepeat)
		}
		return a.repeat(s, re.Sub[0], re.Min, re.Max)
	}
	return Frag{}, fmt.Errorf("regular expression operator %v is not supported", re.Op)
}

// union joins the alternatives subs, each compiled by each, from s.
func (a *NFA) union(s int, subs []*syntax.Regexp, each func(*syntax.Regexp) (Frag, error)) (Frag, error) {
	e, err := a.state()
	if err != nil {
		return Frag{}, err
	}
	for _, sub := range subs {
		f, err := each(sub)
		if err != nil {
			return Frag{}, err
		}
		a.eps(s, f.Start)
		a.eps(f.End, e)
	}
	return Frag{s, e}, nil
}

// repeat builds sub{min,max} (max -1: unbounded) starting at s.
func (a *NFA) repeat(s int, sub *syntax.Regexp, min, max int) (Frag, error) {
	cur := s
	for i := 0; i < min; i++ {
		f, err := a.regex(sub)
		if err != nil {
			return Frag{}, err
		}
		a.eps(cur, f.Start)
		cur = f.End
	}
	if max < 0 {
		f, err := a.regex(sub)
		if err != nil {
			return Frag{}, err
		}
		a.eps(cur, f.Start)
		a.eps(f.End, cur)
		n, err := a.state()
		if err != nil {
			return Frag{}, err
		}
		a.eps(cur, n)
		return Frag{s, n}, nil
	}
	end, err := a.state()
	if err != nil {
		return Frag{}, err
	}
	a.eps(cur, end)
	for i := min; i < max; i++ {
		f, err := a.regex(sub)
		if err != nil {
			return Frag{}, err
		}
		a.eps(cur, f.Start)
		cur = f.End
		a.eps(cur, end)
	}
	return Frag{s, end}, nil
}

// AnyChars is a string of min…max characters (max -1: unbounded).
func (a *NFA) AnyChars(min, max int) (Frag, error) {
	s, err := a.state()
	if err != nil {
		return Frag{}, err
	}
	cur := s
	for i := 0; i < min; i++ {
		n, err := a.state()
		if err != nil {
			return Frag{}, err
		}
		a.edge(cur, 0, MaxRune, n)
		cur = n
	}
	if max < 0 {
		a.edge(cur, 0, MaxRune, cur)
		return Frag{s, cur}, nil
	}
	end, err := a.state()
	if err != nil {
		return Frag{}, err
	}
	a.eps(cur, end)
	for i := min; i < max; i++ {
		n, err := a.state()
		if err != nil {
			return Frag{}, err
		}
		a.edge(cur, 0, MaxRune, n)
		cur = n
		a.eps(cur, end)
	}
	return Frag{s, end}, nil
}

// WithLength is f restricted to strings of min…max characters (max -1:
// unbounded): the product of f with a character counter.
func (a *NFA) WithLength(f Frag, min, max int) (Frag, error) {
	cap := max
	if cap < 0 {
		cap = min // counts above min are all the same
	}
	type key struct{ s, n int }
	pq := &pairs[key]{a: a, ids: map[key]int{}}
	get := pq.get
	start, err := get(key{f.Start, 0})
	if err != nil {
		return Frag{}, err
	}
	end, err := a.state()
	if err != nil {
		return Frag{}, err
	}
	for len(pq.queue) > 0 {
		k := pq.queue[0]
		pq.queue = pq.queue[1:]
		id := pq.ids[k]
		st := a.states[k.s]
		if k.s == f.End && k.n >= min {
			a.eps(id, end)
		}
		for _, e := range st.eps {
			t, err := get(key{e, k.n})
			if err != nil {
				return Frag{}, err
			}
			a.eps(id, t)
		}
		n := k.n + 1
		if n > cap {
			if max >= 0 {
				continue
			}
			n = cap
		}
		for _, e := range st.edges {
			t, err := get(key{e.to, n})
			if err != nil {
				return Frag{}, err
			}
			a.edge(id, e.lo, e.hi, t)
		}
	}
	return Frag{start, end}, nil
}

// Emit adds the JSON encoding of f's strings (without the quotes) to the
// byte grammar from `from` and returns the state after it. Each character
// is written directly in UTF-8, or with JSON's short escapes, or \u00XX for
// the other control characters; a character class covering every
// character also admits any \uXXXX escape of a non-surrogate.
func (a *NFA) Emit(b *grammar.Builder, f Frag, from int32) int32 {
	ids := make([]int32, len(a.states))
	for i := range ids {
		ids[i] = -1
	}
	get := func(s int) int32 {
		if ids[s] < 0 {
			ids[s] = b.State()
		}
		return ids[s]
	}
	// The spellings of a range after their first byte depend only on the
	// range and the target, so each (range, target) is built once and its
	// first bytes added from every state with that edge.
	type rangeTo struct {
		lo, hi rune
		to     int32
	}
	firsts := map[rangeTo][]byteEdge{}
	seen := make([]bool, len(a.states))
	stack := []int{f.Start}
	seen[f.Start] = true
	b.Eps(from, get(f.Start))
	for len(stack) > 0 && b.Err() == nil {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range a.states[s].eps {
			b.Eps(get(s), get(e))
			if !seen[e] {
				seen[e] = true
				stack = append(stack, e)
			}
		}
		for _, e := range a.states[s].edges {
			k := rangeTo{e.lo, e.hi, get(e.to)}
			fs, ok := firsts[k]
			if !ok {
				fs = encodeRange(b, e.lo, e.hi, k.to)
				firsts[k] = fs
			}
			from := get(s)
			for _, fe := range fs {
				b.Bytes(from, fe.lo, fe.hi, fe.to)
			}
			if !seen[e.to] {
				seen[e.to] = true
				stack = append(stack, e.to)
			}
		}
	}
	return get(f.End)
}

// byteEdge is a move on lo…hi to state to.
type byteEdge struct {
	lo, hi byte
	to     int32
}

// encodeRange adds every JSON spelling this package allows of one
// character in lo…hi, ending at to, and returns the moves on their first
// byte (which the caller adds from the state before the character).
func encodeRange(b *grammar.Builder, lo, hi rune, to int32) []byteEdge {
	var first []byteEdge
	// Escapes share one state after the backslash.
	bs := int32(-1)
	backslash := func() int32 {
		if bs < 0 {
			bs = b.State()
			first = append(first, byteEdge{'\\', '\\', bs})
		}
		return bs
	}
	if lo == 0 && hi >= MaxRune {
		// \uXXXX of any non-surrogate code unit.
		u := b.Lit(backslash(), "u")
		hexAny := func(f, t int32) {
			b.Bytes(f, '0', '9', t)
			b.Bytes(f, 'a', 'f', t)
			b.Bytes(f, 'A', 'F', t)
		}
		h1, h1d := b.State(), b.State()
		b.Bytes(u, '0', '9', h1)
		b.Bytes(u, 'a', 'c', h1)
		b.Bytes(u, 'A', 'C', h1)
		b.Bytes(u, 'e', 'f', h1)
		b.Bytes(u, 'E', 'F', h1)
		b.Byte(u, 'd', h1d)
		b.Byte(u, 'D', h1d)
		h2 := b.State()
		hexAny(h1, h2)
		b.Bytes(h1d, '0', '7', h2)
		h3 := b.State()
		hexAny(h2, h3)
		hexAny(h3, to)
	}
	for _, e := range [...]struct {
		r rune
		c byte
	}{{'"', '"'}, {'\\', '\\'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}, {'\b', 'b'}, {'\f', 'f'}} {
		if lo <= e.r && e.r <= hi {
			b.Byte(backslash(), e.c, to)
		}
	}
	// The other control characters as \u00XX.
	var hiNibble [2]int32
	for c := max(lo, 0); c <= min(hi, 0x1f) && !(lo == 0 && hi >= MaxRune); c++ {
		if c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f' {
			continue
		}
		n := c >> 4
		if hiNibble[0] == 0 && hiNibble[1] == 0 {
			u := b.Lit(backslash(), "u00")
			hiNibble[0], hiNibble[1] = b.State(), b.State()
			b.Byte(u, '0', hiNibble[0])
			b.Byte(u, '1', hiNibble[1])
		}
		d := "0123456789abcdef"[c&15]
		b.Byte(hiNibble[n], d, to)
		if d >= 'a' {
			b.Byte(hiNibble[n], d-'a'+'A', to)
		}
	}
	// Direct UTF-8 for 0x20… Except '"' and '\\'.
	for _, r := range subtract(lo, hi, []rune{'"', '\\'}) {
		utf8Ranges(b, &first, max(r[0], 0x20), r[1], to)
	}
	return first
}

// subtract returns lo…hi minus the runes in out (sorted), as ranges.
func subtract(lo, hi rune, out []rune) [][2]rune {
	var res [][2]rune
	for _, c := range out {
		if c < lo || c > hi {
			continue
		}
		if lo < c {
			res = append(res, [2]rune{lo, c - 1})
		}
		lo = c + 1
	}
	if lo <= hi {
		res = append(res, [2]rune{lo, hi})
	}
	return res
}

// utf8Ranges adds the UTF-8 encodings of lo…hi (surrogates excluded) as
// byte-range sequences, split so each sequence is a product of byte
// ranges, and appends the moves on their first byte to first.
func utf8Ranges(b *grammar.Builder, first *[]byteEdge, lo, hi rune, to int32) {
	if lo > hi {
		return
	}
	if lo <= 0xdfff && hi >= 0xd800 {
		if lo < 0xd800 {
			utf8Ranges(b, first, lo, 0xd7ff, to)
		}
		if hi > 0xdfff {
			utf8Ranges(b, first, 0xe000, hi, to)
		}
		return
	}
	for _, lim := range []rune{0x7f, 0x7ff, 0xffff} {
		if lo <= lim && hi > lim {
			utf8Ranges(b, first, lo, lim, to)
			utf8Ranges(b, first, lim+1, hi, to)
			return
		}
	}
	if hi < 0x80 {
		*first = append(*first, byteEdge{byte(lo), byte(hi), to})
		return
	}
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Ranges(b, first, lo, lo|m, to)
				utf8Ranges(b, first, (lo|m)+1, hi, to)
				return
			}
			if hi&m != m {
				utf8Ranges(b, first, lo, (hi&^m)-1, to)
				utf8Ranges(b, first, hi&^m, hi, to)
				return
			}
		}
	}
	var lb, hb [4]byte
	utf8.EncodeRune(lb[:], lo)
	utf8.EncodeRune(hb[:], hi)
	cur := int32(-1) // the state before the character: the caller's
	for i := 0; i < n; i++ {
		next := to
		if i < n-1 {
			next = b.State()
		}
		if i == 0 {
			*first = append(*first, byteEdge{lb[i], hb[i], next})
		} else {
			b.Bytes(cur, lb[i], hb[i], next)
		}
		cur = next
	}
}

// Intersect is the product of fragments f and g of a: the strings both
// accept.
func (a *NFA) Intersect(f, g Frag) (Frag, error) {
	type key struct{ p, q int }
	pq := &pairs[key]{a: a, ids: map[key]int{}}
	get := pq.get
	start, err := get(key{f.Start, g.Start})
	if err != nil {
		return Frag{}, err
	}
	for len(pq.queue) > 0 {
		k := pq.queue[0]
		pq.queue = pq.queue[1:]
		id := pq.ids[k]
		sp, sq := a.states[k.p], a.states[k.q]
		for _, e := range sp.eps {
			t, err := get(key{e, k.q})
			if err != nil {
				return Frag{}, err
			}
			a.eps(id, t)
		}
		for _, e := range sq.eps {
			t, err := get(key{k.p, e})
			if err != nil {
				return Frag{}, err
			}
			a.eps(id, t)
		}
		for _, ep := range sp.edges {
			for _, eq := range sq.edges {
				lo, hi := max(ep.lo, eq.lo), min(ep.hi, eq.hi)
				if lo > hi {
					continue
				}
				t, err := get(key{ep.to, eq.to})
				if err != nil {
					return Frag{}, err
				}
				a.edge(id, lo, hi, t)
			}
		}
	}
	end, ok := pq.ids[key{f.End, g.End}]
	if !ok {
		end, err = a.state() // unreachable: the intersection is empty
		if err != nil {
			return Frag{}, err
		}
	}
	return Frag{start, end}, nil
}

// Matches reports whether f accepts s.
func (a *NFA) Matches(f Frag, s string) bool {
	cur := a.closure([]int{f.Start})
	for _, r := range s {
		var next []int
		for _, st := range cur {
			for _, e := range a.states[st].edges {
				if e.lo <= r && r <= e.hi {
					next = append(next, e.to)
				}
			}
		}
		cur = a.closure(next)
	}
	for _, st := range cur {
		if st == f.End {
			return true
		}
	}
	return false
}

func (a *NFA) closure(set []int) []int {
	seen := map[int]bool{}
	var out []int
	for len(set) > 0 {
		s := set[len(set)-1]
		set = set[:len(set)-1]
		if seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
		set = append(set, a.states[s].eps...)
	}
	return out
}

// pairs numbers the states of a product construction as they are reached
// (queue: reached, not yet expanded).
type pairs[K comparable] struct {
	a     *NFA
	ids   map[K]int
	queue []K
}

func (p *pairs[K]) get(k K) (int, error) {
	if id, ok := p.ids[k]; ok {
		return id, nil
	}
	id, err := p.a.state()
	if err != nil {
		return 0, err
	}
	p.ids[k] = id
	p.queue = append(p.queue, k)
	return id, nil
}

// Except is the strings that are none of names: a trie of the names where
// leaving the trie, or ending off a name, is any other string.
func (a *NFA) Except(names []string) (Frag, error) {
	type node struct {
		id   int
		kids map[rune]*node
		end  bool
	}
	var err error
	newNode := func() *node {
		id, e := a.state()
		if e != nil {
			err = e
		}
		return &node{id: id, kids: map[rune]*node{}}
	}
	root := newNode()
	for _, n := range names {
		cur := root
		for _, r := range n {
			k, ok := cur.kids[r]
			if !ok {
				k = newNode()
				cur.kids[r] = k
			}
			cur = k
		}
		cur.end = true
	}
	if err != nil {
		return Frag{}, err
	}
	free, err := a.state() // any rest of a string that is no longer a prefix of a name
	if err != nil {
		return Frag{}, err
	}
	a.edge(free, 0, MaxRune, free)
	end, err := a.state()
	if err != nil {
		return Frag{}, err
	}
	a.eps(free, end)
	var walk func(n *node)
	walk = func(n *node) {
		if !n.end {
			a.eps(n.id, end)
		}
		var rs []rune
		for r, k := range n.kids {
			rs = append(rs, r)
			a.edge(n.id, r, r, k.id)
			walk(k)
		}
		sortRunes(rs)
		for _, r := range subtract(0, MaxRune, rs) {
			a.edge(n.id, r[0], r[1], free)
		}
	}
	walk(root)
	return Frag{Start: root.id, End: end}, nil
}

func sortRunes(rs []rune) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j] < rs[j-1]; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

func (a *NFA) CompileRegex(re string) (Frag, error) {
	return a.CompilePattern("^(?:" + re + ")$")
}

// AppendRune appends r as the JSON string encoding writes it: the short
// escapes where JSON has them, \u00XX for other control characters, UTF-8
// otherwise.
func AppendRune(dst []byte, r rune) []byte {
	switch r {
	case '"':
		return append(dst, `\"`...)
	case '\\':
		return append(dst, `\\`...)
	case '\n':
		return append(dst, `\n`...)
	case '\r':
		return append(dst, `\r`...)
	case '\t':
		return append(dst, `\t`...)
	case '\b':
		return append(dst, `\b`...)
	case '\f':
		return append(dst, `\f`...)
	}
	if r < 0x20 {
		const hex = "0123456789abcdef"
		return append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&15])
	}
	return utf8.AppendRune(dst, r)
}
