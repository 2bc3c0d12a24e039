package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// validPrefixes holds every proper prefix of every valid UTF-8 encoding,
// built by enumerating all scalar values: an oracle for the maximal
// subpart rule independent of appendLossy's byte-range table.
var validPrefixes = func() map[string]bool {
	m := map[string]bool{}
	buf := make([]byte, 4)
	for r := rune(0x80); r <= utf8.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		n := utf8.EncodeRune(buf, r)
		for k := 1; k < n; k++ {
			m[string(buf[:k])] = true
		}
	}
	return m
}()

// naiveLossy replaces each maximal subpart of an ill-formed sequence (the
// longest prefix of a valid encoding, or one byte) with U+FFFD.
func naiveLossy(b []byte) string {
	var out strings.Builder
	for len(b) > 0 {
		if r, n := utf8.DecodeRune(b); r != utf8.RuneError || n == 3 {
			out.Write(b[:n])
			b = b[n:]
			continue
		}
		k := 1
		for k < len(b) && k < 4 && validPrefixes[string(b[:k+1])] {
			k++
		}
		out.WriteString("\uFFFD")
		b = b[k:]
	}
	return out.String()
}

func TestLossyMatchesMaximalSubpartRule(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	interesting := []byte{0x00, 'a', 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF}
	for i := range 20000 {
		b := make([]byte, 1+i%9)
		for k := range b {
			b[k] = interesting[r.IntN(len(interesting))]
		}
		got, n := appendLossy(nil, b, true)
		if want := naiveLossy(b); string(got) != want || n != len(b) {
			t.Fatalf("lossy(% x) = %q (consumed %d), want %q", b, got, n, want)
		}
		// Streaming: any split point gives the same text.
		cut := r.IntN(len(b) + 1)
		first, used := appendLossy(nil, b[:cut], false)
		rest, _ := appendLossy(nil, append(b[used:cut:cut], b[cut:]...), true)
		if string(first)+string(rest) != string(got) {
			t.Fatalf("lossy(% x) split at %d: %q + %q, want %q", b, cut, first, rest, got)
		}
	}
	// The documented example: E2 82 is one maximal subpart, so one U+FFFD.
	if got, _ := appendLossy(nil, []byte("\xE2\x82a\xFF"), true); string(got) != "\uFFFDa\uFFFD" {
		t.Errorf("got %q", got)
	}
}

func qwenByteID(t testing.TB, tok *Tokenizer, b byte) int {
	id, ok := tok.TokenID(byteRuneStr[b])
	if !ok {
		t.Fatalf("no token for byte %#x", b)
	}
	return id
}

func TestStreamDecoderHoldsPartialCharacters(t *testing.T) {
	tok := loadQwen(t)
	b := func(x byte) int { return qwenByteID(t, tok, x) }
	imEnd, _ := tok.TokenID("<|im_end|>")
	for _, c := range []struct {
		name string
		ids  []int
		want []string // output of each Add, then Flush
	}{
		{"emoji split over four byte tokens", []int{b(0xF0), b(0x9F), b(0x99), b(0x82)}, []string{"", "", "", "🙂", ""}},
		{"special token ends a broken character", []int{b(0xF0), imEnd, b('a')}, []string{"", "\uFFFD<|im_end|>", "a", ""}},
		{"stream ending mid-character", []int{b('x'), b(0xE4), b(0xBD)}, []string{"x", "", "", "\uFFFD"}},
		{"invalid continuation emitted at once", []int{b(0xE4), b(0x41)}, []string{"", "\uFFFDA", ""}},
		{"unknown ids are skipped", []int{b(0xC3), -5, 1 << 29, b(0xA9)}, []string{"", "", "", "é", ""}},
	} {
		d := tok.NewStreamDecoder()
		var got []string
		for _, id := range c.ids {
			got = append(got, d.Add(id))
		}
		got = append(got, d.Flush())
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if strings.Join(got, "") != tok.Decode(c.ids) {
			t.Errorf("%s: stream %q != Decode %q", c.name, strings.Join(got, ""), tok.Decode(c.ids))
		}
	}
}

// streamIDs turns fuzz bytes into an id sequence that mixes byte tokens
// (which split characters), special and added tokens, ordinary tokens and
// unknown ids.
func streamIDs(tok *Tokenizer, data []byte) []int {
	var ids []int
	for i := 0; i+1 < len(data); i += 2 {
		sel, v := data[i], data[i+1]
		switch sel % 5 {
		case 0, 1:
			id, _ := tok.TokenID(byteRuneStr[v])
			ids = append(ids, id)
		case 2:
			ids = append(ids, 151643+int(v)%26) // the added tokens
		case 3:
			ids = append(ids, (int(v)*613+int(sel)*7919)%tok.VocabSize())
		case 4:
			ids = append(ids, tok.VocabSize()+int(v)-128) // half unknown
		}
	}
	return ids
}

func FuzzStreamDecode(f *testing.F) {
	tok := loadQwen(f)
	f.Add([]byte{0, 0xF0, 0, 0x9F, 2, 2, 0, 0x99, 0, 0x82})
	f.Add([]byte{1, 0xE4, 1, 0xBD, 4, 200, 1, 0xA0, 3, 17})
	f.Add([]byte{0, 0xC3, 0, 0xA9, 0, 0xC3})
	f.Fuzz(func(t *testing.T, data []byte) {
		ids := streamIDs(tok, data)
		d := tok.NewStreamDecoder()
		var out strings.Builder
		for _, id := range ids {
			chunk := d.Add(id)
			if !utf8.ValidString(chunk) {
				t.Fatalf("Add emitted invalid UTF-8 %q", chunk)
			}
			out.WriteString(chunk)
		}
		out.WriteString(d.Flush())
		if want := tok.Decode(ids); out.String() != want {
			t.Fatalf("ids %v: stream %q, Decode %q", ids, out.String(), want)
		}
	})
}

// roundTripOracle is what decode(encode(x)) must give: x with NFC (Hugging
// Face's, checked against it by TestHFTokenizersNormalize) applied
// to the text between added tokens (which are matched on the raw text,
// leftmost-longest, before normalization — so NFC never joins a combining
// mark onto a token's '>').
func roundTripOracle(tok *Tokenizer, x string) string {
	var out strings.Builder
	seg := 0
	for i := 0; i < len(x); {
		best := ""
		for content := range tok.addedIDs {
			if strings.HasPrefix(x[i:], content) && len(content) > len(best) {
				best = content
			}
		}
		if best == "" {
			i++
			continue
		}
		out.WriteString(nfcForm.normalize(x[seg:i]))
		out.WriteString(best)
		i += len(best)
		seg = i
	}
	out.WriteString(nfcForm.normalize(x[seg:]))
	return out.String()
}

func FuzzRoundTrip(f *testing.F) {
	tok := loadQwen(f)
	for _, s := range []string{"hello world", "e\u0301 café", "<|im_start|>user\nhi<|im_end|>", "<think>\u0338",
		"  \n\t x  ", "ﬁ Ｆｕｌｌ", "🙂👨‍👩‍👧", "it's 12345", "\ufeffBOM\u3000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, x string) {
		if !utf8.ValidString(x) {
			return
		}
		ids := tok.Encode(x)
		if got, want := tok.Decode(ids), roundTripOracle(tok, x); got != want {
			t.Fatalf("decode(encode(%q)) = %q, want %q (ids %v)", x, got, want, ids)
		}
	})
}

// FuzzParse feeds arbitrary bytes to the loader: it must return an error
// or a working tokenizer, never panic or hang.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"added_tokens":[{"id":3,"content":"<s>","special":true}]}`))
	f.Add([]byte(`{"model":{"vocab":{"a":0},"merges":[["a","a"]]},"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"}]},"pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\s+(?!\\S)|\\s+"},"behavior":"Isolated"},"decoder":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"<unk>":0,"a":1},"unk_token":"<unk>","byte_fallback":true},"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":true}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{}},"added_tokens":[{"id":0,"content":"x","lstrip":true,"rstrip":true,"single_word":true,"normalized":true}],"normalizer":{"type":"Lowercase"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := Parse(data)
		if err != nil {
			if tok != nil {
				t.Fatal("Parse returned a tokenizer and an error")
			}
			return
		}
		for _, s := range []string{"", "a b\n", "<s>ab x", "\xff\xfe"} {
			ids := tok.Encode(s)
			for _, id := range ids {
				if id < 0 || id >= tok.VocabSize() {
					t.Fatalf("Encode(%q) gave id %d outside [0, %d)", s, id, tok.VocabSize())
				}
			}
			_ = tok.Decode(ids)
		}
	})
}
