package tokenizer

import (
	"encoding/json"
	"testing"
)

// byteVocab is a vocabulary of the 256 byte-level characters, each with
// the id of its byte, so plain text without merges encodes to its bytes.
func byteVocab() map[string]int {
	v := make(map[string]int, 256)
	for b := 0; b < 256; b++ {
		v[byteRuneStr[b]] = b
	}
	return v
}

// tokenizerJSON builds a tokenizer.json document from its parts.
func tokenizerJSON(t testing.TB, model map[string]any, extra map[string]any) []byte {
	doc := map[string]any{"version": "1.0", "model": model}
	for k, v := range extra {
		doc[k] = v
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustParse(t testing.TB, data []byte) *Tokenizer {
	t.Helper()
	tok, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tok
}

// bytesOf is the ids of plain text under byteVocab without merges.
func bytesOf(s string) []int {
	ids := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		ids[i] = int(s[i])
	}
	return ids
}

func concat(parts ...[]int) []int {
	var out []int
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func byteLevelOnly() map[string]any {
	return map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
}
