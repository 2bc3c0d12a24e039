package tensor

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// hdrScanner is a strict JSON scanner for the safetensors header: just
// enough of RFC 8259 (strings with escapes, numbers, objects, arrays) to walk
// the fixed schema, with no recursion. The input has already been checked
// to be valid UTF-8.
type hdrScanner struct {
	b []byte
	i int
}

// literal is a message fragment that needs no formatting.
type literal string

func (l literal) String() string { return string(l) }

// peek skips whitespace and returns the next byte, or 0 at the end.
func (s *hdrScanner) peek() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
	}
	return 0
}

func (s *hdrScanner) syntax(format string, args ...any) *FormatError {
	return formatErr(RuleHeaderJSON, "at byte %d: "+format, append([]any{s.i}, args...)...)
}

// kindErr reports a value of the wrong kind under rule, or malformed JSON
// under the JSON rule when what follows cannot start any JSON value.
func (s *hdrScanner) kindErr(rule, format string, args ...any) *FormatError {
	switch s.peek() {
	case '"', '{', '[', 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return formatErr(rule, format, args...)
	}
	return formatErr(RuleHeaderJSON, format, args...)
}

// expect consumes the delimiter c; anything else is an error under
// wrongKind (a well-formed value of another kind) or the JSON rule.
func (s *hdrScanner) expect(c byte, where fmt.Stringer, wrongKind string) error {
	if s.peek() == c {
		s.i++
		return nil
	}
	return s.kindErr(wrongKind, "%s: expected %q, found %s", where, c, s.describeNext())
}

// members walks an object whose '{' has been consumed, rejecting duplicate
// keys, and calls value for each key with the scanner at its value.
func (s *hdrScanner) members(where fmt.Stringer, value func(key string) error) error {
	if s.peek() == '}' {
		s.i++
		return nil
	}
	seen := map[string]bool{}
	for {
		if s.peek() != '"' {
			return s.syntax("in %s: expected a string key, found %s", where, s.describeNext())
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		if seen[key] {
			return formatErr(RuleDuplicateKey, "key %q appears twice in %s", key, where)
		}
		seen[key] = true
		if s.peek() != ':' {
			return s.syntax("in %s: expected ':' after key %q, found %s", where, key, s.describeNext())
		}
		s.i++
		if err := value(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.syntax("in %s: expected ',' or '}', found %s", where, s.describeNext())
		}
	}
}

// str reads a string literal starting at the opening quote.
func (s *hdrScanner) str() (string, error) {
	start := s.i
	s.i++
	// Fast path: no escapes.
	for j := s.i; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return string(s.b[start+1 : j]), nil
		case c == '\\':
			return s.strEscaped(start)
		case c < 0x20:
			s.i = j
			return "", s.syntax("control character %#02x in a string", c)
		}
	}
	s.i = start
	return "", s.syntax("unterminated string")
}

func (s *hdrScanner) strEscaped(start int) (string, error) {
	out := make([]byte, 0, 32)
	for j := start + 1; j < len(s.b); {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return string(out), nil
		case c < 0x20:
			s.i = j
			return "", s.syntax("control character %#02x in a string", c)
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(s.b) {
			break
		}
		esc := s.b[j+1]
		j += 2
		switch esc {
		case '"', '\\', '/':
			out = append(out, esc)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s.b, j)
			if !ok {
				s.i = j
				return "", s.syntax(`invalid \u escape`)
			}
			j += 4
			if utf16.IsSurrogate(r) {
				// A pair combines; a lone half becomes U+FFFD, as encoding/json does.
				r2, ok := rune(0), false
				if j+6 <= len(s.b) && s.b[j] == '\\' && s.b[j+1] == 'u' {
					r2, ok = hex4(s.b, j+2)
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					j += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			s.i = j - 2
			return "", s.syntax("invalid escape \\%c", esc)
		}
	}
	s.i = start
	return "", s.syntax("unterminated string")
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[at:at+4]), 16, 32)
	return rune(v), err == nil
}

// number reads a JSON number and reports whether it is written as an
// integer (no fraction or exponent).
func (s *hdrScanner) number() (lit string, isInt bool, err error) {
	start := s.i
	j := s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(s.b) && s.b[j] == '0' {
		j++
	} else if digits() == 0 {
		s.i = j
		return "", false, s.syntax("malformed number")
	}
	isInt = true
	if j < len(s.b) && s.b[j] == '.' {
		j++
		isInt = false
		if digits() == 0 {
			s.i = j
			return "", false, s.syntax("malformed number")
		}
	}
	if j < len(s.b) && (s.b[j] == 'e' || s.b[j] == 'E') {
		j++
		isInt = false
		if j < len(s.b) && (s.b[j] == '+' || s.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			s.i = j
			return "", false, s.syntax("malformed number")
		}
	}
	s.i = j
	return string(s.b[start:j]), isInt, nil
}

// describeNext names what comes next, for messages; it does not consume it.
func (s *hdrScanner) describeNext() string {
	c := s.peek()
	switch {
	case s.i >= len(s.b):
		return "end of header"
	case c == '"':
		save := s.i
		v, err := s.str()
		s.i = save
		if err != nil {
			return "a malformed string"
		}
		return "string " + strconv.Quote(v)
	case c == '-' || (c >= '0' && c <= '9'):
		save := s.i
		lit, _, err := s.number()
		s.i = save
		if err != nil {
			return "a malformed number"
		}
		return "number " + lit
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	}
	for _, lit := range []string{"true", "false", "null"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			return lit
		}
	}
	return fmt.Sprintf("invalid JSON (unexpected %q)", c)
}
