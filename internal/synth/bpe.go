package synth

import (
	"container/heap"
	_ "embed"
	"unicode"
	"unicode/utf8"
)

// corpus is the small English/code/chat text the synthetic tokenizer's
// merges are learned from. It was written for this project.
//
//go:embed corpus.txt
var corpus string

// byteToRune is GPT-2's byte-to-unicode table used by ByteLevel
// pre-tokenizers: printable Latin-1 bytes stand for themselves, the rest
// (controls, space, 0x7f-0xa0, 0xad) are shifted to U+0100 onwards in order.
var byteToRune = func() [256]rune {
	var t [256]rune
	next := rune(256)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			t[b] = rune(b)
		} else {
			t[b] = next
			next++
		}
	}
	return t
}()

// byteLevel maps raw bytes to their ByteLevel string.
func byteLevel(s string) string {
	out := make([]rune, 0, len(s))
	for i := 0; i < len(s); i++ {
		out = append(out, byteToRune[s[i]])
	}
	return string(out)
}

// preTokenize splits text the way the Qwen Split pattern does:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Go's regexp has no lookahead, so the alternatives are matched by hand. It
// is used only to learn merges; encoding is the tokenizer package's job.
func preTokenize(text string) []string {
	var out []string
	for len(text) > 0 {
		n := matchChunk(text)
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

func isNL(r rune) bool { return r == '\r' || r == '\n' }

func isLN(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

// matchChunk returns the byte length of the pattern's match at the start of s.
func matchChunk(s string) int {
	r0, w0 := utf8.DecodeRuneInString(s)
	// Contractions.
	if r0 == '\'' {
		for _, c := range []string{"ll", "re", "ve", "s", "t", "m", "d"} {
			if len(s) > len(c) && equalFoldASCII(s[1:1+len(c)], c) {
				return 1 + len(c)
			}
		}
	}
	letters := func(i int) int { // end of the run of letters starting at i
		for i < len(s) {
			r, w := utf8.DecodeRuneInString(s[i:])
			if !unicode.IsLetter(r) {
				break
			}
			i += w
		}
		return i
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if unicode.IsLetter(r0) {
		return letters(w0)
	}
	if !isNL(r0) && !isLN(r0) && w0 < len(s) {
		if r1, _ := utf8.DecodeRuneInString(s[w0:]); unicode.IsLetter(r1) {
			return letters(w0)
		}
	}
	// \p{N}
	if unicode.IsNumber(r0) {
		return w0
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	i := 0
	if r0 == ' ' {
		i = 1
	}
	j := i
	for j < len(s) {
		r, w := utf8.DecodeRuneInString(s[j:])
		if unicode.IsSpace(r) || isLN(r) {
			break
		}
		j += w
	}
	if j > i {
		for j < len(s) && isNL(rune(s[j])) {
			j++
		}
		return j
	}
	// Whitespace run: \s*[\r\n]+ takes it up to its last newline;
	// \s+(?!\S) leaves the last space for the following word; else \s+.
	end, lastNL := 0, -1
	for end < len(s) {
		r, w := utf8.DecodeRuneInString(s[end:])
		if !unicode.IsSpace(r) {
			break
		}
		if isNL(r) {
			lastNL = end + w
		}
		end += w
	}
	if lastNL > 0 {
		return lastNL
	}
	if end < len(s) && end > w0 {
		_, lw := utf8.DecodeLastRuneInString(s[:end])
		return end - lw
	}
	return end
}

func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != b[i] {
			return false
		}
	}
	return true
}

// bpeModel is a learned byte-level BPE: tokens in id order (the first 256
// are the single bytes in byte order) and merges in rank order.
type bpeModel struct {
	tokens []string
	merges [][2]string
}

type pair struct{ a, b int }

type pairCount struct {
	p     pair
	count int
}

// pairHeap orders candidate merges by count, then by the token strings, so
// training is deterministic. Entries go stale as counts change; pop
// discards those whose count no longer matches.
type pairHeap struct {
	items  []pairCount
	tokens *[]string
}

func (h pairHeap) Len() int { return len(h.items) }
func (h pairHeap) Less(i, j int) bool {
	x, y := h.items[i], h.items[j]
	if x.count != y.count {
		return x.count > y.count
	}
	t := *h.tokens
	if t[x.p.a] != t[y.p.a] {
		return t[x.p.a] < t[y.p.a]
	}
	return t[x.p.b] < t[y.p.b]
}
func (h pairHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *pairHeap) Push(x any)   { h.items = append(h.items, x.(pairCount)) }
func (h *pairHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// trainBPE learns merges from text until the vocabulary holds size tokens
// or no pair is left. Like Hugging Face's trainer, a merge whose result
// already exists as a token reuses that token.
func trainBPE(text string, size int) bpeModel {
	m := bpeModel{tokens: make([]string, 256)}
	ids := map[string]int{}
	for b := 0; b < 256; b++ {
		m.tokens[b] = string(byteToRune[b])
		ids[m.tokens[b]] = b
	}

	// Unique chunks with their frequencies, in first-seen order.
	freq := map[string]int{}
	var order []string
	for _, c := range preTokenize(text) {
		if freq[c] == 0 {
			order = append(order, c)
		}
		freq[c]++
	}
	words := make([][]int, len(order))
	counts := make([]int, len(order))
	for i, c := range order {
		for j := 0; j < len(c); j++ {
			words[i] = append(words[i], int(c[j]))
		}
		counts[i] = freq[c]
	}

	pairs := map[pair]int{}
	where := map[pair]map[int]bool{}
	add := func(p pair, w, n int) {
		pairs[p] += n
		if where[p] == nil {
			where[p] = map[int]bool{}
		}
		where[p][w] = true
	}
	for w, word := range words {
		for j := 0; j+1 < len(word); j++ {
			add(pair{word[j], word[j+1]}, w, counts[w])
		}
	}
	h := &pairHeap{tokens: &m.tokens}
	for p, c := range pairs {
		h.items = append(h.items, pairCount{p, c})
	}
	heap.Init(h)

	for len(m.tokens) < size && h.Len() > 0 {
		top := heap.Pop(h).(pairCount)
		if pairs[top.p] != top.count || top.count == 0 {
			continue // stale entry
		}
		merged := m.tokens[top.p.a] + m.tokens[top.p.b]
		m.merges = append(m.merges, [2]string{m.tokens[top.p.a], m.tokens[top.p.b]})
		id, ok := ids[merged]
		if !ok {
			id = len(m.tokens)
			m.tokens = append(m.tokens, merged)
			ids[merged] = id
		}
		changed := map[pair]bool{}
		// Visit the affected words in index order for determinism.
		affected := sortedKeys(where[top.p])
		delete(where, top.p)
		for _, w := range affected {
			word, n := words[w], counts[w]
			for j := 0; j+1 < len(word); j++ {
				pairs[pair{word[j], word[j+1]}] -= n
				changed[pair{word[j], word[j+1]}] = true
			}
			out := word[:0:0]
			for j := 0; j < len(word); j++ {
				if j+1 < len(word) && word[j] == top.p.a && word[j+1] == top.p.b {
					out = append(out, id)
					j++
				} else {
					out = append(out, word[j])
				}
			}
			words[w] = out
			for j := 0; j+1 < len(out); j++ {
				add(pair{out[j], out[j+1]}, w, n)
				changed[pair{out[j], out[j+1]}] = true
			}
		}
		for _, p := range sortedPairs(changed) {
			if c := pairs[p]; c > 0 {
				heap.Push(h, pairCount{p, c})
			} else {
				delete(pairs, p)
			}
		}
	}
	return m
}
