package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func addedTok(id int, content string, flags ...string) map[string]any {
	m := map[string]any{"id": id, "content": content, "single_word": false, "lstrip": false,
		"rstrip": false, "normalized": false, "special": false}
	for _, f := range flags {
		m[f] = true
	}
	return m
}

func flagTokenizer(t testing.TB) *Tokenizer {
	return mustParse(t, tokenizerJSON(t,
		map[string]any{"type": "BPE", "vocab": byteVocab(), "merges": []any{}},
		map[string]any{
			"normalizer":    map[string]any{"type": "Lowercase"},
			"pre_tokenizer": byteLevelOnly(),
			"decoder":       byteLevelOnly(),
			"added_tokens": []any{
				addedTok(300, "<s>", "special"),
				addedTok(301, "<l>", "lstrip"),
				addedTok(302, "<r>", "rstrip"),
				addedTok(303, "<w>", "single_word"),
				addedTok(305, "<a"),
				addedTok(306, "<ab>"),
				addedTok(307, "hey", "normalized"),
				addedTok(308, "<X>"),
			},
		}))
}

func TestAddedTokenFlags(t *testing.T) {
	tok := flagTokenizer(t)
	for _, c := range []struct {
		name, in string
		want     []int
	}{
		{"special in text", "a<s>b", concat(bytesOf("a"), []int{300}, bytesOf("b"))},
		{"lstrip eats whitespace on the left", "a \t <l>b", concat(bytesOf("a"), []int{301}, bytesOf("b"))},
		{"rstrip eats whitespace on the right", "a<r> \n b", concat(bytesOf("a"), []int{302}, bytesOf("b"))},
		{"lstrip stops at the previous token", "<r>  <l>", []int{302, 301}},
		{"single_word between spaces", "a <w> b", concat(bytesOf("a "), []int{303}, bytesOf(" b"))},
		{"single_word between punctuation", ".<w>.", concat(bytesOf("."), []int{303}, bytesOf("."))},
		{"single_word inside a word", "a<w>b", bytesOf("a<w>b")},
		{"single_word after underscore", "_<w>", bytesOf("_<w>")},
		{"single_word before a letter", "<w>é", bytesOf("<w>é")},
		{"leftmost-longest", "x<ab>", concat(bytesOf("x"), []int{306})},
		{"shorter token when the longer does not match", "<a>", concat([]int{305}, bytesOf(">"))},
		{"normalized token matched after normalization", "HEY you", concat([]int{307}, bytesOf(" you"))},
		{"raw token matched before normalization", "<X>", []int{308}},
		{"raw token not matched in normalized text", "<x>", bytesOf("<x>")},
		{"empty text", "", nil},
	} {
		if got := tok.Encode(c.in); !slices.Equal(got, c.want) {
			t.Errorf("%s: Encode(%q) = %v, want %v", c.name, c.in, got, c.want)
		}
	}
	if got := tok.Decode(concat(bytesOf("a"), []int{300, 308}, bytesOf("b"))); got != "a<s><X>b" {
		t.Errorf("Decode = %q, want %q", got, "a<s><X>b")
	}
	if !tok.IsSpecial(300) || tok.IsSpecial(301) || tok.IsSpecial(97) {
		t.Error("IsSpecial: only <s> is special")
	}
	if id, ok := tok.TokenID("<s>"); !ok || id != 300 {
		t.Errorf("TokenID(<s>) = %d, %v", id, ok)
	}
	if id, ok := tok.TokenID("Ġ"); !ok || id != ' ' {
		t.Errorf("TokenID(Ġ) = %d, %v; want 32 (the space byte)", id, ok)
	}
	if s, ok := tok.TokenString(' '); !ok || s != "Ġ" {
		t.Errorf("TokenString(32) = %q, %v", s, ok)
	}
	if _, ok := tok.TokenString(304); ok {
		t.Error("TokenString(304): the id is a gap, want not found")
	}
	if tok.VocabSize() != 309 {
		t.Errorf("VocabSize = %d, want 309", tok.VocabSize())
	}
	if got := tok.Decode([]int{97, 304, -1, 1 << 30, 98}); got != "ab" {
		t.Errorf("Decode skips unknown ids: got %q", got)
	}
}

func TestNormalizers(t *testing.T) {
	for _, c := range []struct {
		json, in, want string
	}{
		{`{"type":"NFC"}`, "e\u0301", "é"},
		{`{"type":"NFD"}`, "é", "e\u0301"},
		{`{"type":"NFKC"}`, "ﬁ①", "fi1"},
		{`{"type":"NFKD"}`, "ﬁé", "fie\u0301"},
		{`{"type":"Lowercase"}`, "AİBΣ", "ai\u0307bσ"},
		{`{"type":"Strip","strip_left":true,"strip_right":false}`, " \u3000x  ", "x  "},
		{`{"type":"Strip","strip_left":true,"strip_right":true}`, "\t x \n", "x"},
		{`{"type":"Replace","pattern":{"String":" "},"content":"▁"}`, "a b  c", "a▁b▁▁c"},
		{`{"type":"Prepend","prepend":"▁"}`, "ab", "▁ab"},
		{`{"type":"Prepend","prepend":"▁"}`, "", ""},
		{`{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]}`, "a b", "▁a▁b"},
	} {
		n, err := parseNormalizer([]byte(c.json), "normalizer")
		if err != nil {
			t.Fatalf("%s: %v", c.json, err)
		}
		if got := n.normalize(c.in); got != c.want {
			t.Errorf("%s: normalize(%q) = %q, want %q", c.json, c.in, got, c.want)
		}
	}
}

// The examples of Hugging Face's SplitDelimiterBehavior documentation.
func TestSplitBehaviors(t *testing.T) {
	for _, c := range []struct {
		behavior string
		invert   bool
		want     []string
	}{
		{"Removed", false, []string{"the", "final", "countdown"}},
		{"Isolated", false, []string{"the", "-", "final", "-", "-", "countdown"}},
		{"MergedWithPrevious", false, []string{"the-", "final-", "-", "countdown"}},
		{"MergedWithNext", false, []string{"the", "-final", "-", "-countdown"}},
		{"Contiguous", false, []string{"the", "-", "final", "--", "countdown"}},
		{"Isolated", true, []string{"the", "-", "final", "-", "-", "countdown"}},
		{"Removed", true, []string{"-", "-", "-"}},
		{"MergedWithPrevious", true, []string{"the", "-final", "-", "-countdown"}},
	} {
		raw := `{"type":"Split","pattern":{"String":"-"},"behavior":"` + c.behavior + `","invert":` +
			map[bool]string{true: "true", false: "false"}[c.invert] + `}`
		pt, err := parsePreTokenizer([]byte(raw), "pre_tokenizer")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range pt.split(nil, piece{text: "the-final--countdown"}) {
			got = append(got, p.text)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s invert=%v: %q, want %q", c.behavior, c.invert, got, c.want)
		}
	}
}

func TestByteLevelPreTokenizer(t *testing.T) {
	pt, err := parsePreTokenizer([]byte(`{"type":"ByteLevel","add_prefix_space":true,"use_regex":true}`), "pre_tokenizer")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pt.split(nil, piece{text: "hello  world's\n"}) {
		got = append(got, p.modelText())
	}
	want := []string{"Ġhello", "Ġ", "Ġworld", "'s", "Ċ"}
	if !slices.Equal(got, want) {
		t.Errorf("ByteLevel(add_prefix_space, use_regex) = %q, want %q", got, want)
	}
}

func TestBPEModelOptions(t *testing.T) {
	fallbackVocab := map[string]int{"a": 0, "b": 1, "ab": 2}
	for b := 0; b < 256; b++ {
		fallbackVocab[fmt.Sprintf("<0x%02X>", b)] = 10 + b // HF spells byte tokens <0xC3>
	}
	for _, c := range []struct {
		name  string
		model map[string]any
		in    string
		want  []int
	}{
		{"byte fallback", map[string]any{"vocab": fallbackVocab, "merges": []any{"a b"}, "byte_fallback": true},
			"abé", []int{2, 10 + 0xC3, 10 + 0xA9}},
		{"unknown tokens", map[string]any{"vocab": map[string]int{"<unk>": 0, "a": 1, "b": 2}, "merges": []any{}, "unk_token": "<unk>"},
			"axyb", []int{1, 0, 0, 2}},
		{"fused unknown tokens", map[string]any{"vocab": map[string]int{"<unk>": 0, "a": 1, "b": 2}, "merges": []any{}, "unk_token": "<unk>", "fuse_unk": true},
			"axyb", []int{1, 0, 2}},
		{"no unknown token: dropped", map[string]any{"vocab": map[string]int{"a": 1, "b": 2}, "merges": []any{}},
			"axyb", []int{1, 2}},
		{"continuing subword prefix", map[string]any{"vocab": map[string]int{"a": 0, "##b": 1, "ab": 2, "##c": 3}, "merges": [][]string{{"a", "##b"}}, "continuing_subword_prefix": "##"},
			"abc", []int{2, 3}},
		{"end of word suffix", map[string]any{"vocab": map[string]int{"a": 0, "b</w>": 1, "ab</w>": 2, "b": 3}, "merges": [][]string{{"a", "b</w>"}}, "end_of_word_suffix": "</w>"},
			"ab", []int{2}},
		{"ignore_merges takes whole words", map[string]any{"vocab": map[string]int{"a": 0, "b": 1, "c": 2, "abc": 3}, "merges": []any{}, "ignore_merges": true},
			"abc", []int{3}},
		{"without ignore_merges", map[string]any{"vocab": map[string]int{"a": 0, "b": 1, "c": 2, "abc": 3}, "merges": []any{}},
			"abc", []int{0, 1, 2}},
		{"lower rank merges first", map[string]any{"vocab": map[string]int{"a": 0, "b": 1, "c": 2, "bc": 3, "ab": 4, "abc": 5}, "merges": []any{"b c", "a b", "a bc"}},
			"abc", []int{5}},
		{"merge pairs equal merge strings", map[string]any{"vocab": map[string]int{"a": 0, "b": 1, "c": 2, "bc": 3, "ab": 4, "abc": 5}, "merges": [][]string{{"b", "c"}, {"a", "b"}, {"a", "bc"}}},
			"abc", []int{5}},
		{"leftmost among equal ranks", map[string]any{"vocab": map[string]int{"a": 0, "aa": 1}, "merges": []any{"a a"}},
			"aaa", []int{1, 0}},
	} {
		c.model["type"] = "BPE"
		tok, err := Parse(tokenizerJSON(t, c.model, nil))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := tok.Encode(c.in); !slices.Equal(got, c.want) {
			t.Errorf("%s: Encode(%q) = %v, want %v", c.name, c.in, got, c.want)
		}
	}
}

// naiveMerge is the BPE definition written the slow way: repeatedly merge
// the adjacent pair with the lowest rank, leftmost first.
func naiveMerge(m *bpe, ids []int32) []int32 {
	ids = slices.Clone(ids)
	for {
		best, bestRank := -1, int32(1<<31-1)
		for i := 0; i+1 < len(ids); i++ {
			if r, ok := m.merges[pairKey(ids[i], ids[i+1])]; ok && r.rank < bestRank {
				best, bestRank = i, r.rank
			}
		}
		if best < 0 {
			return ids
		}
		ids = slices.Replace(ids, best, best+2, m.merges[pairKey(ids[best], ids[best+1])].id)
	}
}

func TestBPEMergeMatchesNaive(t *testing.T) {
	tok := loadQwen(t)
	words := []string{"hello", "aaaaaaaaaaaaaaaaaaaaaaaa", "ababababababab", "  \n\n\n  ", "internationalization",
		"你好世界", "🙂🙂🙂", "ﬁﬁﬁ", "0x1F2E3D4C", "))))))]]]]}}}}", "Привет", "llllllllll"}
	for i := range 300 { // and pseudo-random byte strings
		b := make([]byte, 1+i%23)
		for k := range b {
			b[k] = "etaoin shrdlu\n\t'.,éé中"[(i*7+k*13+k*k)%len("etaoin shrdlu\n\t'.,éé中")]
		}
		words = append(words, string(b))
	}
	sc := &bpeScratch{}
	for _, w := range words {
		var start []int32
		for i := 0; i < len(w); i++ {
			start = append(start, tok.model.byteIDs[w[i]])
		}
		want := naiveMerge(tok.model, start)
		sc.syms = sc.syms[:0]
		for _, id := range start {
			sc.syms = append(sc.syms, symbol{id: id})
		}
		tok.model.mergeAll(sc)
		var got []int32
		for i := 0; i >= 0 && i < len(sc.syms); i = int(sc.syms[i].next) {
			got = append(got, sc.syms[i].id)
		}
		if !slices.Equal(got, want) {
			t.Errorf("merge %q = %v, naive %v", w, got, want)
		}
	}
}

func TestLoadFileOrDirectory(t *testing.T) {
	fromDir := loadQwen(t) // loadQwen passes the directory
	fromFile, err := Load(filepath.Join(qwen3Dir(t), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []*Tokenizer{fromDir, fromFile} {
		if tok.VocabSize() != 151669 {
			t.Errorf("VocabSize = %d, want 151669 (151,643 + 26 added)", tok.VocabSize())
		}
	}
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Load(missing) error %v does not name the file", err)
	}
	bad := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(bad, []byte(`{"model":{"type":"Unigram"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "Unigram") {
		t.Errorf("Load(bad) error %v should name the file and the problem", err)
	}
}

func TestMalformedTokenizerJSON(t *testing.T) {
	vocab := `{"a":0,"b":1,"ab":2}`
	for _, c := range []struct{ doc, want string }{
		{`not json`, "not a valid tokenizer.json"},
		{`{}`, "model: missing"},
		{`{"model":{"type":"WordPiece","vocab":{}}}`, `model.type: "WordPiece"`},
		{`{"model":{"type":"BPE"}}`, "model.vocab: missing"},
		{`{"model":{"type":"BPE","vocab":{"a":-1}}}`, "out of range"},
		{`{"model":{"type":"BPE","vocab":{"a":0,"b":0}}}`, "id 0 is used by both"},
		{`{"model":{"type":"BPE","vocab":` + vocab + `,"merges":["a c"]}}`, `model.merges[0]: token "c"`},
		{`{"model":{"type":"BPE","vocab":` + vocab + `,"merges":["b a"]}}`, `merged token "ba"`},
		{`{"model":{"type":"BPE","vocab":` + vocab + `,"merges":["ab"]}}`, "not two tokens"},
		{`{"model":{"type":"BPE","vocab":` + vocab + `,"merges":[["a","b","c"]]}}`, "exactly two"},
		{`{"model":{"type":"BPE","vocab":` + vocab + `,"merges":[7]}}`, "merge 7"},
		{`{"model":{"type":"BPE","vocab":` + vocab + `,"unk_token":"<unk>"}}`, "model.unk_token"},
		{`{"model":{"type":"BPE","vocab":` + vocab + `,"dropout":0.1}}`, "model.dropout"},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"normalizer":{"type":"Precompiled"}}`, `normalizer: unsupported normalizer type "Precompiled"`},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"},{}]}}`, `normalizer.normalizers[1]: missing "type"`},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"normalizer":{"type":"Replace","pattern":{"Regex":"a+"},"content":""}}`, "Regex pattern is not supported"},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"pre_tokenizer":{"type":"Metaspace"}}`, `pre_tokenizer: unsupported pre-tokenizer type "Metaspace"`},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\p{Lu}+"},"behavior":"Isolated"}}`, `unsupported Split pattern`},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"pre_tokenizer":{"type":"Split","pattern":{"String":"-"},"behavior":"Sideways"}}`, `unknown Split behavior "Sideways"`},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","behavior":"Isolated"}]}}`, `pre_tokenizer.pretokenizers[0]: Split needs "pattern"`},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"decoder":{"type":"WordPiece"}}`, `decoder: unsupported decoder type "WordPiece"`},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"added_tokens":[{"id":5,"content":""}]}`, "added_tokens[0]: empty content"},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"added_tokens":[{"id":1,"content":"<x>"}]}`, `id 1 is "b" in the vocabulary`},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"added_tokens":[{"id":7,"content":"ab"}]}`, `"ab" has id 7 but the vocabulary gives it 2`},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"added_tokens":[{"id":5,"content":"<x>"},{"id":6,"content":"<x>"}]}`, "listed twice"},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"added_tokens":[{"id":5,"content":"<x>"},{"id":5,"content":"<y>"}]}`, "id 5 is used by both"},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"added_tokens":[{"id":99999999,"content":"<x>"}]}`, "out of range"},
		{`{"model":{"type":"BPE","vocab":` + vocab + `},"added_tokens":[{"id":"5","content":"<x>"}]}`, "added_tokens.id"},
	} {
		tok, err := Parse([]byte(c.doc))
		if err == nil {
			t.Errorf("%s: parsed (%v); want an error containing %q", c.doc, tok != nil, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to contain %q", c.doc, err, c.want)
		}
	}
}

// Encode is safe for concurrent use (the word cache is shared).
func TestConcurrentEncode(t *testing.T) {
	tok := loadQwen(t)
	cases := loadEncodings(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(cases); i += 2 {
				if got := tok.Encode(cases[i].Text); !slices.Equal(got, cases[i].IDs) {
					t.Errorf("goroutine %d line %d differs", g, i+1)
				}
			}
		}()
	}
	wg.Wait()
}

// Invalid UTF-8 is encoded byte for byte, so the ids still carry every
// input byte (Decode then shows each bad sequence as U+FFFD).
func TestInvalidUTF8KeepsEveryByte(t *testing.T) {
	tok := loadQwen(t)
	for _, c := range []struct{ in, decoded string }{
		{"a\xffb", "a\uFFFDb"},
		{"\xe4\xbd", "\uFFFD"},
		{"é\xc3", "é\uFFFD"},
		{"x\x80\x80 y", "x\uFFFD\uFFFD y"},
	} {
		ids := tok.Encode(c.in)
		var raw []byte
		for _, id := range ids {
			raw, _ = tok.decoder.append(raw, id, len(raw) == 0)
		}
		if string(raw) != c.in {
			t.Errorf("Encode(%q) carries bytes %q", c.in, raw)
		}
		if got := tok.Decode(ids); got != c.decoded {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", c.in, got, c.decoded)
		}
	}
}

func TestTokenBytesIsWhatDecodeWrites(t *testing.T) {
	tok := loadQwen(t)
	for _, s := range []string{"Ġhello", "{\"", "Ċ", "ä¸Ń"} {
		id, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		b, ok := tok.TokenBytes(id)
		if !ok || string(b) != tok.Decode([]int{id}) {
			t.Errorf("TokenBytes(%d) = %q, %v; Decode gives %q", id, b, ok, tok.Decode([]int{id}))
		}
	}
	if _, ok := tok.TokenBytes(-1); ok {
		t.Error("TokenBytes(-1) reported a token")
	}
	if _, ok := tok.TokenBytes(tok.VocabSize()); ok {
		t.Error("TokenBytes past the vocabulary reported a token")
	}
}
