package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var allForms = map[string]normForm{"NFC": nfcForm, "NFD": nfdForm, "NFKC": nfkcForm, "NFKD": nfkdForm}

// The fast path (quick characters copied, only the text around the others
// normalized) gives what normalizing the whole text at once gives.
func FuzzNormalizeSegments(f *testing.F) {
	for _, s := range []string{"", "abc", "e\u0301", "a\u1AC1\u0323 x", "\u0628\u08CA\u0650", "e" + strings.Repeat("\u0301", 31),
		"\uAC00\u11A8\u11A8", "\u1100\u1161\u11A8 \u1100", "ﬁ Ｆｕｌｌ ½", "\u0344\u0F73\u0F75", "\u09C7\u09BE\u09D7", "x\xffe\u0301\xc3",
		"\u0958\u2ADC\u212B", "a\u0323\u0302\u0301 \u1E69 s\u0307\u0323"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, x string) {
		for name, form := range allForms {
			got := form.normalize(x)
			var want string
			if utf8.ValidString(x) {
				var sc normScratch
				want = string(form.appendSlow(nil, x, &sc))
			} else {
				// Invalid bytes pass through and cut the text: normalize
				// the valid pieces between them one by one.
				var b strings.Builder
				start := 0
				for i := 0; i < len(x); {
					r, size := utf8.DecodeRuneInString(x[i:])
					if r == utf8.RuneError && size == 1 {
						var sc normScratch
						b.Write(form.appendSlow(nil, x[start:i], &sc))
						b.WriteByte(x[i])
						start = i + 1
					}
					i += size
				}
				var sc normScratch
				b.Write(form.appendSlow(nil, x[start:], &sc))
				want = b.String()
			}
			if got != want {
				t.Fatalf("%s(%+q) = %+q, normalized whole %+q", name, x, got, want)
			}
		}
	})
}

// The divergences from Go's x/text the tables exist for (issue #20), as
// Hugging Face tokenizers normalizes them (also among the vectors of
// TestHFTokenizersNormalize; spelled out here so a failure names them).
func TestNormalizeHFCorners(t *testing.T) {
	for _, c := range []struct{ form, in, want string }{
		{"NFC", "a\u1AC1\u0323", "a\u1AC1\u0323"},                                            // U+1AC1 is newer than the library's tables: a starter there, so nothing moves or composes
		{"NFC", "\u0628\u08CA\u0650", "\u0628\u08CA\u0650"},                                  // likewise U+08CA
		{"NFC", "e" + strings.Repeat("\u0301", 31), "\u00E9" + strings.Repeat("\u0301", 30)}, // no U+034F after 30 non-starters
		{"NFD", "a" + strings.Repeat("\u0301\u0323", 20), "a" + strings.Repeat("\u0323", 20) + strings.Repeat("\u0301", 20)},
		{"NFC", "\uAC00\u11A7", "\uAC00\u11A7"}, // U+11A7 is not a trailing consonant
		{"NFC", "\uAC00\u11A8", "\uAC01"},
		{"NFC", "\u212B", "\u00C5"},
		{"NFKC", "\uFB01", "fi"},
	} {
		if got := allForms[c.form].normalize(c.in); got != c.want {
			t.Errorf("%s(%+q) = %+q, want %+q", c.form, c.in, got, c.want)
		}
	}
}

// Text that needs no change is returned as is, without copying.
func TestNormalizeQuickTextIsNotCopied(t *testing.T) {
	s := strings.Repeat("plain ASCII, 中文, Ελληνικά, café, 한국어 ", 10)
	if got := nfcForm.normalize(s); got != s {
		t.Fatalf("NFC changed %+q", s)
	}
	if n := testing.AllocsPerRun(20, func() { nfcForm.normalize(s) }); n != 0 {
		t.Fatalf("%v allocations for text already in NFC", n)
	}
}

// A long run of non-starters (no stream-safe limit here) is sorted in
// O(n log n): 200,000 alternating marks must not take quadratic time.
func TestNormalizeLongMarkRun(t *testing.T) {
	s := "a" + strings.Repeat("\u0301\u0323", 100_000)
	want := "\u1EA1" + strings.Repeat("\u0323", 99_999) + strings.Repeat("\u0301", 100_000)
	if got := nfcForm.normalize(s); got != want {
		t.Fatalf("NFC of a long run: %d bytes, want %d", len(got), len(want))
	}
}
