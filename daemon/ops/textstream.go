package ops

import (
	"strings"
	"unicode/utf8"

	"github.com/forgedaemon/forged/ane/sample"
)

// textStream turns decoded token text into event deltas: it never lets a
// partial UTF-8 sequence out, and it holds back text that could be the start
// of a stop string until it is clear whether the stop string follows (the
// matching is generation's, sample.StopStrings).
type textStream struct {
	stops   *sample.StopStrings
	partial string // trailing bytes of an incomplete UTF-8 sequence
}

func newTextStream(stops []string) *textStream {
	return &textStream{stops: sample.NewStopStrings(stops)}
}

// push adds decoded text and returns what may be sent now. hit reports that
// a stop string was found; the text before it is returned and the rest dropped.
func (t *textStream) push(s string) (out string, hit bool) {
	buf := t.partial + s
	cut := completePrefix(buf)
	t.partial = buf[cut:]
	out, hit = t.stops.Add(strings.ToValidUTF8(buf[:cut], "\uFFFD"))
	if hit {
		t.partial = ""
	}
	return out, hit
}

// flush returns everything still held back, after adding the decoder's tail.
func (t *textStream) flush(tail string) string {
	out, hit := t.push(tail)
	if hit {
		return out
	}
	out += t.stops.Flush() + strings.ToValidUTF8(t.partial, "\uFFFD")
	t.partial = ""
	return out
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
