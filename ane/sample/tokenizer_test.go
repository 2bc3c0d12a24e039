package sample

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/refdata"
)

var qwen3 struct {
	once sync.Once
	tok  *tokenizer.Tokenizer
	err  error
}

// qwen3Tokenizer loads (once) the real Qwen3 tokenizer from the
// repository's reference data (testdata/qwen3).
func qwen3Tokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	path := refdata.Path(t, "qwen3", "tokenizer.json")
	qwen3.once.Do(func() { qwen3.tok, qwen3.err = tokenizer.Load(path) })
	if qwen3.err != nil {
		t.Fatal(qwen3.err)
	}
	return qwen3.tok
}

// Stop strings on real Qwen3 tokens: the text streamed through the
// tokenizer's StreamDecoder and the Stopper is exactly the text before the
// stop string, even where the stop string starts or ends inside a token
// or inside a multi-byte character.
func TestStopStringsOnQwen3Tokens(t *testing.T) {
	tok := qwen3Tokenizer(t)
	imEnd, ok := tok.TokenID("<|im_end|>")
	if !ok {
		t.Fatal("no <|im_end|> in the Qwen3 vocabulary")
	}
	text := "def main():\n    print(\"héllo wörld ✓ 日本語\")  # done\nreturn 42<|im_end|>tail"
	ids := tok.Encode(text)
	cases := []struct {
		stop string
		want string
	}{
		{"wörld ✓", "def main():\n    print(\"héllo "},
		{"():\n   ", "def main"},
		{"本", "def main():\n    print(\"héllo wörld ✓ 日"},
		{"one\nret", "def main():\n    print(\"héllo wörld ✓ 日本語\")  # d"},
		{"no such text", "def main():\n    print(\"héllo wörld ✓ 日本語\")  # done\nreturn 42"}, // ends at <|im_end|>
	}
	spanning := 0
	for _, c := range cases {
		s, err := NewStopper(Options{StopTokens: []int{imEnd}, StopStrings: []string{c.stop}})
		if err != nil {
			t.Fatal(err)
		}
		dec := tok.NewStreamDecoder()
		var shown strings.Builder
		var fin FinishReason
		for i, id := range ids {
			piece := ""
			if !s.IsStopToken(id) {
				piece = dec.Add(id)
			}
			var emit string
			emit, fin = s.Add(id, piece)
			shown.WriteString(emit)
			if fin != "" {
				if strings.Contains(text, c.stop) && i > 0 && !strings.Contains(tok.Decode(ids[i:i+1]), c.stop) {
					spanning++
				}
				break
			}
		}
		if shown.String() != c.want || fin != FinishStop {
			t.Errorf("stop %q: shown %q (%s), want %q", c.stop, shown.String(), fin, c.want)
		}
	}
	if spanning < 3 {
		t.Fatalf("only %d stop strings spanned several tokens: the test lost its point", spanning)
	}
}

func TestDRYBreakersFromQwen3Vocab(t *testing.T) {
	tok := qwen3Tokenizer(t)
	breakers := DRYBreakers(tok.VocabSize(), tok.TokenString)
	isBreaker := func(text string) bool {
		ids := tok.Encode(text)
		return len(ids) == 1 && slices.Contains(breakers, ids[0])
	}
	for _, text := range []string{"\n", ":", "\"", "*", ":\n", "**"} {
		if !isBreaker(text) {
			t.Errorf("%q (ids %v) is not a breaker", text, tok.Encode(text))
		}
	}
	for _, text := range []string{"hello", " world", "(", "42"} {
		if isBreaker(text) {
			t.Errorf("%q is a breaker", text)
		}
	}
	if n := len(breakers); n < 1000 || n > 20000 {
		t.Errorf("%d breakers in a %d-token vocabulary", n, tok.VocabSize())
	}
}
