package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// fileJSON is the part of tokenizer.json the encoder and decoder use.
// post_processor, truncation and padding are ignored: Encode adds no
// special tokens.
type fileJSON struct {
	AddedTokens  []addedToken    `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        *modelJSON      `json:"model"`
}

type modelJSON struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   json.RawMessage `json:"vocab"`  // see parseVocab
	Merges                  json.RawMessage `json:"merges"` // see parseMerges
}

// mergeJSON is one merge, written either "a b" (older files) or ["a", "b"].
type mergeJSON struct{ a, b string }

func (m *mergeJSON) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		return m.fromString(s)
	}
	var pair []string
	if err := json.Unmarshal(data, &pair); err != nil {
		return fmt.Errorf("merge %s: want \"a b\" or [\"a\", \"b\"]", data)
	}
	if len(pair) != 2 {
		return fmt.Errorf("merge %s: want exactly two tokens, got %d", data, len(pair))
	}
	m.a, m.b = pair[0], pair[1]
	return nil
}

func (m *mergeJSON) fromString(s string) error {
	a, b, ok := strings.Cut(s, " ")
	if !ok {
		return fmt.Errorf("merge %q is not two tokens separated by a space", s)
	}
	m.a, m.b = a, b
	return nil
}

// Parse builds a Tokenizer from the bytes of a tokenizer.json. Every
// structural problem is an error that names the field.
func Parse(data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, fmt.Errorf("field %s: %w", te.Field, err)
		}
		return nil, fmt.Errorf("not a valid tokenizer.json: %w", err)
	}
	if f.Model == nil {
		return nil, errors.New("model: missing")
	}
	t := &Tokenizer{}
	var err error
	if t.normalizer, err = parseNormalizer(f.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if t.preTokenizer, err = parsePreTokenizer(f.PreTokenizer, "pre_tokenizer"); err != nil {
		return nil, err
	}
	byteLevelDecoder, err := parseDecoder(f.Decoder, "decoder")
	if err != nil {
		return nil, err
	}
	if t.model, err = buildBPE(f.Model); err != nil {
		return nil, err
	}
	if err := t.buildVocabulary(f.AddedTokens); err != nil {
		return nil, err
	}
	t.decoder = newDecoder(t, byteLevelDecoder)
	return t, nil
}

// maxTokenID bounds ids (8× the largest real vocabularies) so a small
// hostile file cannot make us allocate huge id tables.
const maxTokenID = 1 << 21

func buildBPE(j *modelJSON) (*bpe, error) {
	if j.Type != "" && j.Type != "BPE" {
		return nil, fmt.Errorf("model.type: %q is not supported (only BPE)", j.Type)
	}
	vocab, err := parseVocab(j.Vocab)
	if err != nil {
		return nil, err
	}
	if vocab == nil {
		return nil, errors.New("model.vocab: missing")
	}
	merges, err := parseMerges(j.Merges)
	if err != nil {
		return nil, err
	}
	if j.Dropout != nil && *j.Dropout != 0 {
		return nil, fmt.Errorf("model.dropout: %v is not supported (BPE dropout makes encoding random)", *j.Dropout)
	}
	m := &bpe{
		vocab:        vocab,
		merges:       make(map[uint64]mergeRule, len(merges)),
		unkID:        -1,
		fuseUnk:      j.FuseUnk,
		byteFallback: j.ByteFallback,
		ignoreMerges: j.IgnoreMerges,
	}
	if j.ContinuingSubwordPrefix != nil {
		m.prefix = *j.ContinuingSubwordPrefix
	}
	if j.EndOfWordSuffix != nil {
		m.suffix = *j.EndOfWordSuffix
	}
	for tok, id := range vocab {
		if id < 0 || id >= maxTokenID {
			return nil, fmt.Errorf("model.vocab[%q]: id %d out of range [0, %d)", tok, id, maxTokenID)
		}
	}
	if j.UnkToken != nil {
		id, ok := vocab[*j.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model.unk_token: %q is not in the vocabulary", *j.UnkToken)
		}
		m.unkID = int32(id)
	}
	for i, mg := range merges {
		a, okA := vocab[mg.a]
		b, okB := vocab[mg.b]
		if !okA || !okB {
			missing := mg.a
			if okA {
				missing = mg.b
			}
			return nil, fmt.Errorf("model.merges[%d]: token %q is not in the vocabulary", i, missing)
		}
		joined := mg.a + strings.TrimPrefix(mg.b, m.prefix)
		id, ok := vocab[joined]
		if !ok {
			return nil, fmt.Errorf("model.merges[%d]: merged token %q is not in the vocabulary", i, joined)
		}
		key := pairKey(int32(a), int32(b))
		if _, dup := m.merges[key]; !dup { // the first (lowest-rank) occurrence wins
			m.merges[key] = mergeRule{rank: int32(i), id: int32(id)}
		}
	}
	m.byteFast = m.prefix == "" && m.suffix == ""
	for b := 0; b < 256; b++ {
		m.byteIDs[b], m.fallbackIDs[b] = -1, -1
		if id, ok := vocab[byteRuneStr[b]]; ok {
			m.byteIDs[b] = int32(id)
		} else {
			m.byteFast = false // unknown bytes need the general path's unk/fallback rules
		}
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.fallbackIDs[b] = int32(id)
		}
	}
	return m, nil
}

// buildVocabulary fills the id tables and the added-token matchers.
func (t *Tokenizer) buildVocabulary(added []addedToken) error {
	size := 0
	for _, id := range t.model.vocab {
		size = max(size, id+1)
	}
	for i, a := range added {
		if a.ID < 0 || a.ID >= maxTokenID {
			return fmt.Errorf("added_tokens[%d] (%q): id %d out of range [0, %d)", i, a.Content, a.ID, maxTokenID)
		}
		size = max(size, a.ID+1)
	}
	t.idToToken = make([]string, size)
	seen := make([]bool, size)
	for tok, id := range t.model.vocab {
		if seen[id] {
			return fmt.Errorf("model.vocab: id %d is used by both %q and %q", id, t.idToToken[id], tok)
		}
		seen[id] = true
		t.idToToken[id] = tok
	}
	t.addedByID = make(map[int]addedToken, len(added))
	t.addedIDs = make(map[string]int, len(added))
	t.special = make(map[int]bool)
	var raw, norm []addedToken
	var rawPat, normPat []string
	for i, a := range added {
		if a.Content == "" {
			return fmt.Errorf("added_tokens[%d]: empty content", i)
		}
		if prev, dup := t.addedIDs[a.Content]; dup {
			return fmt.Errorf("added_tokens[%d]: %q is listed twice (ids %d and %d)", i, a.Content, prev, a.ID)
		}
		if other, dup := t.addedByID[a.ID]; dup {
			return fmt.Errorf("added_tokens[%d]: id %d is used by both %q and %q", i, a.ID, other.Content, a.Content)
		}
		if vid, inVocab := t.model.vocab[a.Content]; inVocab && vid != a.ID {
			return fmt.Errorf("added_tokens[%d]: %q has id %d but the vocabulary gives it %d", i, a.Content, a.ID, vid)
		}
		if tok := t.idToToken[a.ID]; tok != "" && tok != a.Content {
			return fmt.Errorf("added_tokens[%d]: id %d is %q in the vocabulary, not %q", i, a.ID, tok, a.Content)
		}
		t.addedByID[a.ID] = a
		t.addedIDs[a.Content] = a.ID
		if a.Special {
			t.special[a.ID] = true
		}
		if a.Normalized {
			pat := a.Content
			if t.normalizer != nil {
				pat = t.normalizer.normalize(pat)
			}
			norm, normPat = append(norm, a), append(normPat, pat)
		} else {
			raw, rawPat = append(raw, a), append(rawPat, a.Content)
		}
	}
	t.rawAdded = newAddedMatcher(raw, rawPat)
	t.normAdded = newAddedMatcher(norm, normPat)
	return nil
}
