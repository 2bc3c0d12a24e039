package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// The hand-written matcher is checked against dlclark/regexp2, an
// independent backtracking engine that supports the lookahead (used only
// here, as an oracle). Its \s is Unicode White_Space like Oniguruma's.
const (
	qwenPattern   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

var oraclePatterns = []string{qwenPattern, cl100kPattern, gpt2Pattern}

type match struct {
	runeStart int
	text      string
}

func scannerMatches(t testing.TB, pattern, s string) []match {
	sc, err := compilePattern(pattern)
	if err != nil {
		t.Fatal(err)
	}
	var out []match
	for from := 0; ; {
		start, end, ok := sc.next(s, from)
		if !ok {
			return out
		}
		out = append(out, match{utf8.RuneCountInString(s[:start]), s[start:end]})
		from = end
	}
}

var oracleRegexps sync.Map // pattern → *regexp2.Regexp

func oracleMatches(t testing.TB, pattern, s string) []match {
	v, ok := oracleRegexps.Load(pattern)
	if !ok {
		re := regexp2.MustCompile(pattern, regexp2.None)
		re.MatchTimeout = 10 * time.Second
		v, _ = oracleRegexps.LoadOrStore(pattern, re)
	}
	re := v.(*regexp2.Regexp)
	var out []match
	m, err := re.FindStringMatch(s)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		out = append(out, match{m.Index, m.String()})
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// alphabet covers every class the patterns distinguish: ASCII and other
// letters, digits of categories Nd/Nl/No, ASCII and Unicode whitespace
// (including U+0085, and U+FEFF which is not White_Space), line breaks,
// apostrophes and contraction letters in both cases, punctuation, marks
// and emoji.
var alphabet = []rune("  \t\n\r\v\f\u0085\u00a0\u2028\u3000\ufeff'''sStTrReEvVmMlLdD abcXYZéß中ж1234567890٣Ⅻ½.,!?-_\"()#\u0301\u200d🙂")

func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteRune(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

func TestScannerMatchesBacktrackingRegex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, pattern := range oraclePatterns {
		for i := range 1500 {
			s := randomText(r, 1+i%40)
			got, want := scannerMatches(t, pattern, s), oracleMatches(t, pattern, s)
			if !slices.Equal(got, want) {
				t.Fatalf("pattern %q on %q:\n got  %+v\n want %+v", pattern, s, got, want)
			}
		}
	}
}

// The cases the lookahead exists for, spelled out.
func TestQwenSplitLookahead(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"a   b", []string{"a", "  ", " b"}},                   // \s+(?!\S) leaves one space for the word
		{"a   ", []string{"a", "   "}},                         // at the end the run stays whole
		{"x \n\n  y", []string{"x", " \n\n", " ", " y"}},       // \s*[\r\n]+ ends at the last newline
		{"it's IT'S", []string{"it", "'s", " IT", "'S"}},       // case-insensitive contractions
		{"it'ſ", []string{"it", "'ſ"}},                         // Unicode folding: ſ folds to s (Oniguruma, Rust)
		{"12345", []string{"1", "2", "3", "4", "5"}},           // \p{N} one digit at a time
		{"!!!\n\nx", []string{"!!!\n\n", "x"}},                 // punctuation takes trailing newlines
		{"\ufeffBOM", []string{"\ufeffBOM"}},                   // U+FEFF is not whitespace: it prefixes the word
		{"a\u00a0\u00a0b", []string{"a", "\u00a0", "\u00a0b"}}, // NBSP is whitespace, then prefix of the word
	} {
		var got []string
		for _, m := range scannerMatches(t, qwenPattern, c.in) {
			got = append(got, m.text)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("split %q = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestUnsupportedSplitPattern(t *testing.T) {
	for _, p := range []string{
		`\p{Lu}+`,                      // not in the family
		`'s|(?=x)`,                     // lookahead elsewhere
		`(?i:'s|'t)|[a-z]+`,            // unknown class
		`\s+(?!\S)|\s+)`,               // unbalanced
		`(?i:'s|'(t))`,                 // group inside the literal group
		`[^\s\p{L}\p{N}]+[\r\n]*|(\s+`, // unbalanced
	} {
		if _, err := compilePattern(p); err == nil {
			t.Errorf("pattern %q compiled; want an error", p)
		} else if !strings.Contains(err.Error(), "pattern") {
			t.Errorf("pattern %q: error %q does not name the pattern", p, err)
		}
	}
}

// classDiffersFromGo reports whether Hugging Face's class of r (the
// tables the matcher uses) is not Go's (what regexp2 uses): Unicode 16
// letters and digits, for instance.
func classDiffersFromGo(r rune) bool {
	return isLetter(r) != unicode.IsLetter(r) || isNumber(r) != unicode.IsNumber(r) || isSpace(r) != unicode.Is(unicode.White_Space, r)
}

// FuzzSplitPattern compares the hand-written matcher with the backtracking
// oracle on arbitrary valid UTF-8.
func FuzzSplitPattern(f *testing.F) {
	for _, s := range []string{"a   b", "x \n\n  y", "it's", "12 345\t\r\n", "\ufeffBOM", "🙂 🙂", "  \u3000x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || len(s) > 200 || strings.ContainsRune(s, 'ſ') || strings.ContainsRune(s, '\u212a') {
			return // regexp2 folds case with ToLower, not Unicode simple folding
		}
		if strings.ContainsFunc(s, classDiffersFromGo) {
			return // regexp2 has Go's Unicode tables; the classes are checked against the library's vectors
		}
		for _, pattern := range oraclePatterns {
			got, want := scannerMatches(t, pattern, s), oracleMatches(t, pattern, s)
			if !slices.Equal(got, want) {
				t.Fatalf("pattern %q on %q:\n got  %+v\n want %+v", pattern, s, got, want)
			}
		}
	})
}
