package jsonschema

import (
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/forgedaemon/forged/ane/grammar"
)

// A rune automaton describes a string's decoded characters (what pattern,
// format and the length bounds talk about); emit turns it into bytes of
// the JSON encoding.
type rnfa struct {
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

const maxRune = unicode.MaxRune

func (a *rnfa) state() (int, error) {
	if len(a.states) >= a.limit {
		return 0, errTooBig
	}
	a.states = append(a.states, rstate{})
	return len(a.states) - 1, nil
}

var errTooBig = fmt.Errorf("string automaton over its size limit")

func (a *rnfa) eps(f, t int) { a.states[f].eps = append(a.states[f].eps, t) }
func (a *rnfa) edge(f int, lo, hi rune, t int) {
	a.states[f].edges = append(a.states[f].edges, redge{lo, hi, t})
}

// frag is a piece of a rune automaton from start to end.
type frag struct{ start, end int }

// ecmaRewrite turns the ECMA-262 spellings RE2 lacks or reads differently
// into RE2 syntax: \uXXXX, and \s (ECMA's white space and line terminators,
// wider than RE2's ASCII \s). It refuses \S inside a class.
func ecmaRewrite(p string) (string, error) {
	const ws = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`
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
				b.WriteString("[^" + ws + "]")
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

// compilePattern builds the automaton of strings that contain a match of
// the ECMA-262 regular expression p (JSON Schema patterns are unanchored).
func (a *rnfa) compilePattern(p string) (frag, error) {
	q, err := ecmaRewrite(p)
	if err != nil {
		return frag{}, err
	}
	re, err := syntax.Parse(q, syntax.Perl)
	if err != nil {
		return frag{}, fmt.Errorf("unsupported regular expression: %v", err)
	}
	return a.anchored(re)
}

// anchored compiles re as a search: each top-level alternative may be
// anchored at the start (^) and/or the end ($); where it is not, any text
// may precede or follow.
func (a *rnfa) anchored(re *syntax.Regexp) (frag, error) {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op == syntax.OpAlternate {
		s, err := a.state()
		if err != nil {
			return frag{}, err
		}
		e, err := a.state()
		if err != nil {
			return frag{}, err
		}
		for _, sub := range re.Sub {
			f, err := a.anchored(sub)
			if err != nil {
				return frag{}, err
			}
			a.eps(s, f.start)
			a.eps(f.end, e)
		}
		return frag{s, e}, nil
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
		return frag{}, err
	}
	cur := s
	if !begin {
		a.edge(cur, 0, maxRune, cur)
	}
	for _, sub := range subs {
		f, err := a.regex(sub)
		if err != nil {
			return frag{}, err
		}
		a.eps(cur, f.start)
		cur = f.end
	}
	if !end {
		n, err := a.state()
		if err != nil {
			return frag{}, err
		}
		a.eps(cur, n)
		a.edge(n, 0, maxRune, n)
		cur = n
	}
	return frag{s, cur}, nil
}

const maxRepeat = 1000

func (a *rnfa) regex(re *syntax.Regexp) (frag, error) {
	s, err := a.state()
	if err != nil {
		return frag{}, err
	}
	switch re.Op {
	case syntax.OpEmptyMatch:
		return frag{s, s}, nil
	case syntax.OpLiteral:
		cur := s
		for _, r := range re.Rune {
			n, err := a.state()
			if err != nil {
				return frag{}, err
			}
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					a.edge(cur, f, f, n)
				}
			}
			a.edge(cur, r, r, n)
			cur = n
		}
		return frag{s, cur}, nil
	case syntax.OpCharClass:
		n, err := a.state()
		if err != nil {
			return frag{}, err
		}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			a.edge(s, re.Rune[i], re.Rune[i+1], n)
		}
		return frag{s, n}, nil
	case syntax.OpAnyChar:
		n, err := a.state()
		if err != nil {
			return frag{}, err
		}
		a.edge(s, 0, maxRune, n)
		return frag{s, n}, nil
	case syntax.OpAnyCharNotNL: // ECMA's . stops at every line terminator
		n, err := a.state()
		if err != nil {
			return frag{}, err
		}
		a.edge(s, 0, '\n'-1, n)
		a.edge(s, '\n'+1, '\r'-1, n)
		a.edge(s, '\r'+1, 0x2027, n)
		a.edge(s, 0x202a, maxRune, n)
		return frag{s, n}, nil
	case syntax.OpCapture:
		f, err := a.regex(re.Sub[0])
		if err != nil {
			return frag{}, err
		}
		a.eps(s, f.start)
		return frag{s, f.end}, nil
	case syntax.OpConcat:
		cur := s
		for _, sub := range re.Sub {
			f, err := a.regex(sub)
			if err != nil {
				return frag{}, err
			}
			a.eps(cur, f.start)
			cur = f.end
		}
		return frag{s, cur}, nil
	case syntax.OpAlternate:
		e, err := a.state()
		if err != nil {
			return frag{}, err
		}
		for _, sub := range re.Sub {
			f, err := a.regex(sub)
			if err != nil {
				return frag{}, err
			}
			a.eps(s, f.start)
			a.eps(f.end, e)
		}
		return frag{s, e}, nil
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
		if re.Min > maxRepeat || re.Max > maxRepeat {
			return frag{}, fmt.Errorf("repetition count over %d", maxRepeat)
		}
		return a.repeat(s, re.Sub[0], re.Min, re.Max)
	}
	return frag{}, fmt.Errorf("regular expression operator %v is not supported", re.Op)
}

// repeat builds sub{min,max} (max -1: unbounded) starting at s.
func (a *rnfa) repeat(s int, sub *syntax.Regexp, min, max int) (frag, error) {
	cur := s
	for i := 0; i < min; i++ {
		f, err := a.regex(sub)
		if err != nil {
			return frag{}, err
		}
		a.eps(cur, f.start)
		cur = f.end
	}
	if max < 0 {
		f, err := a.regex(sub)
		if err != nil {
			return frag{}, err
		}
		a.eps(cur, f.start)
		a.eps(f.end, cur)
		n, err := a.state()
		if err != nil {
			return frag{}, err
		}
		a.eps(cur, n)
		return frag{s, n}, nil
	}
	end, err := a.state()
	if err != nil {
		return frag{}, err
	}
	a.eps(cur, end)
	for i := min; i < max; i++ {
		f, err := a.regex(sub)
		if err != nil {
			return frag{}, err
		}
		a.eps(cur, f.start)
		cur = f.end
		a.eps(cur, end)
	}
	return frag{s, end}, nil
}

// anyChars is a string of min…max characters (max -1: unbounded).
func (a *rnfa) anyChars(min, max int) (frag, error) {
	s, err := a.state()
	if err != nil {
		return frag{}, err
	}
	cur := s
	for i := 0; i < min; i++ {
		n, err := a.state()
		if err != nil {
			return frag{}, err
		}
		a.edge(cur, 0, maxRune, n)
		cur = n
	}
	if max < 0 {
		a.edge(cur, 0, maxRune, cur)
		return frag{s, cur}, nil
	}
	end, err := a.state()
	if err != nil {
		return frag{}, err
	}
	a.eps(cur, end)
	for i := min; i < max; i++ {
		n, err := a.state()
		if err != nil {
			return frag{}, err
		}
		a.edge(cur, 0, maxRune, n)
		cur = n
		a.eps(cur, end)
	}
	return frag{s, end}, nil
}

// withLength is f restricted to strings of min…max characters (max -1:
// unbounded): the product of f with a character counter.
func (a *rnfa) withLength(f frag, min, max int) (frag, error) {
	cap := max
	if cap < 0 {
		cap = min // counts above min are all the same
	}
	type key struct{ s, n int }
	pq := &pairs[key]{a: a, ids: map[key]int{}}
	get := pq.get
	start, err := get(key{f.start, 0})
	if err != nil {
		return frag{}, err
	}
	end, err := a.state()
	if err != nil {
		return frag{}, err
	}
	for len(pq.queue) > 0 {
		k := pq.queue[0]
		pq.queue = pq.queue[1:]
		id := pq.ids[k]
		st := a.states[k.s]
		if k.s == f.end && k.n >= min {
			a.eps(id, end)
		}
		for _, e := range st.eps {
			t, err := get(key{e, k.n})
			if err != nil {
				return frag{}, err
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
				return frag{}, err
			}
			a.edge(id, e.lo, e.hi, t)
		}
	}
	return frag{start, end}, nil
}

// emit adds the JSON encoding of f's strings (without the quotes) to the
// byte grammar from `from` and returns the state after it. Each character
// is written directly in UTF-8, or with JSON's short escapes, or \u00XX for
// the other control characters; a character class covering every
// character also admits any \uXXXX escape of a non-surrogate.
func (a *rnfa) emit(b *grammar.Builder, f frag, from int32) int32 {
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
	seen := make([]bool, len(a.states))
	stack := []int{f.start}
	seen[f.start] = true
	b.Eps(from, get(f.start))
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
			encodeRange(b, get(s), e.lo, e.hi, get(e.to))
			if !seen[e.to] {
				seen[e.to] = true
				stack = append(stack, e.to)
			}
		}
	}
	return get(f.end)
}

// encodeRange adds, from `from` to `to`, every JSON spelling this package
// allows of one character in lo…hi.
func encodeRange(b *grammar.Builder, from int32, lo, hi rune, to int32) {
	// Escapes share one state after the backslash.
	bs := int32(-1)
	backslash := func() int32 {
		if bs < 0 {
			bs = b.State()
			b.Byte(from, '\\', bs)
		}
		return bs
	}
	if lo == 0 && hi >= maxRune {
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
	for c := max(lo, 0); c <= min(hi, 0x1f) && !(lo == 0 && hi >= maxRune); c++ {
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
	// Direct UTF-8 for 0x20… except '"' and '\\'.
	for _, r := range subtract(lo, hi, []rune{'"', '\\'}) {
		utf8Ranges(b, from, max(r[0], 0x20), r[1], to)
	}
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
// byte-range sequences, split so each sequence is a product of byte ranges.
func utf8Ranges(b *grammar.Builder, from int32, lo, hi rune, to int32) {
	if lo > hi {
		return
	}
	if lo <= 0xdfff && hi >= 0xd800 {
		if lo < 0xd800 {
			utf8Ranges(b, from, lo, 0xd7ff, to)
		}
		if hi > 0xdfff {
			utf8Ranges(b, from, 0xe000, hi, to)
		}
		return
	}
	for _, lim := range []rune{0x7f, 0x7ff, 0xffff} {
		if lo <= lim && hi > lim {
			utf8Ranges(b, from, lo, lim, to)
			utf8Ranges(b, from, lim+1, hi, to)
			return
		}
	}
	if hi < 0x80 {
		b.Bytes(from, byte(lo), byte(hi), to)
		return
	}
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Ranges(b, from, lo, lo|m, to)
				utf8Ranges(b, from, (lo|m)+1, hi, to)
				return
			}
			if hi&m != m {
				utf8Ranges(b, from, lo, (hi&^m)-1, to)
				utf8Ranges(b, from, hi&^m, hi, to)
				return
			}
		}
	}
	var lb, hb [4]byte
	utf8.EncodeRune(lb[:], lo)
	utf8.EncodeRune(hb[:], hi)
	cur := from
	for i := 0; i < n; i++ {
		next := to
		if i < n-1 {
			next = b.State()
		}
		b.Bytes(cur, lb[i], hb[i], next)
		cur = next
	}
}

// intersect is the product of fragments f and g of a: the strings both
// accept.
func (a *rnfa) intersect(f, g frag) (frag, error) {
	type key struct{ p, q int }
	pq := &pairs[key]{a: a, ids: map[key]int{}}
	get := pq.get
	start, err := get(key{f.start, g.start})
	if err != nil {
		return frag{}, err
	}
	for len(pq.queue) > 0 {
		k := pq.queue[0]
		pq.queue = pq.queue[1:]
		id := pq.ids[k]
		sp, sq := a.states[k.p], a.states[k.q]
		for _, e := range sp.eps {
			t, err := get(key{e, k.q})
			if err != nil {
				return frag{}, err
			}
			a.eps(id, t)
		}
		for _, e := range sq.eps {
			t, err := get(key{k.p, e})
			if err != nil {
				return frag{}, err
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
					return frag{}, err
				}
				a.edge(id, lo, hi, t)
			}
		}
	}
	end, ok := pq.ids[key{f.end, g.end}]
	if !ok {
		end, err = a.state() // unreachable: the intersection is empty
		if err != nil {
			return frag{}, err
		}
	}
	return frag{start, end}, nil
}

// matches reports whether f accepts s.
func (a *rnfa) matches(f frag, s string) bool {
	cur := a.closure([]int{f.start})
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
		if st == f.end {
			return true
		}
	}
	return false
}

func (a *rnfa) closure(set []int) []int {
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
	a     *rnfa
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
