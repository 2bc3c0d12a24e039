package synth

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzPreTokenize: the chunks are non-empty, cover the input exactly, and
// on valid UTF-8 never split a character.
func FuzzPreTokenize(f *testing.F) {
	for _, s := range roundTripTexts {
		f.Add(s)
	}
	f.Add("\r\n\t \u00a0x")
	f.Add("'S'd''ll\xff\xfe")
	f.Fuzz(func(t *testing.T, s string) {
		chunks := preTokenize(s)
		if strings.Join(chunks, "") != s {
			t.Fatalf("chunks %q do not rebuild %q", chunks, s)
		}
		for _, c := range chunks {
			if c == "" {
				t.Fatalf("empty chunk in %q", chunks)
			}
			if utf8.ValidString(s) && !utf8.ValidString(c) {
				t.Fatalf("chunk %q splits a character of %q", c, s)
			}
		}
	})
}

// Training is deterministic and respects the requested size; every merge
// joins two existing tokens.
func TestTrainBPE(t *testing.T) {
	a := trainBPE(corpus, 400)
	b := trainBPE(corpus, 400)
	if len(a.tokens) != 400 || strings.Join(a.tokens, "\x00") != strings.Join(b.tokens, "\x00") {
		t.Fatalf("training gave %d tokens, or differs between runs", len(a.tokens))
	}
	known := map[string]bool{}
	for _, tok := range a.tokens[:256] {
		known[tok] = true
	}
	for i, m := range a.merges {
		if !known[m[0]] || !known[m[1]] {
			t.Fatalf("merge %d (%q, %q) uses a token not yet learned", i, m[0], m[1])
		}
		known[m[0]+m[1]] = true
	}
	// The first merge is the most frequent pair in the corpus, counted
	// here independently over the pre-tokenized chunks.
	counts := map[[2]byte]int{}
	for _, c := range preTokenize(corpus) {
		for j := 0; j+1 < len(c); j++ {
			counts[[2]byte{c[j], c[j+1]}]++
		}
	}
	var best [2]byte
	for p, n := range counts {
		if n > counts[best] || (n == counts[best] && string(byteToRune[p[0]])+"\x00"+string(byteToRune[p[1]]) < string(byteToRune[best[0]])+"\x00"+string(byteToRune[best[1]])) {
			best = p
		}
	}
	if got := a.merges[0]; got[0] != string(byteToRune[best[0]]) || got[1] != string(byteToRune[best[1]]) {
		t.Errorf("first merge %q, most frequent pair is %q", got, [2]string{string(byteToRune[best[0]]), string(byteToRune[best[1]])})
	}
}
