package ops

import (
	"testing"
	"unicode/utf8"
)

func TestTextStream(t *testing.T) {
	// Feed "héllo → wörld" one byte at a time: no event text may be invalid,
	// and the concatenation must be the original.
	in := "héllo → wörld"
	ts := newTextStream(nil)
	var out string
	for i := range len(in) {
		d, hit := ts.push(in[i : i+1])
		if hit || !utf8.ValidString(d) {
			t.Fatalf("byte %d: delta %q hit %v", i, d, hit)
		}
		out += d
	}
	out += ts.flush("")
	if out != in {
		t.Fatalf("got %q", out)
	}
	// A stop string split across pushes is caught and never emitted.
	ts = newTextStream([]string{"STOP", "wö"})
	var emitted string
	for _, p := range []string{"ab", "ST", "O", "x", "w", "\xc3", "\xb6rld"} {
		d, hit := ts.push(p)
		emitted += d
		if hit {
			break
		}
	}
	if emitted != "abSTOx" {
		t.Fatalf("emitted %q, want %q", emitted, "abSTOx")
	}
	// A dangling partial sequence at the end becomes U+FFFD.
	ts = newTextStream(nil)
	d, _ := ts.push("a\xe4\xb8")
	if d != "a" || ts.flush("") != "\uFFFD" {
		t.Fatalf("partial tail: %q", d)
	}
}
