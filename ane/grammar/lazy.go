package grammar

import (
	"maps"
	"slices"
)

// unbuilt marks a transition not determinized yet: a rule's deterministic
// states are built as a matcher reaches them (lazy subset construction),
// so compiling a schema costs its automata, not their determinization.
const unbuilt = -2

// nfa is a grammar's nondeterministic automaton, kept after Build. It is
// immutable; every matcher determinizes from it.
type nfa struct {
	states     []nstate
	rules      []ruleDef
	live       []bool // the state can reach its rule's end
	productive []bool // the rule's start is live: it accepts something
}

// liveness marks the states from which their rule's end is reachable
// through bytes and calls of productive rules (a backward search that
// makes a rule productive when its start turns live). A deterministic
// state is then built from live states only, so every state a matcher
// reaches has a completion and no dead state is ever built.
func (n *nfa) liveness() {
	ns := len(n.states)
	n.live = make([]bool, ns)
	n.productive = make([]bool, len(n.rules))
	// Reverse moves (bytes and epsilons) in CSR form, and the call sites
	// by return state and by rule.
	count := make([]int32, ns+1)
	for _, st := range n.states {
		for _, t := range st.eps {
			count[t+1]++
		}
		for _, e := range st.edges {
			count[e.to+1]++
		}
	}
	for i := 1; i <= ns; i++ {
		count[i] += count[i-1]
	}
	pred := make([]int32, count[ns])
	fill := slices.Clone(count[:ns])
	type site struct{ from, to, rule int32 }
	byTo := map[int32][]site{}
	byRule := make([][]site, len(n.rules))
	for s, st := range n.states {
		for _, t := range st.eps {
			pred[fill[t]] = int32(s)
			fill[t]++
		}
		for _, e := range st.edges {
			pred[fill[e.to]] = int32(s)
			fill[e.to]++
		}
		for _, c := range st.calls {
			x := site{int32(s), c.to, c.rule}
			byTo[c.to] = append(byTo[c.to], x)
			byRule[c.rule] = append(byRule[c.rule], x)
		}
	}
	startOf := map[int32][]int32{}
	for r, def := range n.rules {
		if def.pre != nil {
			n.productive[r] = true // shared rules accept something
			continue
		}
		startOf[def.start] = append(startOf[def.start], int32(r))
	}
	var stack []int32
	mark := func(s int32) {
		if !n.live[s] {
			n.live[s] = true
			stack = append(stack, s)
		}
	}
	for _, def := range n.rules {
		if def.pre == nil {
			mark(def.end)
		}
	}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, s := range pred[count[t]:count[t+1]] {
			mark(s)
		}
		for _, x := range byTo[t] {
			if n.productive[x.rule] {
				mark(x.from)
			}
		}
		for _, r := range startOf[t] {
			n.productive[r] = true
			for _, x := range byRule[r] {
				if n.live[x.to] {
					mark(x.from)
				}
			}
		}
	}
}

// det builds deterministic states of rule tables from the nfa, under
// the DFAStates limit. The builder has one (for each rule's start), each
// matcher its own over its own copy of the tables.
type det struct {
	n     *nfa
	limit int
	total int   // deterministic states built, all rules
	err   error // the first limit hit; no state is built after it
	mark  []uint32
	stamp uint32
	stack []int32
	out   []int32
	key   []byte
	next  []int32
}

func newDet(n *nfa, limit, total int) *det {
	return &det{n: n, limit: limit, total: total, mark: make([]uint32, len(n.states))}
}

// closure is the sorted epsilon closure of set, live states only, in
// scratch space that the next call reuses.
func (d *det) closure(set []int32) []int32 {
	d.stamp++
	out := d.out[:0]
	stack := append(d.stack[:0], set...)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d.mark[s] == d.stamp || !d.n.live[s] {
			continue
		}
		d.mark[s] = d.stamp
		out = append(out, s)
		stack = append(stack, d.n.states[s].eps...)
	}
	d.stack = stack
	slices.Sort(out)
	d.out = out
	return out
}

// state returns the deterministic state of ru for the closed set (a new
// one, with its transitions unbuilt, if the set is new), or -1 past the
// limit.
func (d *det) state(ru *rule, set []int32) int32 {
	key := d.setKey(set)
	if id, ok := ru.index[string(key)]; ok {
		return id
	}
	if d.err != nil {
		return -1
	}
	if d.total >= d.limit {
		d.err = &LimitError{"DFAStates", int64(d.limit)}
		return -1
	}
	d.total++
	id := int32(len(ru.sets))
	ru.index[string(key)] = id
	set = slices.Clone(set)
	ru.sets = append(ru.sets, set)
	acc, ws := false, false
	var callOrder []int32
	var callTo map[int32][]int32 // made at the first call: most states have none
	for _, s := range set {
		st := &d.n.states[s]
		acc = acc || s == ru.end
		ws = ws || st.ws
		for _, c := range st.calls {
			if !d.n.productive[c.rule] || !d.n.live[c.to] {
				continue
			}
			if callTo == nil {
				callTo = map[int32][]int32{}
			}
			if _, ok := callTo[c.rule]; !ok {
				callOrder = append(callOrder, c.rule)
			}
			callTo[c.rule] = append(callTo[c.rule], c.to)
		}
	}
	ru.accept = append(ru.accept, acc)
	ru.ws = append(ru.ws, ws)
	ru.simple = append(ru.simple, !acc && len(callOrder) == 0)
	ru.calls = append(ru.calls, nil)
	for range ru.nclass {
		ru.trans = append(ru.trans, unbuilt)
	}
	var calls []ncall
	for _, cr := range callOrder {
		if t := d.state(ru, d.closure(callTo[cr])); t >= 0 {
			calls = append(calls, ncall{cr, t})
		}
	}
	ru.calls[id] = calls
	return id
}

// setKey spells set as bytes, in scratch space that the next call reuses
// (a map lookup with string(key) does not copy it).
func (d *det) setKey(set []int32) []byte {
	key := d.key[:0]
	for _, s := range set {
		key = append(key, byte(s), byte(s>>8), byte(s>>16), byte(s>>24))
	}
	d.key = key
	return key
}

// step is ru's transition from s on byte class k, built if need be.
func (d *det) step(ru *rule, s, k int32) int32 {
	i := s*ru.nclass + k
	if t := ru.trans[i]; t != unbuilt {
		return t
	}
	return d.build(ru, s, k, i)
}

func (d *det) build(ru *rule, s, k, i int32) int32 {
	targets := d.next[:0]
	for _, q := range ru.sets[s] {
		for _, e := range d.n.states[q].edges {
			if ru.class[e.lo] <= uint8(k) && uint8(k) <= ru.class[e.hi] && d.n.live[e.to] {
				targets = append(targets, e.to)
			}
		}
	}
	d.next = targets
	t := int32(-1)
	if len(targets) > 0 {
		t = d.state(ru, d.closure(targets))
	}
	ru.trans[i] = t
	return t
}

// complete builds every state of ru reachable from its start, in
// breadth-first order, and reports whether it did within the limit.
func (d *det) complete(ru *rule) bool {
	for s := int32(0); s < int32(len(ru.accept)); s++ {
		for k := range ru.nclass {
			if d.step(ru, s, k); d.err != nil {
				return false
			}
		}
	}
	ru.complete = true
	return true
}

// completed is rule r built whole in a fresh table, numbered by a
// breadth-first search from its start (so the same automaton gets the
// same numbers, and fingerprint, in every grammar), and remap, the new
// number of each state of ru; ok is false if that would take more than
// budget states (then nothing changes).
func (d *det) completed(ru *rule, start int32, budget int) (fresh rule, remap []int32, ok bool) {
	if d.err != nil {
		return rule{}, nil, false
	}
	fresh = rule{name: ru.name, nclass: ru.nclass, class: ru.class, first: ru.first, end: ru.end, index: map[string]int32{}}
	total, limit := d.total, d.limit
	d.limit = min(limit, total+budget)
	ok = d.state(&fresh, d.closure([]int32{start})) == 0 && d.complete(&fresh)
	d.limit = limit
	if !ok {
		d.total, d.err = total, nil // a trial: the rule stays lazy
		return rule{}, nil, false
	}
	remap = make([]int32, len(ru.accept))
	for s, set := range ru.sets {
		remap[s] = fresh.index[string(d.setKey(set))]
	}
	d.total -= len(ru.accept) // replaced
	return fresh, remap, true
}

// clone is a copy of the rule tables that the copy's det can extend
// without touching the original (slices written in place are copied, the
// others clipped so an append reallocates).
func (ru *rule) clone() rule {
	c := *ru
	if ru.complete {
		return c // read only from here on
	}
	c.trans = slices.Clone(ru.trans)
	c.index = maps.Clone(ru.index)
	c.sets = slices.Clip(ru.sets)
	c.accept = slices.Clip(ru.accept)
	c.ws = slices.Clip(ru.ws)
	c.simple = slices.Clip(ru.simple)
	c.calls = slices.Clip(ru.calls)
	return c
}

// sharedRules holds the rules built whole under a Share key, for every
// later grammar (the same string kinds recur in most schemas), bounded by
// their transition tables' total size. A rule put there is complete, a
// leaf and fingerprinted: it is never written again.
var sharedRules boundedMap[string, *rule]

const maxSharedTrans = 1 << 23 // 32 MB of transitions
