package grammar

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Limits bound a compilation so a pathological schema fails quickly with an
// error naming the limit instead of stalling the caller.
type Limits struct {
	NFAStates int           // states of the nondeterministic automata, all rules
	DFAStates int           // states after determinization, all rules
	Rules     int           // rules (called sub-grammars)
	Time      time.Duration // wall time of the whole compilation
	Stacks    int           // live parse stacks kept per step (ambiguity)
	MaxWS     int           // consecutive structural whitespace bytes
}

// DefaultLimits are generous for real schemas and small enough that a
// failing compilation costs well under a decode step's budget many times.
var DefaultLimits = Limits{NFAStates: 400_000, DFAStates: 60_000, Rules: 20_000, Time: 2 * time.Second, Stacks: 64, MaxWS: 64}

// LimitError says which limit a grammar exceeded: at compile time, or
// (DFAStates) in a matcher building the states it reaches.
type LimitError struct {
	Limit string // "NFAStates", "DFAStates", "Rules", "Time"
	Value int64
}

func (e *LimitError) Error() string {
	return "grammar: limit " + e.Limit + " (" + strconv.FormatInt(e.Value, 10) + ") exceeded"
}

// Builder assembles a grammar: rules, each a nondeterministic byte
// automaton whose edges are byte ranges, epsilon moves and calls of other
// rules (a recursive transition network). Build prepares each rule for
// determinization as a matcher reaches its states.
type Builder struct {
	lim      Limits
	deadline time.Time
	states   []nstate
	rules    []ruleDef
	err      error
}

type nstate struct {
	eps   []int32
	edges []edge
	calls []ncall
	ws    bool // a structural whitespace position (bounded by MaxWS)
}

type edge struct {
	lo, hi byte
	to     int32
}

type ncall struct{ rule, to int32 }

type ruleDef struct {
	start, end int32
	defined    bool
	name       string
	key        string // Share's key: publish the rule once built whole
	pre        *rule  // a shared rule, built whole by an earlier grammar
}

// NewBuilder starts a grammar under lim (zero fields take DefaultLimits).
func NewBuilder(lim Limits) *Builder {
	d := DefaultLimits
	if lim.NFAStates > 0 {
		d.NFAStates = lim.NFAStates
	}
	if lim.DFAStates > 0 {
		d.DFAStates = lim.DFAStates
	}
	if lim.Rules > 0 {
		d.Rules = lim.Rules
	}
	if lim.Time > 0 {
		d.Time = lim.Time
	}
	if lim.Stacks > 0 {
		d.Stacks = lim.Stacks
	}
	if lim.MaxWS > 0 {
		d.MaxWS = lim.MaxWS
	}
	return &Builder{lim: d, deadline: time.Now().Add(d.Time)}
}

// Err is the first limit the builder hit (nil if none); once set, the
// builder keeps working on a throwaway state so callers check it once.
func (b *Builder) Err() error {
	if b.err == nil && time.Now().After(b.deadline) {
		b.err = &LimitError{"Time", int64(b.lim.Time / time.Millisecond)}
	}
	return b.err
}

// State adds a state.
func (b *Builder) State() int32 {
	if len(b.states) >= b.lim.NFAStates {
		if b.err == nil {
			b.err = &LimitError{"NFAStates", int64(b.lim.NFAStates)}
		}
		return 0
	}
	b.states = append(b.states, nstate{})
	return int32(len(b.states) - 1)
}

// Eps adds an epsilon move.
func (b *Builder) Eps(from, to int32) { b.states[from].eps = append(b.states[from].eps, to) }

// Bytes adds a move on any byte in lo…hi.
func (b *Builder) Bytes(from int32, lo, hi byte, to int32) {
	b.states[from].edges = append(b.states[from].edges, edge{lo, hi, to})
}

// Byte adds a move on c.
func (b *Builder) Byte(from int32, c byte, to int32) { b.Bytes(from, c, c, to) }

// Lit adds the bytes of s from from and returns the state after them.
func (b *Builder) Lit(from int32, s string) int32 {
	for i := 0; i < len(s); i++ {
		n := b.State()
		b.Byte(from, s[i], n)
		from = n
	}
	return from
}

// WS adds bounded structural whitespace from from and returns the state
// after it (the same state: whitespace loops on it).
func (b *Builder) WS(from int32) int32 {
	n := b.State()
	b.Eps(from, n)
	b.states[n].ws = true
	for _, c := range []byte{' ', '\n', '\t', '\r'} {
		b.Byte(n, c, n)
	}
	return n
}

// Call adds a move that runs rule r to its end and continues at to.
func (b *Builder) Call(from, r, to int32) {
	b.states[from].calls = append(b.states[from].calls, ncall{r, to})
}

// CallNew calls rule r from from and returns the new state after it.
func (b *Builder) CallNew(from, r int32) int32 {
	to := b.State()
	b.Call(from, r, to)
	return to
}

// Rule declares a rule (its body is given later with Define, so rules can
// call themselves).
func (b *Builder) Rule(name string) int32 {
	if len(b.rules) >= b.lim.Rules && b.err == nil {
		b.err = &LimitError{"Rules", int64(b.lim.Rules)}
	}
	b.rules = append(b.rules, ruleDef{start: -1, end: -1, name: name})
	return int32(len(b.rules) - 1)
}

// Define gives rule r its automaton: from start to end.
func (b *Builder) Define(r, start, end int32) {
	def := &b.rules[r]
	def.start, def.end, def.defined = start, end, true
}

// Share marks rule r, which must call no rule, as the automaton that key
// names in every grammar: once a matcher has built it whole, later
// builders get it from SharedRule instead of building it again.
func (b *Builder) Share(r int32, key string) { b.rules[r].key = key }

// SharedRule declares a rule whose automaton an earlier grammar built
// whole under key (see Share), if there is one.
func (b *Builder) SharedRule(key string) (int32, bool) {
	pre := sharedRules.get(key)
	if pre == nil {
		return 0, false
	}
	r := b.Rule(pre.name)
	b.rules[r] = ruleDef{start: -1, end: -1, defined: true, name: pre.name, pre: pre}
	return r, true
}

// Grammar is a compiled grammar: each rule a byte automaton with call
// edges, determinized as far as its start (each matcher builds the states
// it reaches from there, in its own copy). It is immutable and safe for
// concurrent use.
type Grammar struct {
	rules []rule
	root  int32
	lim   Limits
	nfa   *nfa
	built int // deterministic states built by Build
}

type rule struct {
	name   string
	nclass int32
	class  [256]uint8
	trans  []int32 // trans[state*nclass+class]: next state, -1 none, unbuilt
	accept []bool
	ws     []bool
	calls  [][]ncall // ncall.to is a state of this rule
	first  [256]bool // bytes a run of this rule can start with
	simple []bool    // no calls and not accepting: a byte step stays in the rule
	// leaf: the rule calls no rule, so its local mask walks depend on its
	// automaton alone; fp identifies that automaton across grammars.
	leaf bool
	fp   [16]byte
	// Lazy construction: the nfa states of each deterministic state, the
	// index of those sets, the rule's nfa end, and whether every
	// reachable state is built (then leaf, fp and blocks can be computed).
	sets     [][]int32
	index    map[string]int32
	end      int32
	complete bool
}

// ErrEmpty is returned when the grammar accepts nothing.
var ErrEmpty = errors.New("grammar: the schema admits no value")

// Build prepares every rule and returns the grammar rooted at root: the
// nfa's live states, each rule's byte classes and its start state with
// the transitions out of it (the rule's first bytes); the other states are
// built by the matchers that reach them.
func (b *Builder) Build(root int32) (*Grammar, error) {
	if err := b.Err(); err != nil {
		return nil, err
	}
	for r := range b.rules {
		if !b.rules[r].defined {
			return nil, fmt.Errorf("grammar: rule %q has no body", b.rules[r].name)
		}
	}
	n := &nfa{states: b.states, rules: b.rules}
	n.liveness()
	if !n.productive[root] {
		return nil, ErrEmpty
	}
	g := &Grammar{rules: make([]rule, len(b.rules)), root: root, lim: b.lim, nfa: n}
	d := newDet(n, b.lim.DFAStates, 0)
	for r := range b.rules {
		b.prepare(int32(r), &g.rules[r], d)
	}
	if d.err != nil {
		return nil, d.err
	}
	if err := g.checkCalls(d); err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, d.err
	}
	g.built = d.total
	if err := b.Err(); err != nil {
		return nil, err
	}
	return g, nil
}

// prepare gives rule r its byte classes (bytes no edge of the rule tells
// apart share a class) and its start state (state 0; a rule that accepts
// nothing gets one with no moves: no live state calls it).
func (b *Builder) prepare(r int32, out *rule, d *det) {
	def := b.rules[r]
	if def.pre != nil {
		*out = *def.pre // complete: read only
		return
	}
	out.name = def.name
	out.end = def.end
	out.index = map[string]int32{}
	var cut [257]bool
	cut[0], cut[256] = true, true
	d.stamp++ // the closure's marks, as a seen set
	stack := append(d.stack[:0], def.start)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d.mark[s] == d.stamp {
			continue
		}
		d.mark[s] = d.stamp
		st := &b.states[s]
		for _, e := range st.edges {
			cut[e.lo], cut[int(e.hi)+1] = true, true
			stack = append(stack, e.to)
		}
		stack = append(stack, st.eps...)
		for _, c := range st.calls {
			stack = append(stack, c.to)
		}
	}
	d.stack = stack
	cls := -1
	for c := 0; c < 256; c++ {
		if cut[c] {
			cls++
		}
		out.class[c] = uint8(cls)
	}
	out.nclass = int32(cls + 1)
	if d.n.productive[r] {
		d.state(out, d.closure([]int32{def.start}))
		return
	}
	out.sets = [][]int32{nil}
	out.accept, out.ws, out.simple, out.calls = []bool{false}, []bool{false}, []bool{true}, [][]ncall{nil}
	for range out.nclass {
		out.trans = append(out.trans, -1)
	}
	out.complete = true
}

// checkCalls computes each rule's first bytes and refuses what the matcher
// cannot run: a rule that matches the empty string, and left recursion (a
// rule reaching itself before consuming a byte).
func (g *Grammar) checkCalls(d *det) error {
	for r := range g.rules {
		ru := &g.rules[r]
		if ru.accept[0] {
			return fmt.Errorf("grammar: rule %q matches the empty string", ru.name)
		}
		for c := 0; c < 256; c++ {
			ru.first[c] = d.step(ru, 0, int32(ru.class[c])) >= 0
		}
	}
	// Left recursion: a cycle among "calls from the start state".
	state := make([]uint8, len(g.rules)) // 0 new, 1 on path, 2 done
	var visit func(r int32) error
	visit = func(r int32) error {
		switch state[r] {
		case 1:
			return fmt.Errorf("grammar: rule %q is left-recursive (it reaches itself before any byte)", g.rules[r].name)
		case 2:
			return nil
		}
		state[r] = 1
		for _, c := range g.rules[r].calls[0] {
			if err := visit(c.rule); err != nil {
				return err
			}
		}
		state[r] = 2
		return nil
	}
	for r := range g.rules {
		if err := visit(int32(r)); err != nil {
			return err
		}
	}
	// First bytes through calls from the start, in dependency order.
	for changed := true; changed; {
		changed = false
		for r := range g.rules {
			ru := &g.rules[r]
			for _, c := range ru.calls[0] {
				for b := 0; b < 256; b++ {
					if g.rules[c.rule].first[b] && !ru.first[b] {
						ru.first[b] = true
						changed = true
					}
				}
			}
		}
	}
	return nil
}

// States is the number of deterministic states Build made (each rule's
// start and the states one byte after it; matchers build the rest).
func (g *Grammar) States() int { return g.built }

// Lit2 adds the bytes of s from from, ending at to.
func (b *Builder) Lit2(from int32, s string, to int32) {
	if s == "" {
		b.Eps(from, to)
		return
	}
	end := b.Lit(from, s[:len(s)-1])
	b.Byte(end, s[len(s)-1], to)
}

// blocks partitions the rule's states by what a walk of at most depth
// bytes can observe from them (Moore's refinement, depth rounds): the
// bytes taken and where they lead, the end and whitespace flags, and the
// calls with their return states. States in one block have the same
// local mask walk for every token of at most depth bytes, so they share
// one cache entry; each state maps to its block's first state.
//
// A round hashes each state's signature (its flags, its previous block,
// the previous blocks of its successors and return states) and compares
// it with the first state of each block of that hash, so no signature is
// materialized: a round is O(states × classes) without allocation.
func (ru *rule) blocks(depth int) []int32 {
	n := len(ru.accept)
	nc := int(ru.nclass)
	flags := func(s int) int32 {
		f := int32(0)
		if ru.accept[s] {
			f |= 1
		}
		if ru.ws[s] {
			f |= 2
		}
		return f
	}
	blockOf := func(prev []int32, t int32) int32 {
		if t < 0 {
			return -1
		}
		return prev[t]
	}
	hash := func(s int, prev []int32, round int) uint64 {
		h := uint64(14695981039346656037)
		mix := func(x int32) { h = (h ^ uint64(uint32(x))) * 1099511628211 }
		mix(flags(s))
		if round > 0 {
			mix(prev[s])
			for _, t := range ru.trans[s*nc : (s+1)*nc] {
				mix(blockOf(prev, t))
			}
		}
		for _, c := range ru.calls[s] {
			mix(c.rule)
			if round > 0 {
				mix(prev[c.to])
			}
		}
		return h
	}
	same := func(a, b int, prev []int32, round int) bool {
		if flags(a) != flags(b) || len(ru.calls[a]) != len(ru.calls[b]) {
			return false
		}
		for i, c := range ru.calls[a] {
			d := ru.calls[b][i]
			if c.rule != d.rule || round > 0 && prev[c.to] != prev[d.to] {
				return false
			}
		}
		if round == 0 {
			return true
		}
		if prev[a] != prev[b] {
			return false
		}
		ta, tb := ru.trans[a*nc:(a+1)*nc], ru.trans[b*nc:(b+1)*nc]
		for k := range ta {
			if blockOf(prev, ta[k]) != blockOf(prev, tb[k]) {
				return false
			}
		}
		return true
	}
	// Round 0: flags and called rules alone.
	block := make([]int32, n)
	var members [][]int32 // members[id]: the states of block id, ascending
	{
		byHash := map[uint64][]int32{}
		for s := 0; s < n; s++ {
			h := hash(s, nil, 0)
			id := int32(-1)
			for _, b := range byHash[h] {
				if same(int(members[b][0]), s, nil, 0) {
					id = b
					break
				}
			}
			if id < 0 {
				id = int32(len(members))
				members = append(members, nil)
				byHash[h] = append(byHash[h], id)
			}
			block[s] = id
			members[id] = append(members[id], int32(s))
		}
	}
	// Later rounds: with block ids kept where a block does not split, a
	// state's signature changes only if a successor's id changed in the
	// round before, so only those states' blocks are re-split.
	pred := ru.predecessors()
	prev := make([]int32, n)
	dirty := make([]bool, n)
	touched := make([]bool, n)
	var dirtyList, touchedList, moved []int32
	for s := range n {
		dirty[s] = true
		dirtyList = append(dirtyList, int32(s))
	}
	type group struct{ rep, id int32 }
	groups := map[uint64][]group{}
	for round := 1; round <= depth && len(dirtyList) > 0 && len(members) < n; round++ {
		copy(prev, block)
		touchedList = touchedList[:0]
		for _, s := range dirtyList {
			if b := prev[s]; !touched[b] {
				touched[b] = true
				touchedList = append(touchedList, b)
			}
		}
		moved = moved[:0]
		for _, b := range touchedList {
			touched[b] = false
			ms := members[b]
			clear(groups)
			keepB := false // the id b is taken by a group
			for _, s := range ms {
				if !dirty[s] { // unchanged signature: all such members stay together in b
					groups[hash(int(s), prev, 1)] = append(groups[hash(int(s), prev, 1)], group{s, b})
					keepB = true
					break
				}
			}
			for _, s := range ms {
				if !dirty[s] {
					continue
				}
				h := hash(int(s), prev, 1)
				id := int32(-1)
				for _, g := range groups[h] {
					if same(int(g.rep), int(s), prev, 1) {
						id = g.id
						break
					}
				}
				if id < 0 {
					if keepB {
						id = int32(len(members))
						members = append(members, nil)
					} else {
						id, keepB = b, true
					}
					groups[h] = append(groups[h], group{s, id})
				}
				if id != b {
					block[s] = id
					members[id] = append(members[id], s)
					moved = append(moved, s)
				}
			}
			kept := ms[:0]
			for _, s := range ms {
				if block[s] == b {
					kept = append(kept, s)
				}
			}
			members[b] = kept
		}
		for _, s := range dirtyList {
			dirty[s] = false
		}
		dirtyList = dirtyList[:0]
		for _, t := range moved {
			for _, s := range pred[t] {
				if !dirty[s] {
					dirty[s] = true
					dirtyList = append(dirtyList, s)
				}
			}
		}
	}
	out := make([]int32, n)
	for s := 0; s < n; s++ {
		out[s] = members[block[s]][0]
	}
	return out
}

// predecessors lists, for each state, the states with a transition or a
// call returning to it.
func (ru *rule) predecessors() [][]int32 {
	n := len(ru.accept)
	nc := int(ru.nclass)
	pred := make([][]int32, n)
	for s := 0; s < n; s++ {
		for _, t := range ru.trans[s*nc : (s+1)*nc] {
			if t >= 0 && (len(pred[t]) == 0 || pred[t][len(pred[t])-1] != int32(s)) {
				pred[t] = append(pred[t], int32(s))
			}
		}
		for _, c := range ru.calls[s] {
			pred[c.to] = append(pred[c.to], int32(s))
		}
	}
	return pred
}

// fingerprint sets leaf and, for a leaf, fp: a hash of everything a mask
// walk reads from the rule (byte classes, transitions, flags).
func (ru *rule) fingerprint() {
	if ru.leaf {
		return // done (a shared rule)
	}
	for _, cs := range ru.calls {
		if len(cs) > 0 {
			return
		}
	}
	ru.leaf = true
	buf := make([]byte, 0, len(ru.class)+4*len(ru.trans)+len(ru.accept))
	buf = append(buf, ru.class[:]...)
	for _, t := range ru.trans {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(t))
	}
	for s := range ru.accept {
		f := byte(0)
		if ru.accept[s] {
			f |= 1
		}
		if ru.ws[s] {
			f |= 2
		}
		buf = append(buf, f)
	}
	sum := sha256.Sum256(buf) // one call: hashing piecewise cost more than the bytes
	copy(ru.fp[:], sum[:])
}
