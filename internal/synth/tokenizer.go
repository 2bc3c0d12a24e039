package synth

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

// qwenSplitPattern is the Qwen pre-tokenizer regular expression, as in the
// published Qwen3 tokenizer.json.
const qwenSplitPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// addedToken is one of the tokens appended after the BPE vocabulary.
type addedToken struct {
	Content string
	Special bool // think/tool markers are added but not special, as in Qwen
}

// addedTokens are the Qwen chat and control tokens, in id order.
var addedTokens = []addedToken{
	{"<|endoftext|>", true},
	{"<|im_start|>", true},
	{"<|im_end|>", true},
	{"<think>", false},
	{"</think>", false},
	{"<tool_call>", false},
	{"</tool_call>", false},
	{"<tool_response>", false},
	{"</tool_response>", false},
}

// Vocabulary is the synthetic tokenizer: the learned BPE plus the added
// tokens, with their ids.
type Vocabulary struct {
	bpe     bpeModel
	addedID map[string]int
}

// buildVocabulary learns merges from the embedded corpus so that BPE tokens
// plus added tokens fill at most vocabSize ids.
func buildVocabulary(vocabSize int) (*Vocabulary, error) {
	base := vocabSize - len(addedTokens)
	if base < 256 {
		return nil, fmt.Errorf("synth: vocab_size %d leaves no room for the 256 byte tokens and %d added tokens", vocabSize, len(addedTokens))
	}
	v := &Vocabulary{bpe: trainBPE(corpus, base), addedID: map[string]int{}}
	for i, t := range addedTokens {
		v.addedID[t.Content] = len(v.bpe.tokens) + i
	}
	return v, nil
}

// Size is the number of token ids the tokenizer uses.
func (v *Vocabulary) Size() int { return len(v.bpe.tokens) + len(addedTokens) }

// ID returns the id of an added token such as "<|im_end|>".
func (v *Vocabulary) ID(added string) int { return v.addedID[added] }

// tokenizerJSON renders tokenizer.json in the Hugging Face tokenizers format
// used by Qwen: NFC, the Qwen Split then ByteLevel pre-tokenizer, ByteLevel
// decoder, a BPE model with merges as pairs. The vocab object is written in
// id order, as Hugging Face does.
func (v *Vocabulary) tokenizerJSON() ([]byte, error) {
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var addedList []added
	for _, t := range addedTokens {
		addedList = append(addedList, added{ID: v.addedID[t.Content], Content: t.Content, Special: t.Special})
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}

	var vocab bytes.Buffer
	vocab.WriteByte('{')
	for id, tok := range v.bpe.tokens {
		if id > 0 {
			vocab.WriteByte(',')
		}
		k, err := marshalNoEscape(tok)
		if err != nil {
			return nil, err
		}
		vocab.Write(k)
		fmt.Fprintf(&vocab, ":%d", id)
	}
	vocab.WriteByte('}')

	doc := orderedObject{
		{"version", "1.0"},
		{"truncation", nil},
		{"padding", nil},
		{"added_tokens", addedList},
		{"normalizer", map[string]any{"type": "NFC"}},
		{"pre_tokenizer", map[string]any{"type": "Sequence", "pretokenizers": []any{
			orderedObject{
				{"type", "Split"},
				{"pattern", map[string]string{"Regex": qwenSplitPattern}},
				{"behavior", "Isolated"},
				{"invert", false},
			},
			byteLevel,
		}}},
		{"post_processor", byteLevel},
		{"decoder", byteLevel},
		{"model", orderedObject{
			{"type", "BPE"},
			{"dropout", nil},
			{"unk_token", nil},
			{"continuing_subword_prefix", ""},
			{"end_of_word_suffix", ""},
			{"fuse_unk", false},
			{"byte_fallback", false},
			{"ignore_merges", false},
			{"vocab", json.RawMessage(vocab.Bytes())},
			{"merges", v.bpe.merges},
		}},
	}
	return marshalIndent(doc)
}

// tokenizerConfigJSON renders tokenizer_config.json with the chat template.
func (v *Vocabulary) tokenizerConfigJSON() ([]byte, error) {
	decoder := orderedObject{}
	for _, t := range addedTokens {
		decoder = append(decoder, field{fmt.Sprint(v.addedID[t.Content]), orderedObject{
			{"content", t.Content},
			{"lstrip", false},
			{"normalized", false},
			{"rstrip", false},
			{"single_word", false},
			{"special", t.Special},
		}})
	}
	return marshalIndent(orderedObject{
		{"add_bos_token", false},
		{"add_prefix_space", false},
		{"added_tokens_decoder", decoder},
		{"additional_special_tokens", []string{"<|im_start|>", "<|im_end|>"}},
		{"bos_token", nil},
		{"chat_template", chatTemplate},
		{"clean_up_tokenization_spaces", false},
		{"eos_token", "<|im_end|>"},
		{"errors", "replace"},
		{"model_max_length", 262144},
		{"pad_token", "<|endoftext|>"},
		{"split_special_tokens", false},
		{"tokenizer_class", "Qwen2Tokenizer"},
		{"unk_token", nil},
	})
}

// chatTemplate is the Jinja chat template stored in tokenizer_config.json.
//
//go:embed chat_template.jinja
var chatTemplate string
