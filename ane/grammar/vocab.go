package grammar

import (
	"bytes"
	"math/bits"
	"sort"
	"sync"
)

// Vocab is a model vocabulary as byte strings, arranged as a token trie so
// a mask is computed by walking shared prefixes once instead of every
// token separately.
//
// The trie is stored in preorder: node i has byte nodeByte[i] at depth
// nodeDepth[i] (the root, node 0, has depth 0 and no byte), its subtree is
// nodes i+1 … nodeNext[i]-1, and the tokens whose bytes spell exactly the
// path to i are tokIDs[tokStart[i]:tokStart[i+1]].
type Vocab struct {
	size      int
	nodeByte  []byte
	nodeDepth []uint16
	nodeNext  []int32
	tokStart  []int32
	tokIDs    []int32
	// wsTrail[i]: how many whitespace bytes end the path to i; wsAll[i]: the
	// whole path is whitespace (the run then continues the one before it).
	wsTrail    []uint16
	wsAll      []bool
	nodeParent []int32
	tokens     [][]byte
	maxLen     int // the longest token, in bytes
	// below[i]: the bytes that occur strictly below node i (a 256-bit set),
	// so a walk can take a whole subtree at once where every such byte
	// keeps the automaton where it is.
	below [][4]uint64
	// shared caches the mask walks of leaf rules (string automata, which
	// recur in every grammar) for every matcher over this vocabulary.
	shared sharedCache
}

type sharedKey struct {
	fp         [16]byte
	state, run int32
}

// sharedCache is bounded: past maxShared entries (of each map) it stops
// adding.
type sharedCache struct {
	m boundedMap[sharedKey, *entry]
	// blocks: a leaf rule's mask-cache blocks (rule.blocks at the
	// vocabulary's longest token), by the rule's fingerprint.
	blocks boundedMap[[16]byte, []int32]
}

const maxShared = 1024

// boundedMap is a map safe for concurrent use that stops adding once the
// costs of its values reach a bound; a key is set once.
type boundedMap[K comparable, V any] struct {
	mu   sync.Mutex
	m    map[K]V
	cost int
}

func (c *boundedMap[K, V]) get(k K) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *boundedMap[K, V]) put(k K, v V, cost, bound int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[K]V{}
	}
	if _, ok := c.m[k]; ok || c.cost+cost > bound {
		return
	}
	c.m[k] = v
	c.cost += cost
}

// NewVocab builds the trie of tokens[id]. An empty entry is a token the
// grammar never allows (special tokens, gaps in the ids); the caller adds
// end-of-sequence tokens itself when the matcher is in an accepting state.
func NewVocab(tokens [][]byte) *Vocab {
	v := &Vocab{size: len(tokens), tokens: tokens}
	order := make([]int32, 0, len(tokens))
	for id, b := range tokens {
		if len(b) > 0 && len(b) < 1<<15 {
			order = append(order, int32(id))
		}
	}
	sort.Slice(order, func(i, j int) bool {
		c := bytes.Compare(tokens[order[i]], tokens[order[j]])
		return c < 0 || (c == 0 && order[i] < order[j])
	})
	v.nodeByte = append(v.nodeByte, 0)
	v.nodeDepth = append(v.nodeDepth, 0)
	v.nodeNext = append(v.nodeNext, 0)
	v.wsTrail = append(v.wsTrail, 0)
	v.wsAll = append(v.wsAll, true)
	v.nodeParent = append(v.nodeParent, 0)
	open := []int32{0} // open[d]: the node at depth d on the current path
	var prev []byte
	nodeOfTok := make([]int32, len(order))
	for k, id := range order {
		b := tokens[id]
		lcp := 0
		for lcp < len(b) && lcp < len(prev) && b[lcp] == prev[lcp] {
			lcp++
		}
		for len(open) > lcp+1 { // close the nodes below the shared prefix
			v.nodeNext[open[len(open)-1]] = int32(len(v.nodeByte))
			open = open[:len(open)-1]
		}
		for d := lcp; d < len(b); d++ {
			parent := open[len(open)-1]
			n := int32(len(v.nodeByte))
			v.nodeByte = append(v.nodeByte, b[d])
			v.nodeDepth = append(v.nodeDepth, uint16(d+1))
			v.nodeNext = append(v.nodeNext, 0)
			v.nodeParent = append(v.nodeParent, parent)
			if isWS(b[d]) {
				v.wsTrail = append(v.wsTrail, v.wsTrail[parent]+1)
				v.wsAll = append(v.wsAll, v.wsAll[parent])
			} else {
				v.wsTrail = append(v.wsTrail, 0)
				v.wsAll = append(v.wsAll, false)
			}
			open = append(open, n)
		}
		nodeOfTok[k] = open[len(b)]
		v.maxLen = max(v.maxLen, len(b))
		prev = b
	}
	for _, n := range open {
		v.nodeNext[n] = int32(len(v.nodeByte))
	}
	v.tokStart = make([]int32, len(v.nodeByte)+1)
	for _, n := range nodeOfTok {
		v.tokStart[n+1]++
	}
	for i := 1; i < len(v.tokStart); i++ {
		v.tokStart[i] += v.tokStart[i-1]
	}
	v.tokIDs = order // sorted by bytes, hence grouped by node in preorder
	v.below = make([][4]uint64, len(v.nodeByte))
	for i := len(v.nodeByte) - 1; i > 0; i-- {
		p, b := v.nodeParent[i], v.nodeByte[i]
		for w := range 4 {
			v.below[p][w] |= v.below[i][w]
		}
		v.below[p][b>>6] |= 1 << (b & 63)
	}
	return v
}

// Size is the number of token ids (the length of a mask in bits).
func (v *Vocab) Size() int { return v.size }

// Nodes is the number of trie nodes (a measure of the walk's cost).
func (v *Vocab) Nodes() int { return len(v.nodeByte) }

// Token returns the bytes of id (nil for a token the grammar never allows).
func (v *Vocab) Token(id int) []byte {
	if id < 0 || id >= len(v.tokens) {
		return nil
	}
	return v.tokens[id]
}

// runBefore is the whitespace run just before node n's own byte, in a
// walk that started after run whitespace bytes.
func (v *Vocab) runBefore(n int32, run int) int {
	p := v.nodeParent[n]
	if v.wsAll[p] {
		return run + int(v.nodeDepth[p])
	}
	return int(v.wsTrail[p])
}

func isWS(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// Mask is a set of token ids, one bit each.
type Mask []uint64

// NewMask returns an empty mask for n tokens.
func NewMask(n int) Mask { return make(Mask, (n+63)/64) }

// Has reports whether id is in the mask.
func (m Mask) Has(id int) bool { return id >= 0 && id/64 < len(m) && m[id/64]&(1<<(uint(id)%64)) != 0 }

// Set adds id.
func (m Mask) Set(id int) { m[id/64] |= 1 << (uint(id) % 64) }

// Clear removes every id.
func (m Mask) Clear() { clear(m) }

// Or adds every id of o.
func (m Mask) Or(o Mask) {
	for i, w := range o {
		m[i] |= w
	}
}

// Count is the number of ids in the mask.
func (m Mask) Count() int {
	n := 0
	for _, w := range m {
		n += bits.OnesCount64(w)
	}
	return n
}
