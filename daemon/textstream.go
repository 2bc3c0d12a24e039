package daemon

import (
	"strings"
	"unicode/utf8"
)

// textStream turns decoded token text into event deltas: it never lets a
// partial UTF-8 sequence out, and it holds back text that could be the start
// of a stop string until it is clear whether the stop string follows.
type textStream struct {
	stops   []string
	partial string // trailing bytes of an incomplete UTF-8 sequence
	held    string // complete text that may begin a stop string
}

func newTextStream(stops []string) *textStream { return &textStream{stops: stops} }

// push adds decoded text and returns what may be sent now. hit reports that
// a stop string was found; the text before it is returned and the rest dropped.
func (t *textStream) push(s string) (out string, hit bool) {
	buf := t.partial + s
	cut := completePrefix(buf)
	t.partial = buf[cut:]
	cand := t.held + strings.ToValidUTF8(buf[:cut], "\uFFFD")
	if i := t.firstStop(cand); i >= 0 {
		t.held, t.partial = "", ""
		return cand[:i], true
	}
	h := t.stopPrefixSuffix(cand)
	t.held = cand[len(cand)-h:]
	return cand[:len(cand)-h], false
}

// flush returns everything still held back, after adding the decoder's tail.
func (t *textStream) flush(tail string) string {
	out, hit := t.push(tail)
	if hit {
		return out
	}
	out += t.held + strings.ToValidUTF8(t.partial, "\uFFFD")
	t.held, t.partial = "", ""
	return out
}

func (t *textStream) firstStop(s string) int {
	best := -1
	for _, stop := range t.stops {
		if i := strings.Index(s, stop); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}

// stopPrefixSuffix is the length of the longest suffix of s that is a
// proper prefix of some stop string.
func (t *textStream) stopPrefixSuffix(s string) int {
	longest := 0
	for _, stop := range t.stops {
		for n := min(len(stop)-1, len(s)); n > longest; n-- {
			if strings.HasSuffix(s, stop[:n]) {
				longest = n
				break
			}
		}
	}
	return longest
}

// completePrefix returns the length of the longest prefix of s that does not
// end inside a UTF-8 sequence that more bytes could still complete.
func completePrefix(s string) int {
	for back := 1; back <= utf8.UTFMax && back <= len(s); back++ {
		i := len(s) - back
		if !utf8.RuneStart(s[i]) {
			continue
		}
		if utf8.FullRuneInString(s[i:]) {
			return len(s)
		}
		return i
	}
	return len(s)
}
