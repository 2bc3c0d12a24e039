package jinja

import (
	"strings"
	"unicode/utf8"
)

type tokKind int

const (
	tText tokKind = iota
	tComment
	tNumber
	tString
	tName
	tOp // + - ~ * / // % ** < > <= >= == !=
	tAssign
	tOpenStmt
	tCloseStmt
	tOpenExpr
	tCloseExpr
	tLParen
	tRParen
	tLBracket
	tRBracket
	tLBrace
	tRBrace
	tComma
	tDot
	tColon
	tPipe
)

var kindNames = [...]string{"text", "comment", "number", "string", "name", "operator", "'='",
	"'{%'", "'%}'", "'{{'", "'}}'", "'('", "')'", "'['", "']'", "'{'", "'}'", "','", "'.'", "':'", "'|'"}

func (k tokKind) String() string { return kindNames[k] }

type token struct {
	kind tokKind
	val  string
	line int
}

// symbols in match order: longer sequences first where they share a prefix.
var symbols = []struct {
	s    string
	kind tokKind
}{
	{"{%", tOpenStmt}, {"%}", tCloseStmt}, {"{{", tOpenExpr}, {"}}", tCloseExpr},
	{"(", tLParen}, {")", tRParen}, {"{", tLBrace}, {"}", tRBrace}, {"[", tLBracket}, {"]", tRBracket},
	{",", tComma}, {".", tDot}, {":", tColon}, {"|", tPipe},
	{"<=", tOp}, {">=", tOp}, {"==", tOp}, {"!=", tOp}, {"<", tOp}, {">", tOp},
	{"+", tOp}, {"-", tOp}, {"~", tOp}, {"**", tOp}, {"*", tOp}, {"//", tOp}, {"/", tOp}, {"%", tOp},
	{"=", tAssign},
}

var escapes = map[byte]string{'n': "\n", 't': "\t", 'r': "\r", 'b': "\b", 'f': "\f", 'v': "\v",
	'\'': "'", '"': "\"", '\\': "\\"}

// isSpace is JavaScript's \s (the reference renderer's notion of
// whitespace for whitespace control), which differs from unicode.IsSpace
// in U+0085 and U+FEFF.
func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// source is template text after Hugging Face's preprocessing, with the
// original line of every byte so errors point at the line the author wrote.
type source struct {
	text []byte
	line []int32
}

func (s *source) add(c byte, line int32) {
	s.text = append(s.text, c)
	s.line = append(s.line, line)
}

// preprocess applies the settings Hugging Face renders chat templates
// with: one trailing newline dropped, lstrip_blocks (spaces and tabs
// before a block or comment at the start of a line removed), trim_blocks
// (the newline after a block or comment removed), and the HF-only
// {% generation %} tags removed.
func preprocess(src string) source {
	src = strings.TrimSuffix(src, "\n")
	in := source{text: make([]byte, 0, len(src)), line: make([]int32, 0, len(src))}
	line := int32(1)
	for i := 0; i < len(src); i++ {
		if i == 0 || src[i-1] == '\n' { // lstrip_blocks
			j := i
			for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
				j++
			}
			if j+1 < len(src) && src[j] == '{' && strings.IndexByte("#%-", src[j+1]) >= 0 {
				i = j
			}
		}
		if src[i] == '\n' && i >= 2 && src[i-1] == '}' && strings.IndexByte("#%-", src[i-2]) >= 0 {
			line++ // trim_blocks
			continue
		}
		in.add(src[i], line)
		if src[i] == '\n' {
			line++
		}
	}
	return stripGenerationTags(in)
}

// stripGenerationTags removes {% generation %} and {% endgeneration %},
// honouring their whitespace-control dashes.
func stripGenerationTags(in source) source {
	if !strings.Contains(string(in.text), "generation") {
		return in
	}
	out := source{}
	t := in.text
	for i := 0; i < len(t); {
		if end, lstrip, rstrip, ok := matchGenerationTag(t, i); ok {
			if lstrip {
				for len(out.text) > 0 {
					r, n := utf8.DecodeLastRune(out.text)
					if !isSpace(r) {
						break
					}
					out.text, out.line = out.text[:len(out.text)-n], out.line[:len(out.line)-n]
				}
			}
			i = end
			if rstrip {
				for i < len(t) {
					r, n := utf8.DecodeRune(t[i:])
					if !isSpace(r) {
						break
					}
					i += n
				}
			}
			continue
		}
		out.add(t[i], in.line[i])
		i++
	}
	return out
}

func matchGenerationTag(t []byte, i int) (end int, lstrip, rstrip, ok bool) {
	if !strings.HasPrefix(string(t[i:min(len(t), i+2)]), "{%") {
		return 0, false, false, false
	}
	j := i + 2
	if j < len(t) && t[j] == '-' {
		lstrip = true
		j++
	}
	skip := func() {
		for j < len(t) {
			r, n := utf8.DecodeRune(t[j:])
			if !isSpace(r) {
				return
			}
			j += n
		}
	}
	skip()
	rest := string(t[j:min(len(t), j+13)])
	switch {
	case strings.HasPrefix(rest, "endgeneration"):
		j += len("endgeneration")
	case strings.HasPrefix(rest, "generation"):
		j += len("generation")
	default:
		return 0, false, false, false
	}
	skip()
	if j < len(t) && t[j] == '-' {
		rstrip = true
		j++
	}
	if j+1 < len(t) && t[j] == '%' && t[j+1] == '}' {
		return j + 2, lstrip, rstrip, true
	}
	return 0, false, false, false
}

// lex splits preprocessed source into tokens, applying {%- -%} {{- -}}
// {#- -#} whitespace control as it goes.
func lex(src string) ([]token, error) {
	s := preprocess(src)
	t := s.text
	var toks []token
	pos := 0
	lineAt := func(p int) int {
		if p < len(s.line) {
			return int(s.line[p])
		}
		if len(s.line) > 0 {
			return int(s.line[len(s.line)-1])
		}
		return 1
	}
	emit := func(k tokKind, v string, p int) { toks = append(toks, token{k, v, lineAt(p)}) }
	stripTrailing := func() {
		if n := len(toks); n > 0 && toks[n-1].kind == tText {
			toks[n-1].val = strings.TrimRightFunc(toks[n-1].val, isSpace)
			if toks[n-1].val == "" {
				toks = toks[:n-1]
			}
		}
	}
	skipSpace := func() {
		for pos < len(t) {
			r, n := utf8.DecodeRune(t[pos:])
			if !isSpace(r) {
				return
			}
			pos += n
		}
	}
	hasPrefix := func(p string) bool { return strings.HasPrefix(string(t[pos:min(len(t), pos+len(p))]), p) }
	braceDepth := 0

	for pos < len(t) {
		if n := len(toks); n == 0 || toks[n-1].kind == tCloseStmt || toks[n-1].kind == tCloseExpr || toks[n-1].kind == tComment {
			start := pos
			for pos < len(t) && !(t[pos] == '{' && pos+1 < len(t) && (t[pos+1] == '%' || t[pos+1] == '{' || t[pos+1] == '#')) {
				pos++
			}
			if pos > start {
				emit(tText, string(t[start:pos]), start)
				continue
			}
		}
		start := pos
		if hasPrefix("{#") {
			pos += 2
			stripBefore := pos < len(t) && t[pos] == '-'
			if stripBefore {
				pos++
			}
			end := strings.Index(string(t[pos:]), "#}")
			if end < 0 {
				return nil, &Error{Line: lineAt(start), Msg: "comment {# is never closed with #}"}
			}
			body := string(t[pos : pos+end])
			stripAfter := strings.HasSuffix(body, "-")
			if stripBefore {
				stripTrailing()
			}
			emit(tComment, strings.TrimSuffix(body, "-"), start)
			pos += end + 2
			if stripAfter {
				skipSpace()
			}
			continue
		}
		if hasPrefix("{%-") || hasPrefix("{{-") {
			stripTrailing()
			if t[pos+1] == '%' {
				emit(tOpenStmt, "{%", start)
			} else {
				emit(tOpenExpr, "{{", start)
				braceDepth = 0
			}
			pos += 3
			continue
		}
		skipSpace()
		if pos >= len(t) {
			break
		}
		start = pos
		if hasPrefix("-%}") || hasPrefix("-}}") {
			if t[pos+1] == '%' {
				emit(tCloseStmt, "%}", start)
			} else {
				emit(tCloseExpr, "}}", start)
			}
			pos += 3
			skipSpace()
			continue
		}
		c := t[pos]
		if c == '\'' || c == '"' {
			str, end, err := lexString(t, pos)
			if err != nil {
				return nil, &Error{Line: lineAt(start), Msg: err.Error()}
			}
			emit(tString, str, start)
			pos = end
			continue
		}
		if isDigit(c) {
			for pos < len(t) && isDigit(t[pos]) {
				pos++
			}
			afterDot := len(toks) > 0 && toks[len(toks)-1].kind == tDot
			if !afterDot && pos+1 < len(t) && t[pos] == '.' && isDigit(t[pos+1]) {
				pos++
				for pos < len(t) && isDigit(t[pos]) {
					pos++
				}
			}
			emit(tNumber, string(t[start:pos]), start)
			continue
		}
		matched := false
		for _, sym := range symbols {
			if sym.kind == tCloseExpr && braceDepth > 0 {
				continue
			}
			if hasPrefix(sym.s) {
				emit(sym.kind, sym.s, start)
				switch sym.kind {
				case tOpenExpr:
					braceDepth = 0
				case tLBrace:
					braceDepth++
				case tRBrace:
					braceDepth--
				}
				pos += len(sym.s)
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		if isWordByte(c) {
			for pos < len(t) && isWordByte(t[pos]) {
				pos++
			}
			emit(tName, string(t[start:pos]), start)
			continue
		}
		r, _ := utf8.DecodeRune(t[pos:])
		return nil, &Error{Line: lineAt(start), Msg: "unexpected character " + quoteRune(r)}
	}
	return toks, nil
}

func quoteRune(r rune) string {
	if r == utf8.RuneError {
		return "(invalid UTF-8)"
	}
	return "'" + string(r) + "'"
}

// lexString reads a quoted string literal starting at t[pos].
func lexString(t []byte, pos int) (string, int, error) {
	q := t[pos]
	pos++
	var b strings.Builder
	for {
		if pos >= len(t) {
			return "", 0, errUnterminated
		}
		c := t[pos]
		if c == q {
			return b.String(), pos + 1, nil
		}
		if c != '\\' {
			b.WriteByte(c)
			pos++
			continue
		}
		pos++
		if pos >= len(t) {
			return "", 0, errUnterminated
		}
		e := t[pos]
		pos++
		if e == 'x' || e == 'u' {
			n := 2
			if e == 'u' {
				n = 4
			}
			if pos+n > len(t) {
				return "", 0, errBadHexEscape
			}
			var r rune
			for _, h := range t[pos : pos+n] {
				d := hexDigit(h)
				if d < 0 {
					return "", 0, errBadHexEscape
				}
				r = r<<4 | rune(d)
			}
			b.WriteRune(r)
			pos += n
			continue
		}
		rep, ok := escapes[e]
		if !ok {
			return "", 0, &lexErr{"unknown escape \\" + string(rune(e)) + " in string literal"}
		}
		b.WriteString(rep)
	}
}

type lexErr struct{ msg string }

func (e *lexErr) Error() string { return e.msg }

var (
	errUnterminated = &lexErr{"string literal is never closed"}
	errBadHexEscape = &lexErr{"bad \\x or \\u escape in string literal"}
)

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
