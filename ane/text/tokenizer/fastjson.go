package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// The vocabulary and merges are nearly all of a tokenizer.json (11 MB and
// 300k entries for Qwen3), and encoding/json's reflection makes them the
// bulk of the load time. These readers handle exactly their two shapes —
// {"token": id, …} and ["a b", …] / [["a", "b"], …] — and report
// ok=false on anything unexpected, in which case the caller falls back to
// encoding/json, so the result never depends on the fast path.

type jsonReader struct {
	data []byte
	pos  int
}

func (r *jsonReader) skipSpace() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// consume skips whitespace and then c, reporting whether c was there.
func (r *jsonReader) consume(c byte) bool {
	r.skipSpace()
	if r.pos < len(r.data) && r.data[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

func (r *jsonReader) str() (string, bool) {
	r.skipSpace()
	if r.pos >= len(r.data) || r.data[r.pos] != '"' {
		return "", false
	}
	start := r.pos
	escaped := false
	for i := start + 1; i < len(r.data); i++ {
		switch c := r.data[i]; {
		case c == '\\':
			escaped = true
			i++
		case c < 0x20:
			return "", false
		case c == '"':
			r.pos = i + 1
			if !escaped {
				return string(r.data[start+1 : i]), true
			}
			var s string
			if err := json.Unmarshal(r.data[start:i+1], &s); err != nil {
				return "", false
			}
			return s, true
		}
	}
	return "", false
}

func (r *jsonReader) integer() (int, bool) {
	r.skipSpace()
	start := r.pos
	if r.pos < len(r.data) && r.data[r.pos] == '-' {
		r.pos++
	}
	for r.pos < len(r.data) && r.data[r.pos] >= '0' && r.data[r.pos] <= '9' {
		r.pos++
	}
	n, err := strconv.Atoi(string(r.data[start:r.pos]))
	return n, err == nil
}

// end reports whether only whitespace is left.
func (r *jsonReader) end() bool {
	r.skipSpace()
	return r.pos == len(r.data)
}

func fastVocab(data []byte) (map[string]int, bool) {
	r := &jsonReader{data: data}
	if !r.consume('{') {
		return nil, false
	}
	vocab := make(map[string]int, len(data)/16)
	if r.consume('}') {
		return vocab, r.end()
	}
	for {
		tok, ok := r.str()
		if !ok || !r.consume(':') {
			return nil, false
		}
		id, ok := r.integer()
		if !ok {
			return nil, false
		}
		vocab[tok] = id
		if r.consume('}') {
			return vocab, r.end()
		}
		if !r.consume(',') {
			return nil, false
		}
	}
}

func fastMerges(data []byte) ([]mergeJSON, bool) {
	r := &jsonReader{data: data}
	if !r.consume('[') {
		return nil, false
	}
	merges := make([]mergeJSON, 0, len(data)/24)
	if r.consume(']') {
		return merges, r.end()
	}
	for {
		var m mergeJSON
		if r.consume('[') {
			a, okA := r.str()
			if !okA || !r.consume(',') {
				return nil, false
			}
			b, okB := r.str()
			if !okB || !r.consume(']') {
				return nil, false
			}
			m = mergeJSON{a, b}
		} else {
			s, ok := r.str()
			if !ok {
				return nil, false
			}
			if err := m.fromString(s); err != nil {
				return nil, false
			}
		}
		merges = append(merges, m)
		if r.consume(']') {
			return merges, r.end()
		}
		if !r.consume(',') {
			return nil, false
		}
	}
}

// parseVocab and parseMerges decode model.vocab and model.merges.
func parseVocab(raw json.RawMessage) (map[string]int, error) {
	if isNull(raw) {
		return nil, nil
	}
	if v, ok := fastVocab(raw); ok {
		return v, nil
	}
	var v map[string]int
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("model.vocab: want an object of token → integer id: %w", err)
	}
	return v, nil
}

func parseMerges(raw json.RawMessage) ([]mergeJSON, error) {
	if isNull(raw) {
		return nil, nil
	}
	if m, ok := fastMerges(raw); ok {
		return m, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("model.merges: want an array: %w", err)
	}
	merges := make([]mergeJSON, len(items))
	for i, item := range items {
		if err := merges[i].UnmarshalJSON(item); err != nil {
			return nil, fmt.Errorf("model.merges[%d]: %w", i, err)
		}
	}
	return merges, nil
}
