package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Go's regexp (RE2) has no lookahead, and the GPT-2 / GPT-4 / Llama-3 /
// Qwen pre-tokenizer patterns need one (`\s+(?!\S)`). Instead of a general
// backtracking engine, a pattern is split into its top-level alternatives
// and each one must be a construct this file knows; each has a hand-written
// matcher that reproduces the leftmost-first, greedy-with-backtracking
// semantics of the Oniguruma engine Hugging Face tokenizers uses. Anything
// else is rejected when the tokenizer is loaded.

// alternative matches at byte offset i of s and returns the end of the
// match, or -1. A match is never empty.
type alternative func(s string, i int) int

// scanner finds successive matches of a pattern (find_iter semantics).
type scanner struct {
	alts []alternative
}

// next returns the leftmost match starting at or after from.
func (p *scanner) next(s string, from int) (start, end int, ok bool) {
	for i := from; i < len(s); {
		for _, alt := range p.alts {
			if e := alt(s, i); e > i {
				return i, e, true
			}
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return 0, 0, false
}

// knownAlternatives are the regex pieces of the supported pattern family,
// spelled exactly as they appear in tokenizer.json files.
var knownAlternatives = map[string]alternative{
	` ?\p{L}+`:                  optSpaceThen(letterRun),
	`[^\r\n\p{L}\p{N}]?\p{L}+`:  otherPrefixLetters,
	`\p{L}+`:                    letterRun,
	`\p{N}`:                     numbers(1),
	`\p{N}+`:                    numbers(0),
	`\p{N}{1,3}`:                numbers(3),
	` ?\p{N}+`:                  optSpaceThen(numbers(0)),
	` ?[^\s\p{L}\p{N}]+`:        optSpaceThen(otherRun),
	` ?[^\s\p{L}\p{N}]+[\r\n]*`: optSpaceThen(otherRunThenNewlines),
	`\s*[\r\n]+`:                spacesThroughLastNewline,
	`\s+(?!\S)`:                 spacesNotBeforeText,
	`\s+`:                       spaceRun,
	`[^\s\p{L}\p{N}]+`:          otherRun,
	`[^\s\p{L}\p{N}]+[\r\n]*`:   otherRunThenNewlines,
}

// compilePattern builds a scanner for a Split / ByteLevel regex.
func compilePattern(pattern string) (*scanner, error) {
	parts, err := splitAlternatives(pattern)
	if err != nil {
		return nil, err
	}
	p := &scanner{}
	for _, part := range parts {
		alt, err := compileAlternative(part)
		if err != nil {
			return nil, fmt.Errorf("unsupported Split pattern %q: %w", pattern, err)
		}
		p.alts = append(p.alts, alt...)
	}
	return p, nil
}

func compileAlternative(part string) ([]alternative, error) {
	if alt := knownAlternatives[part]; alt != nil {
		return []alternative{alt}, nil
	}
	fold := false
	lits := []string{part}
	if inner, ok := strings.CutPrefix(part, "(?i:"); ok && strings.HasSuffix(inner, ")") {
		fold = true
		lits = strings.Split(inner[:len(inner)-1], "|")
	} else if inner, ok := strings.CutPrefix(part, "(?:"); ok && strings.HasSuffix(inner, ")") {
		lits = strings.Split(inner[:len(inner)-1], "|")
	}
	for _, lit := range lits {
		if lit == "" || strings.ContainsAny(lit, `\.^$|?*+()[]{}`) {
			return nil, fmt.Errorf("alternative %q is not in the supported GPT-2/GPT-4/Llama-3/Qwen pattern family", part)
		}
	}
	return []alternative{literals(lits, fold)}, nil
}

// splitAlternatives splits a pattern on its top-level '|'.
func splitAlternatives(pattern string) ([]string, error) {
	var parts []string
	depth, inClass, start := 0, false, 0
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("Split pattern %q: unbalanced ')'", pattern)
			}
		case c == '|' && depth == 0:
			parts = append(parts, pattern[start:i])
			start = i + 1
		}
	}
	if depth != 0 || inClass {
		return nil, fmt.Errorf("Split pattern %q: unbalanced brackets", pattern)
	}
	return append(parts, pattern[start:]), nil
}

// Character classes. \s is Unicode White_Space (Oniguruma and Rust regex
// agree; JavaScript's \s differs by adding U+FEFF and dropping U+0085).
// An invalid UTF-8 byte decodes as U+FFFD and so falls in "other".

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return unicode.Is(unicode.White_Space, r)
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return (r|0x20) >= 'a' && (r|0x20) <= 'z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isOther(r rune) bool { return !isSpace(r) && !isLetter(r) && !isNumber(r) }

func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// run returns the end of the longest run of runes satisfying class from i.
func run(s string, i int, class func(rune) bool) int {
	for i < len(s) {
		r, size := runeAt(s, i)
		if !class(r) {
			break
		}
		i += size
	}
	return i
}

func matchedRun(s string, i int, class func(rune) bool) int {
	if e := run(s, i, class); e > i {
		return e
	}
	return -1
}

func letterRun(s string, i int) int { return matchedRun(s, i, isLetter) }
func spaceRun(s string, i int) int  { return matchedRun(s, i, isSpace) }
func otherRun(s string, i int) int  { return matchedRun(s, i, isOther) }

// ` ?X`: the optional space is tried first; if X then fails, the regex
// backtracks to X at the space itself, which none of the X here accept.
func optSpaceThen(x alternative) alternative {
	return func(s string, i int) int {
		if s[i] == ' ' && i+1 < len(s) {
			if e := x(s, i+1); e > 0 {
				return e
			}
		}
		return x(s, i)
	}
}

// `[^\r\n\p{L}\p{N}]?\p{L}+`
func otherPrefixLetters(s string, i int) int {
	r, size := runeAt(s, i)
	if r != '\r' && r != '\n' && !isLetter(r) && !isNumber(r) {
		if i+size < len(s) {
			if e := letterRun(s, i+size); e > 0 {
				return e
			}
		}
		return -1 // backtracking puts \p{L}+ at r, which is not a letter
	}
	return letterRun(s, i)
}

// numbers is `\p{N}+` (max 0) or `\p{N}{1,max}`.
func numbers(max int) alternative {
	return func(s string, i int) int {
		e := i
		for n := 0; e < len(s) && (max == 0 || n < max); n++ {
			r, size := runeAt(s, e)
			if !isNumber(r) {
				break
			}
			e += size
		}
		if e == i {
			return -1
		}
		return e
	}
}

// `[^\s\p{L}\p{N}]+[\r\n]*`
func otherRunThenNewlines(s string, i int) int {
	e := otherRun(s, i)
	if e < 0 {
		return -1
	}
	for e < len(s) && (s[e] == '\r' || s[e] == '\n') {
		e++
	}
	return e
}

// `\s*[\r\n]+`: \s* first takes the whole whitespace run, then gives it back
// until [\r\n]+ can match, so the match ends just after the run's last
// line break. (Multi-byte whitespace never contains the bytes \r or \n.)
func spacesThroughLastNewline(s string, i int) int {
	e := run(s, i, isSpace)
	for k := e - 1; k >= i; k-- {
		if s[k] == '\r' || s[k] == '\n' {
			return k + 1
		}
	}
	return -1
}

// `\s+(?!\S)`: the whole whitespace run at the end of the text; otherwise
// the run minus its last character, which is left to join the next word.
func spacesNotBeforeText(s string, i int) int {
	e := run(s, i, isSpace)
	if e == i {
		return -1
	}
	if e == len(s) {
		return e
	}
	_, size := utf8.DecodeLastRuneInString(s[i:e])
	if e-size > i {
		return e - size
	}
	return -1
}

// literals matches the first of lits that matches at i, exactly or under
// Unicode simple case folding (as (?i) does in Oniguruma and Rust regex:
// `'s` also matches "'S" and "'ſ").
func literals(lits []string, fold bool) alternative {
	// Most positions can be ruled out by their first byte (an apostrophe
	// for the contractions); only first characters with case variants
	// need the slow path.
	var firstBytes [256]bool
	anyFirst := false
	for _, lit := range lits {
		r, _ := utf8.DecodeRuneInString(lit)
		if fold && unicode.SimpleFold(r) != r {
			anyFirst = true
		}
		firstBytes[lit[0]] = true
	}
	return func(s string, i int) int {
		if !anyFirst && !firstBytes[s[i]] {
			return -1
		}
		for _, lit := range lits {
			if e := matchLiteral(s, i, lit, fold); e > 0 {
				return e
			}
		}
		return -1
	}
}

func matchLiteral(s string, i int, lit string, fold bool) int {
	if !fold {
		if strings.HasPrefix(s[i:], lit) {
			return i + len(lit)
		}
		return -1
	}
	e := i
	for _, want := range lit {
		if e >= len(s) {
			return -1
		}
		r, size := runeAt(s, e)
		if !equalFold(r, want) {
			return -1
		}
		e += size
	}
	return e
}

func equalFold(r, want rune) bool {
	if r == want {
		return true
	}
	for f := unicode.SimpleFold(want); f != want; f = unicode.SimpleFold(f) {
		if f == r {
			return true
		}
	}
	return false
}
