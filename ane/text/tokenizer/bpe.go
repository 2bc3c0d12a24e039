package tokenizer

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// mergeRule is what a pair of adjacent symbols becomes: the merge's rank
// (its line in the merges list; lower merges first) and the new token's id.
type mergeRule struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpe is the tokenizer.json "BPE" model.
type bpe struct {
	vocab        map[string]int
	merges       map[uint64]mergeRule
	byteIDs      [256]int32 // id of each byte's byte-level character, -1 if absent
	fallbackIDs  [256]int32 // id of "<0xXX>" for byte fallback, -1 if absent
	unkID        int32      // -1: none
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix
	byteFast     bool   // byte-level words can start from byteIDs

	cache wordCache
}

// bpeScratch is reused across the words of one Encode call.
type bpeScratch struct {
	syms []symbol
	heap []candidate
	ids  []int
}

type symbol struct{ id, prev, next int32 }

type candidate struct{ rank, pos, id int32 }

func (c candidate) less(d candidate) bool {
	return c.rank < d.rank || (c.rank == d.rank && c.pos < d.pos)
}

// appendWord appends the ids of one pre-tokenized word.
func (m *bpe) appendWord(dst []int, p piece, sc *bpeScratch) []int {
	if ids, ok := m.cache.get(p); ok {
		return append(dst, ids...)
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[p.modelText()]; ok {
			return append(dst, id)
		}
	}
	sc.syms = sc.syms[:0]
	if p.byteLevel && m.byteFast {
		for i := 0; i < len(p.text); i++ {
			sc.syms = append(sc.syms, symbol{id: m.byteIDs[p.text[i]]})
		}
	} else {
		sc.syms = m.initialSymbols(sc.syms, p.modelText())
	}
	m.mergeAll(sc)
	start := len(dst)
	for i := 0; i >= 0 && i < len(sc.syms); i = int(sc.syms[i].next) {
		dst = append(dst, int(sc.syms[i].id)) // symbol 0 is never merged away
	}
	m.cache.put(p, dst[start:])
	return dst
}

// initialSymbols splits a word into characters and looks each up, with the
// subword prefix / word suffix, byte fallback and unknown-token rules of
// Hugging Face's BPE::merge_word. Characters with no id and no unknown token
// are dropped, as there.
func (m *bpe) initialSymbols(syms []symbol, w string) []symbol {
	pendingUnk := false
	flushUnk := func() {
		if pendingUnk {
			syms = append(syms, symbol{id: m.unkID})
			pendingUnk = false
		}
	}
	for i := 0; i < len(w); {
		_, size := utf8.DecodeRuneInString(w[i:])
		s := w[i : i+size]
		if i > 0 && m.prefix != "" {
			s = m.prefix + s
		}
		if i+size == len(w) && m.suffix != "" {
			s += m.suffix
		}
		i += size
		if id, ok := m.vocab[s]; ok {
			flushUnk()
			syms = append(syms, symbol{id: int32(id)})
			continue
		}
		if m.byteFallback && m.hasFallback(s) {
			flushUnk()
			for k := 0; k < len(s); k++ {
				syms = append(syms, symbol{id: m.fallbackIDs[s[k]]})
			}
			continue
		}
		if m.unkID >= 0 {
			if pendingUnk && !m.fuseUnk {
				flushUnk()
			}
			pendingUnk = true
		}
	}
	flushUnk()
	return syms
}

func (m *bpe) hasFallback(s string) bool {
	for k := 0; k < len(s); k++ {
		if m.fallbackIDs[s[k]] < 0 {
			return false
		}
	}
	return true
}

// mergeAll applies merges lowest rank first, leftmost first among equal
// ranks (Hugging Face's Word::merge_all), using a heap of candidate pairs;
// stale candidates are skipped when popped.
func (m *bpe) mergeAll(sc *bpeScratch) {
	syms := sc.syms
	n := len(syms)
	for i := range syms {
		syms[i].prev, syms[i].next = int32(i-1), int32(i+1)
	}
	if n > 0 {
		syms[n-1].next = -1
	}
	h := sc.heap[:0]
	for i := 0; i+1 < n; i++ {
		if r, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h = heapPush(h, candidate{r.rank, int32(i), r.id})
		}
	}
	for len(h) > 0 {
		var c candidate
		c, h = heapPop(h)
		s := &syms[c.pos]
		if s.id < 0 || s.next < 0 {
			continue
		}
		nx := s.next
		if r, ok := m.merges[pairKey(s.id, syms[nx].id)]; !ok || r.id != c.id {
			continue
		}
		s.id = c.id
		syms[nx].id = -1
		s.next = syms[nx].next
		if s.next >= 0 {
			syms[s.next].prev = c.pos
		}
		if s.prev >= 0 {
			if r, ok := m.merges[pairKey(syms[s.prev].id, s.id)]; ok {
				h = heapPush(h, candidate{r.rank, s.prev, r.id})
			}
		}
		if s.next >= 0 {
			if r, ok := m.merges[pairKey(s.id, syms[s.next].id)]; ok {
				h = heapPush(h, candidate{r.rank, c.pos, r.id})
			}
		}
	}
	sc.heap = h
}

func heapPush(h []candidate, c candidate) []candidate {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h[i].less(h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	return h
}

func heapPop(h []candidate) (candidate, []candidate) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, min := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(h[min]) {
			min = l
		}
		if r < len(h) && h[r].less(h[min]) {
			min = r
		}
		if min == i {
			break
		}
		h[i], h[min] = h[min], h[i]
		i = min
	}
	return top, h
}

// wordCache remembers the ids of recent words, keyed by text (one map for
// byte-level words, one for the others). It is bounded: when a map is full,
// an arbitrary eighth of it is dropped (Go map iteration order is random).
type wordCache struct {
	mu   sync.RWMutex
	maps [2]map[string][]int
}

const (
	cacheEntries = 1 << 16
	cacheMaxWord = 256 // longer words are not worth keeping
)

func cacheSlot(p piece) int {
	if p.byteLevel {
		return 1
	}
	return 0
}

func (c *wordCache) get(p piece) ([]int, bool) {
	c.mu.RLock()
	ids, ok := c.maps[cacheSlot(p)][p.text]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(p piece, ids []int) {
	if len(p.text) > cacheMaxWord {
		return
	}
	owned := append([]int(nil), ids...)
	key := strings.Clone(p.text) // don't pin the caller's whole input
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.maps[cacheSlot(p)]
	if m == nil {
		m = make(map[string][]int)
		c.maps[cacheSlot(p)] = m
	}
	if len(m) >= cacheEntries {
		drop := cacheEntries / 8
		for k := range m {
			delete(m, k)
			if drop--; drop == 0 {
				break
			}
		}
	}
	m[key] = owned
}
