package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// piece is a pre-tokenized word. When byteLevel is set, the word the model
// sees is byteLevelString(text); the mapping is deferred so the BPE can start
// straight from the raw bytes.
type piece struct {
	text      string
	byteLevel bool
}

// modelText is the word as the model's vocabulary spells it.
func (p piece) modelText() string {
	if p.byteLevel {
		return byteLevelString(p.text)
	}
	return p.text
}

// preTokenizer splits each piece further (tokenizer.json "pre_tokenizer").
type preTokenizer interface {
	split(dst []piece, p piece) []piece
}

type preTokenizerSequence []preTokenizer

func (seq preTokenizerSequence) split(dst []piece, p piece) []piece {
	start := len(dst)
	dst = append(dst, p)
	var tmp []piece
	for _, pt := range seq {
		if bl, ok := pt.(*byteLevelPreTokenizer); ok && bl.mapsOnly() {
			for i := start; i < len(dst); i++ { // no split: flag in place
				dst[i] = bl.mapPiece(dst[i])
			}
			continue
		}
		tmp = append(tmp[:0], dst[start:]...)
		dst = dst[:start]
		for _, q := range tmp {
			dst = pt.split(dst, q)
		}
	}
	return dst
}

// delimiterBehavior says what Split does with the matched text.
type delimiterBehavior int

const (
	removed delimiterBehavior = iota
	isolated
	mergedWithPrevious
	mergedWithNext
	contiguous
)

var behaviors = map[string]delimiterBehavior{
	"Removed": removed, "Isolated": isolated, "MergedWithPrevious": mergedWithPrevious,
	"MergedWithNext": mergedWithNext, "Contiguous": contiguous,
}

// matcher finds the next occurrence of a Split pattern.
type matcher interface {
	next(s string, from int) (start, end int, ok bool)
}

type literalMatcher string

func (m literalMatcher) next(s string, from int) (int, int, bool) {
	k := strings.Index(s[from:], string(m))
	if k < 0 {
		return 0, 0, false
	}
	return from + k, from + k + len(m), true
}

type splitPreTokenizer struct {
	pattern  matcher
	behavior delimiterBehavior
	invert   bool
}

type span struct {
	start, end int
	match      bool
}

func (sp *splitPreTokenizer) split(dst []piece, p piece) []piece {
	s := p.modelText()
	if sp.behavior == isolated { // every GPT-4-style file; invert changes nothing here
		return splitIsolated(dst, s, sp.pattern, false)
	}
	var spans []span
	prev := 0
	for prev < len(s) {
		start, end, ok := sp.pattern.next(s, prev)
		if !ok {
			break
		}
		if start > prev {
			spans = append(spans, span{prev, start, sp.invert})
		}
		spans = append(spans, span{start, end, !sp.invert})
		prev = end
	}
	if prev < len(s) {
		spans = append(spans, span{prev, len(s), sp.invert})
	}
	for _, kept := range applyBehavior(spans, sp.behavior) {
		if kept.end > kept.start {
			dst = append(dst, piece{text: s[kept.start:kept.end]})
		}
	}
	return dst
}

// splitIsolated appends the matches of m in s and the text between them,
// each as its own piece.
func splitIsolated(dst []piece, s string, m matcher, byteLevel bool) []piece {
	prev := 0
	for prev < len(s) {
		start, end, ok := m.next(s, prev)
		if !ok {
			break
		}
		if start > prev {
			dst = append(dst, piece{text: s[prev:start], byteLevel: byteLevel})
		}
		dst = append(dst, piece{text: s[start:end], byteLevel: byteLevel})
		prev = end
	}
	if prev < len(s) {
		dst = append(dst, piece{text: s[prev:], byteLevel: byteLevel})
	}
	return dst
}

// applyBehavior merges or drops matched spans the way Hugging Face's
// NormalizedString::split does for each SplitDelimiterBehavior.
func applyBehavior(spans []span, b delimiterBehavior) []span {
	var out []span
	switch b {
	case isolated:
		return spans
	case removed:
		for _, s := range spans {
			if !s.match {
				out = append(out, s)
			}
		}
	case mergedWithPrevious:
		prevMatch := false
		for _, s := range spans {
			if s.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].end = s.end
			} else {
				out = append(out, s)
			}
			prevMatch = s.match
		}
	case mergedWithNext:
		prevMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			s := spans[i]
			if s.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].start = s.start
			} else {
				out = append(out, s)
			}
			prevMatch = s.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	case contiguous:
		prevMatch := false
		for i, s := range spans {
			if i > 0 && s.match == prevMatch {
				out[len(out)-1].end = s.end
			} else {
				out = append(out, s)
			}
			prevMatch = s.match
		}
	}
	return out
}

// gpt2Pattern is the split the ByteLevel pre-tokenizer does when use_regex
// is set.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// byteLevelPreTokenizer maps each piece to byte-level characters, after an
// optional prefix space and GPT-2 split.
type byteLevelPreTokenizer struct {
	addPrefixSpace bool
	regex          *scanner // nil unless use_regex
}

// mapsOnly reports whether the pre-tokenizer only maps bytes (the Qwen and
// Llama-3 form, after a Split), so it can work in place.
func (bl *byteLevelPreTokenizer) mapsOnly() bool { return bl.regex == nil && !bl.addPrefixSpace }

func (bl *byteLevelPreTokenizer) mapPiece(p piece) piece {
	// A second ByteLevel maps the already-mapped text again.
	return piece{text: p.modelText(), byteLevel: true}
}

func (bl *byteLevelPreTokenizer) split(dst []piece, p piece) []piece {
	text := p.modelText() // a second ByteLevel maps the already-mapped text again
	if bl.addPrefixSpace && !strings.HasPrefix(text, " ") {
		text = " " + text
	}
	if bl.regex == nil {
		return append(dst, piece{text: text, byteLevel: true})
	}
	return splitIsolated(dst, text, bl.regex, true)
}

type preTokenizerJSON struct {
	Type           string            `json:"type"`
	PreTokenizers  []json.RawMessage `json:"pretokenizers"`
	Pattern        *patternJSON      `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace bool              `json:"add_prefix_space"`
	UseRegex       *bool             `json:"use_regex"`
}

func parsePreTokenizer(raw json.RawMessage, path string) (preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var j preTokenizerJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch j.Type {
	case "Split":
		if j.Pattern == nil {
			return nil, fmt.Errorf("%s: Split needs \"pattern\"", path)
		}
		b, ok := behaviors[j.Behavior]
		if !ok {
			return nil, fmt.Errorf("%s: unknown Split behavior %q (want Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous)", path, j.Behavior)
		}
		sp := &splitPreTokenizer{behavior: b, invert: j.Invert}
		switch {
		case j.Pattern.Regex != nil:
			sc, err := compilePattern(*j.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			sp.pattern = sc
		case j.Pattern.String != nil && *j.Pattern.String != "":
			sp.pattern = literalMatcher(*j.Pattern.String)
		case j.Pattern.String != nil:
			sp.pattern = emptyMatcher{} // HF: an empty String pattern never matches
		default:
			return nil, fmt.Errorf("%s: Split pattern needs \"String\" or \"Regex\"", path)
		}
		return sp, nil
	case "ByteLevel":
		bl := &byteLevelPreTokenizer{addPrefixSpace: j.AddPrefixSpace}
		if j.UseRegex == nil || *j.UseRegex { // HF's default is true
			sc, err := compilePattern(gpt2Pattern)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			bl.regex = sc
		}
		return bl, nil
	case "Sequence":
		if j.PreTokenizers == nil {
			return nil, fmt.Errorf("%s: Sequence needs \"pretokenizers\"", path)
		}
		var seq preTokenizerSequence
		for i, sub := range j.PreTokenizers {
			pt, err := parsePreTokenizer(sub, fmt.Sprintf("%s.pretokenizers[%d]", path, i))
			if err != nil {
				return nil, err
			}
			if pt != nil {
				seq = append(seq, pt)
			}
		}
		return seq, nil
	case "":
		return nil, fmt.Errorf("%s: missing \"type\"", path)
	}
	return nil, fmt.Errorf("%s: unsupported pre-tokenizer type %q (supported: Split, ByteLevel, Sequence)", path, j.Type)
}

// emptyMatcher never matches (an empty String pattern).
type emptyMatcher struct{}

func (emptyMatcher) next(string, int) (int, int, bool) { return 0, 0, false }
