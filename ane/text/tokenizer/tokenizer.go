// Package tokenizer encodes and decodes text with a Hugging Face
// tokenizer.json byte-level BPE tokenizer (Qwen3 and the GPT-2 / GPT-4 /
// Llama-3 family), in pure Go, matching the reference implementations token
// for token.
//
// Encode runs the Hugging Face pipeline: added tokens are cut out of the
// raw text (then, after normalization, those marked normalized), each
// remaining segment is normalized, pre-tokenized (Split with a hand-written
// matcher for the lookahead pattern, ByteLevel) and BPE-merged. No BOS/EOS
// or other post-processing is added. A Tokenizer is safe for concurrent use.
package tokenizer

import (
	"os"
	"path/filepath"
)

// Tokenizer is a loaded tokenizer.json.
type Tokenizer struct {
	normalizer   normalizer   // nil: none
	preTokenizer preTokenizer // nil: the whole segment is one word
	model        *bpe
	rawAdded     *addedMatcher // added tokens matched before normalization
	normAdded    *addedMatcher // added tokens matched after it
	decoder      decoder

	idToToken []string // model and added tokens by id; "" where no token
	addedByID map[int]addedToken
	addedIDs  map[string]int
	special   map[int]bool
}

// Load reads a tokenizer.json, or the tokenizer.json inside the directory
// path names.
func Load(path string) (*Tokenizer, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(data)
	if err != nil {
		return nil, &LoadError{Path: path, Err: err}
	}
	return t, nil
}

// LoadError says which file failed to load and why.
type LoadError struct {
	Path string
	Err  error
}

func (e *LoadError) Error() string { return "tokenizer " + e.Path + ": " + e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

// Encode returns the token ids of text. Added and special tokens written in
// the text are matched as such; nothing else is added.
func (t *Tokenizer) Encode(text string) []int {
	var ids []int
	sc := &bpeScratch{}
	var words []piece
	encodeSegment := func(seg string, id int) {
		if id >= 0 {
			ids = append(ids, id)
			return
		}
		words = words[:0]
		if t.preTokenizer == nil {
			words = append(words, piece{text: seg})
		} else {
			words = t.preTokenizer.split(words, piece{text: seg})
		}
		for _, w := range words {
			if w.text != "" {
				ids = t.model.appendWord(ids, w, sc)
			}
		}
	}
	t.rawAdded.split(text, func(seg string, id int) {
		if id >= 0 {
			ids = append(ids, id)
			return
		}
		if t.normalizer != nil {
			seg = t.normalizer.normalize(seg)
		}
		t.normAdded.split(seg, encodeSegment)
	})
	return ids
}

// Decode returns the text of ids, special tokens included. Ids that are not
// in the vocabulary are skipped; byte sequences that are not valid UTF-8
// become U+FFFD, one per maximal invalid subpart.
func (t *Tokenizer) Decode(ids []int) string {
	buf := make([]byte, 0, 4*len(ids))
	first := true
	for _, id := range ids {
		var ok bool
		buf, ok = t.decoder.append(buf, id, first)
		first = first && !ok
	}
	out, _ := appendLossy(make([]byte, 0, len(buf)), buf, true)
	return string(out)
}

// VocabSize is one more than the largest token id (model or added), i.e.
// the number of rows an embedding table needs.
func (t *Tokenizer) VocabSize() int { return len(t.idToToken) }

// TokenID returns the id of a token as the vocabulary spells it (byte-level
// form, e.g. "Ġhello"), or of an added token by its content.
func (t *Tokenizer) TokenID(tok string) (int, bool) {
	if id, ok := t.addedIDs[tok]; ok {
		return id, true
	}
	id, ok := t.model.vocab[tok]
	return id, ok
}

// TokenString returns the vocabulary spelling of id.
func (t *Tokenizer) TokenString(id int) (string, bool) {
	if id < 0 || id >= len(t.idToToken) {
		return "", false
	}
	if a, ok := t.addedByID[id]; ok {
		return a.Content, true
	}
	s := t.idToToken[id]
	if s == "" { // a gap in the ids, unless the vocabulary really has ""
		if vid, ok := t.model.vocab[""]; !ok || vid != id {
			return "", false
		}
	}
	return s, true
}

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id int) bool { return t.special[id] }

// NewStreamDecoder starts an incremental decode of a token stream.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t, first: true} }

// StreamDecoder turns tokens into text as they arrive. It never emits part
// of a UTF-8 character: bytes of a character split across tokens are held
// until it is complete, and a sequence that can no longer become valid is
// emitted as U+FFFD exactly where a one-shot Decode puts it, so the
// concatenated output of Add calls and Flush equals Decode of all the ids.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
	first   bool
}

// Add feeds one token id and returns the text it completed (often "").
func (d *StreamDecoder) Add(id int) string {
	var ok bool
	d.pending, ok = d.t.decoder.append(d.pending, id, d.first)
	d.first = d.first && !ok
	if len(d.pending) == 0 {
		return ""
	}
	out, n := appendLossy(nil, d.pending, false)
	d.pending = d.pending[:copy(d.pending, d.pending[n:])]
	return string(out)
}

// Flush ends the stream: it returns the held-back bytes of an incomplete
// character (as U+FFFD) and resets the decoder for a new stream.
func (d *StreamDecoder) Flush() string {
	out, _ := appendLossy(nil, d.pending, true)
	d.pending = d.pending[:0]
	d.first = true
	return string(out)
}

// TokenBytes returns the bytes token id decodes to (what a grammar over
// the vocabulary matches), or false for an id that is not a token.
func (t *Tokenizer) TokenBytes(id int) ([]byte, bool) {
	d := &t.decoder
	if id < 0 || id >= len(d.known) || !d.known[id] {
		return nil, false
	}
	return d.arena[d.start[id]:d.start[id+1]:d.start[id+1]], true
}
