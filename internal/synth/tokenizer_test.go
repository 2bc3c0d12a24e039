package synth

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/forgedaemon/forged/ane/text/chat"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/refdata"
)

var roundTripTexts = []string{
	"The daemon starts when the user logs in.",
	"Hello! How can I help you today?\n\nLet's think step by step.",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n",
	"  leading and trailing spaces   \n\n\n  ",
	"numbers 1234567 and 3.14159, e = 2.71828",
	"naïve café — Grüße, 日本語のテキスト, emoji 🙂👍",
	"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nadd\n</think>\n\n4<|im_end|>",
	"",
}

// The tokenizer.json is a real Hugging Face byte-level BPE: ane/text/tokenizer
// loads it, every text round-trips, merges actually compress, and the chat
// tokens are added tokens with Qwen's special flags.
func TestTokenizerLoadsAndRoundTrips(t *testing.T) {
	dir := tiny(t, 1)
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := vocabularyFor(512)
	if tok.VocabSize() != 512 || v.Size() != 512 {
		t.Fatalf("vocab size: tokenizer %d, synth %d, want 512", tok.VocabSize(), v.Size())
	}
	for _, text := range roundTripTexts {
		ids := tok.Encode(text)
		if got := tok.Decode(ids); got != text {
			t.Errorf("round trip of %q gave %q", text, got)
		}
		sd := tok.NewStreamDecoder()
		var streamed strings.Builder
		for _, id := range ids {
			streamed.WriteString(sd.Add(id))
		}
		streamed.WriteString(sd.Flush())
		if streamed.String() != text {
			t.Errorf("streamed decode of %q gave %q", text, streamed.String())
		}
	}
	// Text like the corpus compresses well below one token per byte.
	text := "The model reads a sequence of tokens and predicts the next one."
	if n := len(tok.Encode(text)); n*2 > len(text) {
		t.Errorf("%q: %d tokens for %d bytes; merges are not being used", text, n, len(text))
	}
	for _, a := range addedTokens {
		id, ok := tok.TokenID(a.Content)
		if !ok || id != v.ID(a.Content) {
			t.Errorf("%s: tokenizer id %d (%v), synth id %d", a.Content, id, ok, v.ID(a.Content))
		}
		if tok.IsSpecial(id) != a.Special {
			t.Errorf("%s: special = %v, want %v", a.Content, tok.IsSpecial(id), a.Special)
		}
		if ids := tok.Encode("x" + a.Content + "y"); len(ids) != 3 || ids[1] != id {
			t.Errorf("%s inside text encodes to %v, want it matched as one token", a.Content, ids)
		}
	}
}

// Independent checks of the file itself: byte tokens in GPT-2's mapping,
// merges built from existing tokens, ids dense and unique.
func TestTokenizerJSONStructure(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(tiny(t, 1), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Normalizer   map[string]any `json:"normalizer"`
		PreTokenizer struct {
			Pretokenizers []map[string]any `json:"pretokenizers"`
		} `json:"pre_tokenizer"`
		Decoder map[string]any `json:"decoder"`
		Model   struct {
			Type   string         `json:"type"`
			Vocab  map[string]int `json:"vocab"`
			Merges [][2]string    `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Model.Type != "BPE" || doc.Normalizer["type"] != "NFC" || doc.Decoder["type"] != "ByteLevel" {
		t.Errorf("model %q normalizer %v decoder %v", doc.Model.Type, doc.Normalizer, doc.Decoder)
	}
	qwen, err := os.ReadFile(refdata.Path(t, "qwen3", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var q struct {
		PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	}
	json.Unmarshal(qwen, &q)
	var ours struct {
		PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	}
	json.Unmarshal(raw, &ours)
	if compactJSON(t, q.PreTokenizer) != compactJSON(t, ours.PreTokenizer) {
		t.Errorf("pre_tokenizer differs from Qwen3's:\n%s\n%s", ours.PreTokenizer, q.PreTokenizer)
	}

	byID := map[int]string{}
	for tok, id := range doc.Model.Vocab {
		if prev, dup := byID[id]; dup {
			t.Fatalf("id %d used by %q and %q", id, prev, tok)
		}
		byID[id] = tok
	}
	for id := range len(doc.Model.Vocab) {
		if _, ok := byID[id]; !ok {
			t.Fatalf("vocab ids are not dense: %d missing", id)
		}
	}
	// GPT-2 byte-to-unicode: printable bytes map to themselves, space to Ġ
	// (U+0120), newline to Ċ (U+010A), and each byte token is one rune.
	if byID['A'] != "A" || byID[' '] != "Ġ" || byID['\n'] != "Ċ" || byID[0] != "Ā" || byID[0xad] != "Ń" {
		t.Errorf("byte tokens: A=%q space=%q newline=%q 0=%q 0xad=%q", byID['A'], byID[' '], byID['\n'], byID[0], byID[0xad])
	}
	for b := range 256 {
		if utf8.RuneCountInString(byID[b]) != 1 {
			t.Errorf("byte %d token %q is not a single rune", b, byID[b])
		}
	}
	for i, m := range doc.Model.Merges {
		_, okA := doc.Model.Vocab[m[0]]
		_, okB := doc.Model.Vocab[m[1]]
		_, okAB := doc.Model.Vocab[m[0]+m[1]]
		if !okA || !okB || !okAB {
			t.Fatalf("merge %d %q+%q uses or makes a token outside the vocab", i, m[0], m[1])
		}
	}
	if len(doc.AddedTokens) != len(addedTokens) {
		t.Fatalf("%d added tokens", len(doc.AddedTokens))
	}
	for i, a := range doc.AddedTokens {
		if a.ID != len(doc.Model.Vocab)+i || a.Content != addedTokens[i].Content || a.Special != addedTokens[i].Special {
			t.Errorf("added token %d: %+v", i, a)
		}
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestPreTokenizeMatchesQwenPattern(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Hello world's test", []string{"Hello", " world", "'s", " test"}},
		{"a  b", []string{"a", " ", " b"}},
		{"x\n\n  y", []string{"x", "\n\n", " ", " y"}},
		{"v 123!", []string{"v", " ", "1", "2", "3", "!"}},
		{"f(x) = y;\n", []string{"f", "(x", ")", " =", " y", ";\n"}},
		{"end   ", []string{"end", "   "}},
		{"I'LL go", []string{"I", "'LL", " go"}},
	} {
		got := preTokenize(tc.in)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("preTokenize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The chat template renders with ane/text/chat; the expected prompts are written
// out by hand from the template's rules.
func TestChatTemplateRenders(t *testing.T) {
	tpl, err := chat.LoadTemplate(tiny(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, request, want string
	}{
		{"system and user, thinking on",
			`{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"add_generation_prompt":true}`,
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"},
		{"thinking off",
			`{"messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":true,"enable_thinking":false}`,
			"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{"earlier assistant turn drops its reasoning",
			`{"messages":[{"role":"user","content":"A"},{"role":"assistant","content":"<think>\nhmm\n</think>\n\nB"},{"role":"user","content":"C"}]}`,
			"<|im_start|>user\nA<|im_end|>\n<|im_start|>assistant\nB<|im_end|>\n<|im_start|>user\nC<|im_end|>\n"},
		{"tools, a call and its response",
			`{"messages":[{"role":"developer","content":"S"},{"role":"user","content":"Weather?"},` +
				`{"role":"assistant","content":"","reasoning_content":"need tool","tool_calls":[{"type":"function","function":{"name":"get_weather","arguments":{"city":"Berlin","days":2}}}]},` +
				`{"role":"tool","content":"sunny"}],` +
				`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"add_generation_prompt":true}`,
			"<|im_start|>system\nS\n\n# Tools\n\nYou can call these functions. Their signatures are inside <tools></tools>:\n<tools>\n" +
				`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}` +
				"\n</tools>\n\nTo call a function, reply with:\n<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call><|im_end|>\n" +
				"<|im_start|>user\nWeather?<|im_end|>\n" +
				"<|im_start|>assistant\n<think>\nneed tool\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nBerlin\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call><|im_end|>\n" +
				"<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n" +
				"<|im_start|>assistant\n<think>\n"},
	} {
		req, err := chat.ParseRequest([]byte(tc.request))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := tpl.Render(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
