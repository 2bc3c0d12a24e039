package tokenizer

import (
	"encoding/json"
	"fmt"
)

// decoder turns ids into bytes (tokenizer.json "decoder"). Each token's
// bytes are computed once at load into one arena.
type decoder struct {
	arena     []byte
	start     []uint32 // token id's bytes are arena[start[id]:start[id+1]]
	known     []bool
	separator string // put between tokens: " " when the file has no decoder
}

// append adds id's bytes to dst; ok is false (and nothing is added) for an
// unknown id. first says no token has been emitted yet.
func (d *decoder) append(dst []byte, id int, first bool) ([]byte, bool) {
	if id < 0 || id >= len(d.known) || !d.known[id] {
		return dst, false
	}
	if !first {
		dst = append(dst, d.separator...)
	}
	return append(dst, d.arena[d.start[id]:d.start[id+1]]...), true
}

// newDecoder precomputes the bytes of every token of t. byteLevel selects
// the ByteLevel decoder; otherwise tokens are joined with spaces, as Hugging
// Face does without a decoder.
func newDecoder(t *Tokenizer, byteLevel bool) decoder {
	n := len(t.idToToken)
	d := decoder{start: make([]uint32, n+1), known: make([]bool, n)}
	if !byteLevel {
		d.separator = " "
	}
	for id := range n {
		d.start[id] = uint32(len(d.arena))
		tok, ok := t.TokenString(id)
		if !ok {
			continue
		}
		d.known[id] = true
		if byteLevel {
			d.arena = byteLevelDecode(d.arena, tok)
		} else {
			d.arena = append(d.arena, tok...)
		}
	}
	d.start[n] = uint32(len(d.arena))
	return d
}

type decoderJSON struct {
	Type     string            `json:"type"`
	Decoders []json.RawMessage `json:"decoders"`
}

// parseDecoder reports whether the decoder is ByteLevel (true) or absent
// (false); any other decoder is an error.
func parseDecoder(raw json.RawMessage, path string) (byteLevel bool, err error) {
	if isNull(raw) {
		return false, nil
	}
	var j decoderJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	switch j.Type {
	case "ByteLevel":
		return true, nil
	case "Sequence":
		if len(j.Decoders) == 1 {
			return parseDecoder(j.Decoders[0], path+".decoders[0]")
		}
		return false, fmt.Errorf("%s: a decoder Sequence is supported only with a single ByteLevel decoder", path)
	case "":
		return false, fmt.Errorf("%s: missing \"type\"", path)
	}
	return false, fmt.Errorf("%s: unsupported decoder type %q (supported: ByteLevel)", path, j.Type)
}
