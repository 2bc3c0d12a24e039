package grammar

import (
	"errors"
	"fmt"
)

// A frame is one level of a parse stack: rule at state, returning into
// parent (whose state is already the return state). Frames are interned by
// the Matcher, so equal stacks are the same pointer.
type frame struct {
	rule, state int32
	parent      *frame
}

type frameKey struct {
	rule, state int32
	parent      *frame
}

// exitFrame marks the bottom of a walk that must not look below its base:
// popping into it means "the rest of this token depends on the caller".
var exitFrame = &frame{rule: -1}

// pos is the matcher's state between tokens: the live stacks and the
// length of the whitespace run that ends the output so far.
type pos struct {
	stacks []*frame
	run    int
}

type cacheKey struct {
	rule, state int32
	run         int32
}

// entry is the part of a mask that depends only on the top frame (rule,
// state) and the whitespace run: allow holds the tokens taken without
// leaving the rule; exits are the trie nodes at which the rule can end in
// the middle of a token, whose subtrees are checked against the real
// caller at mask time.
type entry struct {
	allow Mask
	exits []int32
}

// Matcher runs a Grammar over a Vocab: it computes the mask of tokens
// allowed next, accepts tokens and rolls them back. It is not safe for
// concurrent use; its mask cache survives Reset, so one Matcher can check
// many outputs of the same grammar.
type Matcher struct {
	g *Grammar
	v *Vocab
	// rules: the matcher's copy of the grammar's tables, which d extends
	// with the states the matcher reaches.
	rules  []rule
	d      *det
	lazy   []bool // lazy[rule]: too large to complete, cached per state
	frames map[frameKey]*frame
	hist   []pos
	cache  map[cacheKey]*entry
	// stackMasks: whole masks of single-stack positions whose rule can end
	// inside a token (the part the entry cache cannot hold), bounded.
	stackMasks map[stackKey]Mask
	// blocks[rule][state]: a representative of the states of the rule that
	// no token can tell apart (computed on the rule's first cache miss,
	// which completes the rule first if it is small enough).
	blocks [][]int32
	loops  map[cacheKey]*[4]uint64
}

type stackKey struct {
	f   *frame
	run int
}

const maxStackMasks = 256

// completeBudget bounds the states a rule's completion may build (at the
// rule's first mask-cache miss, for its blocks, which need every state);
// a larger rule stays lazy and its cache entries are per state.
const completeBudget = 30_000

// NewMatcher starts g at its beginning over v.
func NewMatcher(g *Grammar, v *Vocab) *Matcher {
	m := &Matcher{g: g, v: v, frames: map[frameKey]*frame{}, cache: map[cacheKey]*entry{}, stackMasks: map[stackKey]Mask{}, loops: map[cacheKey]*[4]uint64{}}
	m.rules = make([]rule, len(g.rules))
	for r := range g.rules {
		m.rules[r] = g.rules[r].clone()
	}
	m.d = newDet(g.nfa, g.lim.DFAStates, g.built)
	m.lazy = make([]bool, len(g.rules))
	m.Reset()
	return m
}

// Reset returns to the start of the grammar, keeping the mask cache.
func (m *Matcher) Reset() {
	m.hist = m.hist[:0]
	m.hist = append(m.hist, pos{stacks: []*frame{m.intern(m.g.root, 0, nil)}})
}

// Err is the limit the matcher hit building the grammar's states (a
// *LimitError; nil if none). From then on Mask allows nothing and Accept
// returns it: the output so far is valid, but it cannot go on.
func (m *Matcher) Err() error { return m.d.err }

// Vocab is the vocabulary the matcher masks.
func (m *Matcher) Vocab() *Vocab { return m.v }

func (m *Matcher) intern(rule, state int32, parent *frame) *frame {
	k := frameKey{rule, state, parent}
	if f, ok := m.frames[k]; ok {
		return f
	}
	f := &frame{rule, state, parent}
	m.frames[k] = f
	return f
}

func (m *Matcher) cur() pos { return m.hist[len(m.hist)-1] }

// Accepting reports whether the output so far is a complete value (the
// caller may end generation here).
func (m *Matcher) Accepting() bool {
	if m.d.err != nil {
		return false
	}
	for _, f := range m.cur().stacks {
		if m.completes(f) {
			return true
		}
	}
	return false
}

// completes reports whether every frame of the stack f can end here.
func (m *Matcher) completes(f *frame) bool {
	for ; f != nil; f = f.parent {
		if !m.rules[f.rule].accept[f.state] {
			return false
		}
	}
	return true
}

// Accepted is the number of tokens accepted since Reset.
func (m *Matcher) Accepted() int { return len(m.hist) - 1 }

// ErrRejected is returned by Accept for a token the grammar does not allow.
var ErrRejected = errors.New("grammar: token not allowed here")

// Accept advances over token id, or returns ErrRejected and stays put.
func (m *Matcher) Accept(id int) error {
	if m.d.err != nil {
		return m.d.err
	}
	b := m.v.Token(id)
	if len(b) == 0 {
		return fmt.Errorf("%w (token %d has no bytes the grammar can match)", ErrRejected, id)
	}
	p, ok := m.advance(m.cur(), b)
	if m.d.err != nil {
		return m.d.err
	}
	if !ok {
		return fmt.Errorf("%w (token %d %q)", ErrRejected, id, b)
	}
	m.hist = append(m.hist, p)
	return nil
}

// AcceptBytes advances over raw bytes (text the caller forces, such as a
// fixed prefix), or returns ErrRejected and stays put. It counts as one
// step for Rollback.
func (m *Matcher) AcceptBytes(b []byte) error {
	if m.d.err != nil {
		return m.d.err
	}
	p, ok := m.advance(m.cur(), b)
	if m.d.err != nil {
		return m.d.err
	}
	if !ok {
		return fmt.Errorf("%w (%q)", ErrRejected, b)
	}
	m.hist = append(m.hist, p)
	return nil
}

// Allows reports whether token id may come next (without accepting it).
func (m *Matcher) Allows(id int) bool {
	b := m.v.Token(id)
	if len(b) == 0 {
		return false
	}
	_, ok := m.advance(m.cur(), b)
	return ok && m.d.err == nil
}

// Rollback undoes the last n accepted steps.
func (m *Matcher) Rollback(n int) error {
	if n < 0 || n > len(m.hist)-1 {
		return fmt.Errorf("grammar: cannot roll back %d of %d accepted tokens", n, len(m.hist)-1)
	}
	m.hist = m.hist[:len(m.hist)-n]
	return nil
}

func (m *Matcher) advance(p pos, b []byte) (pos, bool) {
	set := p.stacks
	run := p.run
	for _, c := range b {
		next := make([]*frame, 0, len(set))
		for _, f := range set {
			next, _ = m.step(next, f, c, run)
		}
		if len(next) == 0 {
			return pos{}, false
		}
		if len(next) > m.g.lim.Stacks {
			next = next[:m.g.lim.Stacks] // fewer options, never an invalid one
		}
		set = next
		if isWS(c) {
			run++
		} else {
			run = 0
		}
	}
	return pos{stacks: set, run: run}, true
}

// step appends to out the frames f becomes on byte c (with run whitespace
// bytes before it); exited reports that the walk's base rule ended and the
// byte belongs to its caller (only under exitFrame).
func (m *Matcher) step(out []*frame, f *frame, c byte, run int) ([]*frame, bool) {
	if f == exitFrame {
		return out, true
	}
	ru := &m.rules[f.rule]
	exited := false
	if !(ru.ws[f.state] && isWS(c) && run >= m.g.lim.MaxWS) {
		k := int32(ru.class[c])
		t := ru.trans[f.state*ru.nclass+k]
		if t == unbuilt { // inline: this is the hot path
			t = m.d.build(ru, f.state, k, f.state*ru.nclass+k)
		}
		if t >= 0 {
			out = addFrame(out, m.intern(f.rule, t, f.parent))
		}
	}
	for _, cl := range ru.calls[f.state] {
		if m.rules[cl.rule].first[c] {
			var e bool
			out, e = m.step(out, m.intern(cl.rule, 0, m.intern(f.rule, cl.to, f.parent)), c, run)
			exited = exited || e
		}
	}
	if ru.accept[f.state] && f.parent != nil {
		var e bool
		out, e = m.step(out, f.parent, c, run)
		exited = exited || e
	}
	return out, exited
}

func addFrame(out []*frame, f *frame) []*frame {
	for _, g := range out {
		if g == f {
			return out
		}
	}
	return append(out, f)
}

// Mask sets dst (Vocab.Size bits, cleared first) to the tokens allowed
// next. End-of-sequence is not a token here: see Accepting.
func (m *Matcher) Mask(dst Mask) {
	m.mask(dst)
	if m.d.err != nil {
		dst.Clear()
	}
}

func (m *Matcher) mask(dst Mask) {
	p := m.cur()
	if len(p.stacks) == 1 {
		f := p.stacks[0]
		if sm, ok := m.stackMasks[stackKey{f, p.run}]; ok {
			copy(dst, sm)
			return
		}
		e := m.entry(f.rule, f.state, p.run)
		if f.parent == nil || len(e.exits) == 0 {
			copy(dst, e.allow)
			return
		}
		dst.Clear()
		dst.Or(e.allow)
		for _, n := range e.exits {
			m.walkFrom(dst, n, f.parent, p.run)
		}
		if len(m.stackMasks) < maxStackMasks && m.d.err == nil {
			m.stackMasks[stackKey{f, p.run}] = append(Mask(nil), dst...)
		}
		return
	}
	dst.Clear()
	for _, f := range p.stacks {
		e := m.entry(f.rule, f.state, p.run)
		dst.Or(e.allow)
		if f.parent == nil {
			continue
		}
		for _, n := range e.exits {
			m.walkFrom(dst, n, f.parent, p.run)
		}
	}
}

func (m *Matcher) entry(rule, state int32, run int) *entry {
	if m.blocks == nil {
		m.blocks = make([][]int32, len(m.rules))
	}
	ru := &m.rules[rule]
	if m.blocks[rule] == nil && !m.lazy[rule] {
		if ru.complete {
			ru.fingerprint()
			m.blocks[rule] = m.ruleBlocks(rule)
		} else if fresh, remap, ok := m.d.completed(ru, m.g.nfa.rules[rule].start, completeBudget); ok {
			m.renumber(rule, remap)
			*ru = fresh
			state = remap[state]
			ru.fingerprint()
			m.blocks[rule] = m.ruleBlocks(rule)
			if key := m.g.nfa.rules[rule].key; key != "" && ru.leaf {
				pub := *ru
				sharedRules.put(key, &pub, len(pub.trans), maxSharedTrans)
			}
		} else {
			m.lazy[rule] = true
		}
	}
	if !m.lazy[rule] {
		state = m.blocks[rule][state]
	}
	k := cacheKey{rule, state, int32(run)}
	if e, ok := m.cache[k]; ok {
		return e
	}
	var sk sharedKey
	if ru.leaf {
		sk = sharedKey{ru.fp, state, int32(run)}
		if e := m.v.shared.m.get(sk); e != nil {
			m.cache[k] = e
			return e
		}
	}
	e := m.localWalk(rule, state, run)
	if m.d.err != nil {
		return e // partial: the matcher is done
	}
	m.cache[k] = e
	if ru.leaf {
		m.v.shared.m.put(sk, e, 1, maxShared)
	}
	return e
}

// renumber moves the interned frames of rule to its states' new numbers
// (frames are shared pointers, so every stack that holds them follows).
// It runs before the rule's first cache entry, so no cache key holds an
// old number.
func (m *Matcher) renumber(rule int32, remap []int32) {
	var fs []*frame
	for k, f := range m.frames {
		if k.rule == rule {
			fs = append(fs, f)
			delete(m.frames, k)
		}
	}
	for _, f := range fs {
		f.state = remap[f.state]
		m.frames[frameKey{f.rule, f.state, f.parent}] = f
	}
}

// ruleBlocks computes the rule's blocks, sharing a leaf rule's through the
// vocabulary (the same string automata recur in every grammar).
func (m *Matcher) ruleBlocks(rule int32) []int32 {
	ru := &m.rules[rule]
	if !ru.leaf {
		return ru.blocks(m.v.maxLen)
	}
	if b := m.v.shared.blocks.get(ru.fp); b != nil {
		return b
	}
	b := ru.blocks(m.v.maxLen)
	m.v.shared.blocks.put(ru.fp, b, 1, maxShared)
	return b
}

// selfLoops is the set of bytes on which rule stays at state (cached).
func (m *Matcher) selfLoops(rule, state int32) *[4]uint64 {
	k := cacheKey{rule, state, 0}
	if l, ok := m.loops[k]; ok {
		return l
	}
	ru := &m.rules[rule]
	l := new([4]uint64)
	for c := 0; c < 256; c++ {
		if m.d.step(ru, state, int32(ru.class[c])) == state {
			l[c>>6] |= 1 << (c & 63)
		}
	}
	m.loops[k] = l
	return l
}

func subset(a [4]uint64, b *[4]uint64) bool {
	return a[0]&^b[0] == 0 && a[1]&^b[1] == 0 && a[2]&^b[2] == 0 && a[3]&^b[3] == 0
}

// walkFrom adds the tokens of node n's subtree (n included) that the stack
// f accepts from n's byte on, the token's earlier bytes being already
// consumed by a rule that ended.
func (m *Matcher) walkFrom(dst Mask, n int32, f *frame, run int) {
	v := m.v
	first, _ := m.step(nil, f, v.nodeByte[n], v.runBefore(n, run))
	if len(first) == 0 {
		return
	}
	m.walkSubtree(dst, n, first, run)
}

// walkSubtree walks node n's subtree given the stacks after n's byte,
// adding accepted tokens to dst.
func (m *Matcher) walkSubtree(dst Mask, n int32, first []*frame, run int) {
	v := m.v
	base := int(v.nodeDepth[n]) - 1
	// levels[k]: the stacks after the byte at depth base+1+k on the path.
	levels := make([][]*frame, 0, 16)
	levels = append(levels, first)
	m.addTokens(dst, n)
	end := v.nodeNext[n]
	for i := n + 1; i < end; {
		d := int(v.nodeDepth[i]) - base // 2 for n's children
		levels = levels[:d-1]
		prev := levels[d-2]
		c := v.nodeByte[i]
		runBefore := v.runBefore(i, run)
		var next []*frame
		for _, f := range prev {
			next, _ = m.step(next, f, c, runBefore)
		}
		if len(next) == 0 {
			i = v.nodeNext[i]
			continue
		}
		if len(next) > m.g.lim.Stacks {
			next = next[:m.g.lim.Stacks]
		}
		m.addTokens(dst, i)
		levels = append(levels, next)
		i++
	}
}

func (m *Matcher) addTokens(dst Mask, n int32) {
	v := m.v
	for _, id := range v.tokIDs[v.tokStart[n]:v.tokStart[n+1]] {
		dst.Set(int(id))
	}
}

// localWalk computes the entry of (rule, state, run): a walk of the whole
// trie from a stack holding only that frame over exitFrame.
func (m *Matcher) localWalk(rule, state int32, run int) *entry {
	v := m.v
	e := &entry{allow: NewMask(v.size)}
	base := m.intern(rule, state, exitFrame)
	ru := &m.rules[rule]
	// Fast path state per depth: simple[d] >= 0 means the stack is just the
	// base rule at that state; otherwise levels[d] holds the frames.
	simple := make([]int32, 0, 32)
	levels := make([][]*frame, 0, 32)
	simple = append(simple, state)
	levels = append(levels, []*frame{base})
	if !ru.simple[state] {
		simple[0] = -1
	}
	nodes := int32(len(v.nodeByte))
	maxWS := m.g.lim.MaxWS
	var loops []*[4]uint64 // by state, grown as the walk builds states
	for i := int32(1); i < nodes; {
		d := int(v.nodeDepth[i])
		simple = simple[:d]
		levels = levels[:d]
		c := v.nodeByte[i]
		if s := simple[d-1]; s >= 0 {
			// The base rule alone at a state with no calls and no end.
			t := int32(-1)
			if !(ru.ws[s] && isWS(c) && v.runBefore(i, run) >= maxWS) {
				k := int32(ru.class[c])
				if t = ru.trans[s*ru.nclass+k]; t == unbuilt {
					t = m.d.build(ru, s, k, s*ru.nclass+k)
				}
			}
			if t < 0 {
				i = v.nodeNext[i]
				continue
			}
			if ru.simple[t] && !ru.ws[t] && v.nodeNext[i] > i+1 {
				if int(t) >= len(loops) {
					loops = append(loops, make([]*[4]uint64, len(ru.accept)-len(loops))...)
				}
				if loops[t] == nil {
					loops[t] = m.selfLoops(rule, t)
				}
				if subset(v.below[i], loops[t]) {
					// Every byte below keeps the rule at t: the whole subtree.
					for _, id := range v.tokIDs[v.tokStart[i]:v.tokStart[v.nodeNext[i]]] {
						e.allow[id>>6] |= 1 << (uint(id) & 63)
					}
					i = v.nodeNext[i]
					continue
				}
			}
			for _, id := range v.tokIDs[v.tokStart[i]:v.tokStart[i+1]] {
				e.allow[id>>6] |= 1 << (uint(id) & 63)
			}
			if ru.simple[t] {
				simple = append(simple, t)
				levels = append(levels, nil)
			} else {
				simple = append(simple, -1)
				levels = append(levels, []*frame{m.intern(rule, t, exitFrame)})
			}
			i++
			continue
		}
		prev := levels[d-1]
		runBefore := v.runBefore(i, run)
		var next []*frame
		exited := false
		for _, f := range prev {
			var ex bool
			next, ex = m.step(next, f, c, runBefore)
			exited = exited || ex
		}
		if exited {
			e.exits = append(e.exits, i)
		}
		if len(next) == 0 {
			i = v.nodeNext[i]
			continue
		}
		if len(next) > m.g.lim.Stacks {
			next = next[:m.g.lim.Stacks]
		}
		m.addTokens(e.allow, i)
		if len(next) == 1 && next[0].rule == rule && next[0].parent == exitFrame && ru.simple[next[0].state] {
			simple = append(simple, next[0].state)
			levels = append(levels, nil)
		} else {
			simple = append(simple, -1)
			levels = append(levels, next)
		}
		i++
	}
	return e
}
