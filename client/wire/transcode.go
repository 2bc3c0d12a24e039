package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// An Object's translation between msgpack and JSON keeps map key order,
// which neither encoding/json nor msgpack/v5 does through Go maps. Both
// directions walk the bytes themselves, so they are bounded by the input:
// nothing is allocated for a count a header claims, and nesting is limited.

// maxObjectDepth bounds nesting inside one Object (the object itself is
// depth 1). Frames are bounded by Validate already; this also covers the
// JSON a Go client converts.
const maxObjectDepth = 32

// maxObjectBytes bounds one Object's encoding: nothing larger fits a frame.
const maxObjectBytes = MaxDaemonFrame

// objectError says where in an object a rule was broken: path is like
// ".function.parameters.properties.city[2]" (empty: the object itself).
type objectError struct {
	path    string
	problem string
}

func (e *objectError) Error() string {
	if e.path == "" {
		return "object: " + e.problem
	}
	return "object" + e.path + ": " + e.problem
}

func problem(format string, args ...any) error {
	return &objectError{problem: fmt.Sprintf(format, args...)}
}

// under prefixes err's path with one step (".key" or "[i]").
func under(step string, err error) error {
	var oe *objectError
	if errors.As(err, &oe) {
		return &objectError{path: step + oe.path, problem: oe.problem}
	}
	return err
}

func keyStep(k string) string { return "." + k }

func indexStep(i int) string { return "[" + strconv.Itoa(i) + "]" }

// msgpackToJSON converts one msgpack map to compact JSON in the same key
// order. It refuses what JSON cannot say: non-string or duplicate keys,
// binary and extension values, NaN and infinities, invalid UTF-8.
func msgpackToJSON(src []byte) ([]byte, error) {
	if len(src) > maxObjectBytes {
		return nil, problem("%d bytes is more than the %d an object may take", len(src), maxObjectBytes)
	}
	if len(src) == 0 || !isMapCode(src[0]) {
		return nil, problem("must be a map, got %s", describeRaw(src))
	}
	t := &mpReader{src: src}
	out, err := t.value(make([]byte, 0, len(src)+len(src)/4), 1)
	if err != nil {
		return nil, err
	}
	if t.pos != len(src) {
		return nil, problem("%d trailing bytes after the map", len(src)-t.pos)
	}
	return out, nil
}

type mpReader struct {
	src []byte
	pos int
}

// take returns the next n bytes, or an error if the input is shorter.
func (t *mpReader) take(n int) ([]byte, error) {
	if n < 0 || n > len(t.src)-t.pos {
		return nil, problem("the encoding ends inside a value (at byte %d)", t.pos)
	}
	b := t.src[t.pos : t.pos+n]
	t.pos += n
	return b, nil
}

// uint reads an n-byte big-endian unsigned integer (n = 1, 2, 4 or 8).
func (t *mpReader) uint(n int) (uint64, error) {
	b, err := t.take(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v, nil
}

// length reads an n-byte length or count, which must fit in what is left
// (every string byte and every element takes at least one byte).
func (t *mpReader) length(n int) (int, error) {
	v, err := t.uint(n)
	if err != nil {
		return 0, err
	}
	if v > uint64(len(t.src)-t.pos) {
		return 0, problem("a declared length of %d exceeds the %d bytes left", v, len(t.src)-t.pos)
	}
	return int(v), nil
}

func (t *mpReader) value(out []byte, depth int) ([]byte, error) {
	cb, err := t.take(1)
	if err != nil {
		return nil, err
	}
	c := cb[0]
	switch {
	case c <= 0x7f:
		return strconv.AppendUint(out, uint64(c), 10), nil
	case c >= 0xe0:
		return strconv.AppendInt(out, int64(int8(c)), 10), nil
	case c <= 0x8f:
		return t.mapBody(out, int(c&0x0f), depth)
	case c <= 0x9f:
		return t.arrayBody(out, int(c&0x0f), depth)
	case c <= 0xbf:
		return t.str(out, int(c&0x1f))
	}
	switch c {
	case 0xc0:
		return append(out, "null"...), nil
	case 0xc2:
		return append(out, "false"...), nil
	case 0xc3:
		return append(out, "true"...), nil
	case 0xcc, 0xcd, 0xce, 0xcf: // uint 8, 16, 32, 64
		v, err := t.uint(1 << (c - 0xcc))
		return strconv.AppendUint(out, v, 10), err
	case 0xd0, 0xd1, 0xd2, 0xd3: // int 8, 16, 32, 64
		n := 1 << (c - 0xd0)
		v, err := t.uint(n)
		shift := 64 - 8*n // sign-extend
		return strconv.AppendInt(out, int64(v<<shift)>>shift, 10), err
	case 0xca:
		v, err := t.uint(4)
		if err != nil {
			return nil, err
		}
		return appendJSONFloat(out, float32(math.Float32frombits(uint32(v))))
	case 0xcb:
		v, err := t.uint(8)
		if err != nil {
			return nil, err
		}
		return appendJSONFloat(out, math.Float64frombits(v))
	case 0xd9, 0xda, 0xdb: // str 8, 16, 32
		n, err := t.length(1 << (c - 0xd9))
		if err != nil {
			return nil, err
		}
		return t.str(out, n)
	case 0xdc, 0xdd: // array 16, 32
		n, err := t.length(2 << (c - 0xdc))
		if err != nil {
			return nil, err
		}
		return t.arrayBody(out, n, depth)
	case 0xde, 0xdf: // map 16, 32
		n, err := t.length(2 << (c - 0xde))
		if err != nil {
			return nil, err
		}
		return t.mapBody(out, n, depth)
	case 0xc4, 0xc5, 0xc6:
		return nil, problem("binary data has no JSON form (send text as a string)")
	case 0xc7, 0xc8, 0xc9, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return nil, problem("msgpack extension values (such as timestamps) have no JSON form")
	}
	return nil, problem("invalid msgpack type byte 0x%02x", c)
}

func (t *mpReader) str(out []byte, n int) ([]byte, error) {
	s, err := t.take(n)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(s) {
		return nil, problem("a string is not valid UTF-8")
	}
	return appendJSONString(out, s), nil
}

func (t *mpReader) arrayBody(out []byte, n, depth int) ([]byte, error) {
	if depth > maxObjectDepth {
		return nil, problem("nested deeper than %d levels", maxObjectDepth)
	}
	out = append(out, '[')
	for i := range n {
		if i > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = t.value(out, depth+1); err != nil {
			return nil, under(indexStep(i), err)
		}
	}
	return append(out, ']'), nil
}

func (t *mpReader) mapBody(out []byte, n, depth int) ([]byte, error) {
	if depth > maxObjectDepth {
		return nil, problem("nested deeper than %d levels", maxObjectDepth)
	}
	seen := make(map[string]struct{}, min(n, 16))
	out = append(out, '{')
	for i := range n {
		if i > 0 {
			out = append(out, ',')
		}
		key, err := t.key()
		if err != nil {
			return nil, err
		}
		if _, dup := seen[key]; dup {
			return nil, problem("key %q appears twice", key)
		}
		seen[key] = struct{}{}
		out = appendJSONString(out, []byte(key))
		out = append(out, ':')
		if out, err = t.value(out, depth+1); err != nil {
			return nil, under(keyStep(key), err)
		}
	}
	return append(out, '}'), nil
}

// key reads a map key, which JSON requires to be a string.
func (t *mpReader) key() (string, error) {
	if t.pos >= len(t.src) {
		return "", problem("the encoding ends inside a map")
	}
	c := t.src[t.pos]
	var n int
	switch {
	case c >= 0xa0 && c <= 0xbf:
		t.pos++
		n = int(c & 0x1f)
	case c >= 0xd9 && c <= 0xdb:
		t.pos++
		var err error
		if n, err = t.length(1 << (c - 0xd9)); err != nil {
			return "", err
		}
	default:
		return "", problem("a map key is %s; JSON object keys are strings", describeRaw(t.src[t.pos:]))
	}
	s, err := t.take(n)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(s) {
		return "", problem("a map key is not valid UTF-8")
	}
	return string(s), nil
}

// appendJSONFloat writes a finite number as encoding/json would (float32
// values with 32-bit shortest digits), but always in a float's form: an
// integral value gets ".0" (300.0, -0.0), so whoever reads the JSON back
// (the chat template, as Python's json.loads would) still sees a float,
// and tojson prints 300.0 as transformers' json.dumps does.
func appendJSONFloat[F float32 | float64](out []byte, f F) ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return nil, problem("%v has no JSON form (numbers must be finite)", f)
	}
	j, err := json.Marshal(f)
	if err != nil {
		return nil, problem("%v", err)
	}
	out = append(out, j...)
	if !bytes.ContainsAny(j, ".eE") {
		out = append(out, ".0"...)
	}
	return out, nil
}

// appendJSONString quotes valid UTF-8 s, escaping only what JSON requires
// (quote, backslash, control characters): the JSON is for the template,
// not for HTML.
func appendJSONString(out, s []byte) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// jsonToMsgpack converts one JSON object to a msgpack map in the same key
// order: integers that fit 64 bits become msgpack integers, other numbers
// float64. It refuses duplicate keys and invalid UTF-8 (which encoding/json
// would silently replace).
func jsonToMsgpack(data []byte) ([]byte, error) {
	if len(data) > maxObjectBytes {
		return nil, problem("%d bytes of JSON is more than the %d an object may take", len(data), maxObjectBytes)
	}
	if !utf8.Valid(data) {
		return nil, problem("the JSON is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, problem("not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, problem("must be a JSON object, got %s", jsonKind(tok))
	}
	out, err := jsonObject(dec, nil, 1)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, problem("unexpected data after the JSON object")
	}
	return out, nil
}

// jsonValue appends the msgpack form of the value that starts with tok.
func jsonValue(dec *json.Decoder, out []byte, tok json.Token, depth int) ([]byte, error) {
	switch v := tok.(type) {
	case nil:
		return append(out, 0xc0), nil
	case bool:
		if v {
			return append(out, 0xc3), nil
		}
		return append(out, 0xc2), nil
	case string:
		return appendMsgpackStr(out, v), nil
	case json.Number:
		return appendMsgpackNumber(out, string(v))
	case json.Delim:
		switch v {
		case '{':
			return jsonObject(dec, out, depth+1)
		case '[':
			return jsonArray(dec, out, depth+1)
		}
	}
	return nil, problem("unexpected JSON %v", tok)
}

func jsonObject(dec *json.Decoder, out []byte, depth int) ([]byte, error) {
	if depth > maxObjectDepth {
		return nil, problem("nested deeper than %d levels", maxObjectDepth)
	}
	var body []byte
	seen := map[string]struct{}{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, problem("not JSON: %v", err)
		}
		key, ok := kt.(string)
		if !ok { // the decoder yields only string keys inside an object
			return nil, problem("not JSON: object key %v", kt)
		}
		if _, dup := seen[key]; dup {
			return nil, problem("key %q appears twice", key)
		}
		seen[key] = struct{}{}
		body = appendMsgpackStr(body, key)
		vt, err := dec.Token()
		if err != nil {
			return nil, under(keyStep(key), problem("not JSON: %v", err))
		}
		if body, err = jsonValue(dec, body, vt, depth); err != nil {
			return nil, under(keyStep(key), err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, problem("not JSON: %v", err)
	}
	return append(appendContainerHeader(out, 0x80, 0xde, len(seen)), body...), nil
}

func jsonArray(dec *json.Decoder, out []byte, depth int) ([]byte, error) {
	if depth > maxObjectDepth {
		return nil, problem("nested deeper than %d levels", maxObjectDepth)
	}
	var body []byte
	n := 0
	for dec.More() {
		vt, err := dec.Token()
		if err != nil {
			return nil, under(indexStep(n), problem("not JSON: %v", err))
		}
		if body, err = jsonValue(dec, body, vt, depth); err != nil {
			return nil, under(indexStep(n), err)
		}
		n++
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return nil, problem("not JSON: %v", err)
	}
	return append(appendContainerHeader(out, 0x90, 0xdc, n), body...), nil
}

func jsonKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// appendContainerHeader writes a map (fix 0x80, 16-bit 0xde) or array
// (0x90, 0xdc) header for n elements; the 32-bit form follows the 16-bit one.
func appendContainerHeader(out []byte, fix, c16 byte, n int) []byte {
	switch {
	case n < 16:
		return append(out, fix|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(out, c16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(out, c16+1), uint32(n))
}

func appendMsgpackStr(out []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		out = append(out, 0xa0|byte(n))
	case n <= math.MaxUint8:
		out = append(out, 0xd9, byte(n))
	case n <= math.MaxUint16:
		out = binary.BigEndian.AppendUint16(append(out, 0xda), uint16(n))
	default:
		out = binary.BigEndian.AppendUint32(append(out, 0xdb), uint32(n))
	}
	return append(out, s...)
}

// appendMsgpackNumber writes a JSON number in its source form, as
// Python's json.loads reads it (the chat template sees what transformers'
// would): without a fraction or exponent an integer, in the smallest
// msgpack integer form when it fits 64 bits ("-0" is the integer 0);
// otherwise a float64 (300.0 stays a float, -0.0 keeps its sign).
func appendMsgpackNumber(out []byte, s string) ([]byte, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return appendMsgpackInt(out, i), nil
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return binary.BigEndian.AppendUint64(append(out, 0xcf), u), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, problem("the number %s is out of range", s)
	}
	return binary.BigEndian.AppendUint64(append(out, 0xcb), math.Float64bits(f)), nil
}

func appendMsgpackInt(out []byte, i int64) []byte {
	switch {
	case i >= 0 && i <= 0x7f, i < 0 && i >= -32:
		return append(out, byte(i))
	case i >= math.MinInt8 && i <= math.MaxInt8:
		return append(out, 0xd0, byte(i))
	case i >= math.MinInt16 && i <= math.MaxInt16:
		return binary.BigEndian.AppendUint16(append(out, 0xd1), uint16(i))
	case i >= math.MinInt32 && i <= math.MaxInt32:
		return binary.BigEndian.AppendUint32(append(out, 0xd2), uint32(i))
	}
	return binary.BigEndian.AppendUint64(append(out, 0xd3), uint64(i))
}
