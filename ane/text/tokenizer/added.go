package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json "added_tokens".
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// addedMatcher finds added tokens in text the way Hugging Face's
// AddedVocabulary does: leftmost-longest matches (Aho-Corasick
// LeftmostLongest), then the single_word / lstrip / rstrip rules.
type addedMatcher struct {
	tokens  []addedToken
	pattern []string   // what is matched: the content, normalized if the token is
	byFirst [256][]int // token indexes by first byte of pattern, longest first
	any     bool       // any tokens at all
}

func newAddedMatcher(tokens []addedToken, patterns []string) *addedMatcher {
	m := &addedMatcher{tokens: tokens, pattern: patterns}
	for i, p := range patterns {
		if p == "" {
			continue
		}
		m.any = true
		list := m.byFirst[p[0]]
		k := len(list)
		for k > 0 && len(patterns[list[k-1]]) < len(p) {
			k--
		}
		list = append(list, 0)
		copy(list[k+1:], list[k:])
		list[k] = i
		m.byFirst[p[0]] = list
	}
	return m
}

// find returns the leftmost-longest raw match at or after from.
func (m *addedMatcher) find(s string, from int) (start, end, tok int, ok bool) {
	for i := from; i < len(s); i++ {
		for _, k := range m.byFirst[s[i]] {
			if strings.HasPrefix(s[i:], m.pattern[k]) {
				return i, i + len(m.pattern[k]), k, true
			}
		}
	}
	return 0, 0, 0, false
}

// split calls emit for each segment of s in order: plain text with id < 0,
// or an added token's id (the token's text, with any stripped whitespace,
// is consumed).
func (m *addedMatcher) split(s string, emit func(text string, id int)) {
	if !m.any {
		emit(s, -1)
		return
	}
	done := 0 // end of the last emitted segment
	for from := 0; from < len(s); {
		start, end, k, ok := m.find(s, from)
		if !ok {
			break
		}
		from = end
		tok := &m.tokens[k]
		if start < done {
			continue // inside whitespace a previous rstrip consumed
		}
		if tok.SingleWord && (endsWithWordChar(s[:start]) || startsWithWordChar(s[end:])) {
			continue
		}
		if tok.LStrip {
			start = max(done, len(strings.TrimRightFunc(s[:start], unicode.IsSpace)))
		}
		if tok.RStrip {
			end = len(s) - len(strings.TrimLeftFunc(s[end:], unicode.IsSpace))
			from = end
		}
		if start > done {
			emit(s[done:start], -1)
		}
		emit("", tok.ID)
		done = end
	}
	if done < len(s) {
		emit(s[done:], -1)
	}
}

// isWordChar is Rust regex's Unicode \w: Alphabetic, marks, decimal
// digits, connector punctuation and joiners.
func isWordChar(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || (r|0x20) >= 'a' && (r|0x20) <= 'z' || r >= '0' && r <= '9'
	}
	return unicode.In(r, unicode.L, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Nd, unicode.Pc, unicode.Join_Control)
}

func endsWithWordChar(s string) bool {
	r, size := utf8.DecodeLastRuneInString(s)
	return size > 0 && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	return size > 0 && isWordChar(r)
}
