package tensor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// MaxNPYHeaderSize bounds the dict literal of a .npy header.
const MaxNPYHeaderSize = 65536

var npyMagic = []byte("\x93NUMPY")

// npyItemSizes lists the .npy dtypes this package reads and writes.
var npyItemSizes = map[string]int{"<f2": 2, "<f4": 4, "<i4": 4, "<i8": 8, "|u1": 1, "|i1": 1}

// NPYHeader is the parsed header of a .npy file.
type NPYHeader struct {
	Major, Minor int
	Descr        string // one of <f2 <f4 <i4 <i8 |u1 |i1
	FortranOrder bool   // always false for a header that validated
	Shape        []int
	DataOffset   int64 // where the array data starts in the file
}

// ItemSize is the size of one element in bytes.
func (h NPYHeader) ItemSize() int { return npyItemSizes[h.Descr] }

// DataSize is product(Shape) × ItemSize (validated not to overflow).
func (h NPYHeader) DataSize() int64 {
	n, _ := byteSize(h.Shape, h.ItemSize())
	return n
}

// ReadNPYHeader reads and validates a .npy header from r, leaving r at the
// start of the data. It does not know the file size, so the data length is
// checked by OpenNPY, not here.
func ReadNPYHeader(r io.Reader) (NPYHeader, error) {
	var h NPYHeader
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return h, formatErr(RuleNPYMagic, "file too short for the 8-byte .npy preamble (%v)", err)
	}
	if !bytes.Equal(pre[:6], npyMagic) {
		return h, formatErr(RuleNPYMagic, "missing the \\x93NUMPY magic string")
	}
	h.Major, h.Minor = int(pre[6]), int(pre[7])
	var n int64
	switch {
	case h.Major == 1 && h.Minor == 0:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return h, formatErr(RuleNPYHeader, "truncated header length")
		}
		n = int64(binary.LittleEndian.Uint16(l[:]))
		h.DataOffset = 10 + n
	case (h.Major == 2 || h.Major == 3) && h.Minor == 0:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return h, formatErr(RuleNPYHeader, "truncated header length")
		}
		n = int64(binary.LittleEndian.Uint32(l[:]))
		h.DataOffset = 12 + n
	default:
		return h, formatErr(RuleNPYMagic, "unsupported format version %d.%d (want 1.0, 2.0 or 3.0)", h.Major, h.Minor)
	}
	if n > MaxNPYHeaderSize {
		return h, formatErr(RuleNPYHeader, "header length %d exceeds the %d-byte limit", n, MaxNPYHeaderSize)
	}
	text := make([]byte, n)
	if _, err := io.ReadFull(r, text); err != nil {
		return h, formatErr(RuleNPYHeader, "file ends inside the %d-byte header", n)
	}
	if err := parseNPYDict(text, h.Major, &h); err != nil {
		return h, err
	}
	return h, nil
}

// parseNPYDict parses the header text: a Python dict literal with exactly
// the keys descr, fortran_order and shape, padded with spaces and ending
// in a newline. Version 3 headers are UTF-8; older ones are ASCII (latin-1
// in theory, but every valid key and value is ASCII).
func parseNPYDict(text []byte, major int, h *NPYHeader) error {
	if len(text) == 0 || text[len(text)-1] != '\n' {
		return formatErr(RuleNPYHeader, "header does not end with a newline")
	}
	if major == 3 && !utf8.Valid(text) {
		return formatErr(RuleNPYHeader, "version 3 header is not valid UTF-8")
	}
	p := &pyParser{s: text}
	if err := p.expect('{'); err != nil {
		return err
	}
	seen := map[string]bool{}
	for {
		p.space()
		if p.peek() == '}' {
			p.i++
			break
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		if seen[key] {
			return formatErr(RuleNPYHeader, "key %q appears twice", key)
		}
		seen[key] = true
		if err := p.expect(':'); err != nil {
			return err
		}
		switch key {
		case "descr":
			d, err := p.str()
			if err != nil {
				return err
			}
			if _, ok := npyItemSizes[d]; !ok {
				return formatErr(RuleNPYDescr, "dtype %q is not supported (want <f2 <f4 <i4 <i8 |u1 |i1)", d)
			}
			h.Descr = d
		case "fortran_order":
			b, err := p.boolean()
			if err != nil {
				return err
			}
			if b {
				return formatErr(RuleNPYOrder, "fortran_order is True: only C-order arrays are supported")
			}
			h.FortranOrder = b
		case "shape":
			shape, err := p.tuple()
			if err != nil {
				return err
			}
			h.Shape = shape
		default:
			return formatErr(RuleNPYHeader, "unexpected key %q (want descr, fortran_order, shape)", key)
		}
		p.space()
		if p.peek() == ',' {
			p.i++
			continue
		}
		if err := p.expect('}'); err != nil {
			return err
		}
		break
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return formatErr(RuleNPYHeader, "missing key %q", k)
		}
	}
	// Only padding may follow the dict.
	for _, c := range text[p.i : len(text)-1] {
		if c != ' ' && c != '\t' && c != '\x00' {
			return formatErr(RuleNPYHeader, "unexpected %q after the header dict", c)
		}
	}
	if _, ok := byteSize(h.Shape, h.ItemSize()); !ok {
		return formatErr(RuleNPYShape, "shape %v × %d bytes overflows", h.Shape, h.ItemSize())
	}
	return nil
}

// pyParser reads the small subset of Python literal syntax .npy headers use.
type pyParser struct {
	s []byte
	i int
}

func (p *pyParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *pyParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *pyParser) expect(c byte) error {
	p.space()
	if p.peek() != c {
		return formatErr(RuleNPYHeader, "expected %q at byte %d, found %s", c, p.i, p.found())
	}
	p.i++
	return nil
}

func (p *pyParser) found() string {
	if p.i >= len(p.s) {
		return "end of header"
	}
	return strconv.QuoteRune(rune(p.s[p.i]))
}

// str reads a quoted string without escapes (none occur in valid headers).
func (p *pyParser) str() (string, error) {
	p.space()
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", formatErr(RuleNPYHeader, "expected a quoted string at byte %d, found %s", p.i, p.found())
	}
	start := p.i + 1
	end := bytes.IndexByte(p.s[start:], q)
	if end < 0 {
		return "", formatErr(RuleNPYHeader, "unterminated string at byte %d", p.i)
	}
	s := p.s[start : start+end]
	if bytes.ContainsAny(s, "\\\n") {
		return "", formatErr(RuleNPYHeader, "string at byte %d contains an escape or newline", p.i)
	}
	p.i = start + end + 1
	return string(s), nil
}

func (p *pyParser) boolean() (bool, error) {
	p.space()
	for _, w := range []struct {
		lit string
		v   bool
	}{{"True", true}, {"False", false}} {
		if bytes.HasPrefix(p.s[p.i:], []byte(w.lit)) {
			p.i += len(w.lit)
			return w.v, nil
		}
	}
	return false, formatErr(RuleNPYHeader, "fortran_order must be True or False, found %s", p.found())
}

// tuple reads a shape: "()", "(n,)" or "(a, b, ...)" with an optional
// trailing comma, each entry a non-negative decimal integer.
func (p *pyParser) tuple() ([]int, error) {
	if err := p.expect('('); err != nil {
		return nil, asShape(err)
	}
	shape := []int{}
	comma := false // whether the last entry was followed by a comma
	for {
		p.space()
		if p.peek() == ')' {
			p.i++
			if len(shape) == 1 && !comma {
				return nil, formatErr(RuleNPYShape, "(n) is not a tuple; a one-dimensional shape is written (n,)")
			}
			return shape, nil
		}
		if len(shape) > 0 && !comma {
			return nil, formatErr(RuleNPYShape, "expected ',' or ')' in shape at byte %d, found %s", p.i, p.found())
		}
		start := p.i
		if p.peek() == '-' {
			return nil, formatErr(RuleNPYShape, "shape[%d] is negative", len(shape))
		}
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		if start == p.i {
			return nil, formatErr(RuleNPYShape, "shape[%d]: expected a non-negative integer, found %s", len(shape), p.found())
		}
		v, err := strconv.ParseInt(string(p.s[start:p.i]), 10, 64)
		if err != nil || v > math.MaxInt || (p.i-start > 1 && p.s[start] == '0') {
			return nil, formatErr(RuleNPYShape, "shape[%d] = %s is not a valid integer", len(shape), p.s[start:p.i])
		}
		shape = append(shape, int(v))
		p.space()
		comma = p.peek() == ','
		if comma {
			p.i++
		}
	}
}

func asShape(err error) error {
	if fe, ok := err.(*FormatError); ok {
		fe.Rule = RuleNPYShape
		fe.Msg = "shape must be a tuple: " + fe.Msg
	}
	return err
}

// encodeNPYHeader renders a version 1.0 header (2.0 if it would not fit in
// 1.0's 16-bit length), padded so the data starts on a 64-byte boundary as
// NumPy does.
func encodeNPYHeader(descr string, shape []int) []byte {
	var dict bytes.Buffer
	fmt.Fprintf(&dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr)
	for i, d := range shape {
		if i > 0 {
			dict.WriteString(", ")
		}
		dict.WriteString(strconv.Itoa(d))
	}
	if len(shape) == 1 {
		dict.WriteByte(',')
	}
	dict.WriteString("), }")
	prefix := 10
	major := byte(1)
	if dict.Len()+1+64 > math.MaxUint16 {
		prefix, major = 12, 2
	}
	pad := 64 - (prefix+dict.Len()+1)%64
	if pad == 64 {
		pad = 0
	}
	total := dict.Len() + pad + 1
	out := append([]byte{}, npyMagic...)
	out = append(out, major, 0)
	if major == 1 {
		out = binary.LittleEndian.AppendUint16(out, uint16(total))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(total))
	}
	out = append(out, dict.Bytes()...)
	out = append(out, bytes.Repeat([]byte{' '}, pad)...)
	return append(out, '\n')
}
