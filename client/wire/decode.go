package wire

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Request is a decoded request envelope; Args is decoded later, per op,
// with DecodeArgs.
type Request struct {
	ID   uint64
	Op   string
	Args msgpack.RawMessage
}

// DecodeRequest validates a frame body and decodes its envelope. On error it
// returns a bad_request *Error and, when it could be read, the request id.
func DecodeRequest(body []byte, lim Limits) (Request, error) {
	var req Request
	if err := Validate(body, lim); err != nil {
		return req, &Error{Code: CodeBadRequest, Message: err.Error()}
	}
	if err := ValidateRequest(body, lim); err != nil {
		// The frame is sound, so its id can still be read (when it holds
		// exactly one) and the error go to the request that caused it.
		req.ID = topLevelID(body)
		return req, &Error{Code: CodeBadRequest, Message: err.Error()}
	}
	var fields map[string]msgpack.RawMessage
	if err := msgpack.Unmarshal(body, &fields); err != nil {
		return req, Errorf(CodeBadRequest, "request is not a map with string keys: %v", err)
	}
	if raw, ok := fields["id"]; ok {
		id, err := decodeUint(raw)
		if err != nil || id == 0 {
			return req, Errorf(CodeBadRequest, "request field \"id\" must be an unsigned integer ≥ 1, got %s", describeRaw(raw))
		}
		req.ID = id
	} else {
		return req, Errorf(CodeBadRequest, "request has no \"id\"")
	}
	for k := range fields {
		if k != "id" && k != "op" && k != "args" {
			return req, Errorf(CodeBadRequest, "unknown request field %q (allowed: id, op, args)", k)
		}
	}
	rawOp, ok := fields["op"]
	if !ok {
		return req, Errorf(CodeBadRequest, "request has no \"op\"")
	}
	if err := msgpack.Unmarshal(rawOp, &req.Op); err != nil || len(rawOp) == 0 || rawOp[0] == 0xc0 {
		return req, Errorf(CodeBadRequest, "request field \"op\" must be a string, got %s", describeRaw(rawOp))
	}
	if raw, ok := fields["args"]; ok && !isNil(raw) {
		if !isMapCode(raw[0]) {
			return req, Errorf(CodeBadRequest, "request field \"args\" must be a map, got %s", describeRaw(raw))
		}
		req.Args = raw
	}
	return req, nil
}

// DecodeArgs decodes an op's args map into the struct dst points to. Every
// key must name a field (by its msgpack tag); errors name the field and say
// which type was expected. Absent or nil args leave dst unchanged.
func DecodeArgs(op string, raw msgpack.RawMessage, dst any) error {
	if isNil(raw) {
		return nil
	}
	var fields map[string]msgpack.RawMessage
	if err := msgpack.Unmarshal(raw, &fields); err != nil {
		return Errorf(CodeBadRequest, "%s: args must be a map with string keys: %v", op, err)
	}
	v := reflect.ValueOf(dst).Elem()
	index := fieldIndex(v.Type())
	for name, fraw := range fields {
		i, ok := index[name]
		if !ok {
			return Errorf(CodeBadRequest, "%s: unknown field args.%s", op, name)
		}
		f := v.Field(i)
		if isNil(fraw) {
			continue
		}
		if _, err := checkInts(fraw, f.Type(), "args."+name); err != nil {
			return Errorf(CodeBadRequest, "%s: %v", op, err)
		}
		if err := unmarshalStrict(fraw, f.Addr().Interface()); err != nil {
			return Errorf(CodeBadRequest, "%s: args.%s must be %s, got %s (%v)", op, name, describeType(f.Type()), describeRaw(fraw), err)
		}
	}
	return nil
}

var (
	customDecoderType = reflect.TypeFor[msgpack.CustomDecoder]()
	rawMessageType    = reflect.TypeFor[msgpack.RawMessage]()
)

// checkInts walks the msgpack value b starts with beside the Go type it
// decodes into, at every depth, and refuses an integer that type cannot
// hold: a negative one for an unsigned field, one past the field's bits
// (msgpack/v5 would wrap -5 and truncate 2^32+5 to 5 silently). It returns
// the bytes after the value. b has passed ValidateRequest.
func checkInts(b []byte, t reflect.Type, path string) ([]byte, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(customDecoderType) {
		return skipValue(b), nil // decoded by its own rules, or untyped
	}
	c := b[0]
	switch k := t.Kind(); {
	case isIntCode(c) && isIntKind(k):
		if err := intFits(b, t, path); err != nil {
			return nil, err
		}
	case isMapCode(c) && (k == reflect.Struct || k == reflect.Map):
		n, body := containerLen(b)
		var index map[string]int
		if k == reflect.Struct {
			index = fieldIndex(t)
		}
		for range n {
			if !isStrCode(body[0]) { // refused by ValidateRequest; the decoder reports it
				body = skipValue(skipValue(body))
				continue
			}
			key := string(strPayload(body))
			body = skipValue(body)
			var ft reflect.Type
			if k == reflect.Struct {
				i, ok := index[key]
				if !ok { // unknown: the decoder names it
					body = skipValue(body)
					continue
				}
				ft = t.Field(i).Type
			} else {
				ft = t.Elem()
			}
			var err error
			if body, err = checkInts(body, ft, path+"."+key); err != nil {
				return nil, err
			}
		}
		return body, nil
	case isArrayCode(c) && (k == reflect.Slice || k == reflect.Array):
		n, body := containerLen(b)
		for i := range n {
			var err error
			if body, err = checkInts(body, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return nil, err
			}
		}
		return body, nil
	}
	return skipValue(b), nil
}

// intFits checks that the msgpack integer b starts with fits t.
func intFits(b []byte, t reflect.Type, path string) error {
	c := b[0]
	var u uint64
	var neg bool
	var i int64
	switch {
	case c <= 0x7f:
		u = uint64(c)
	case c >= 0xe0:
		i, neg = int64(int8(c)), true
	case c >= 0xcc && c <= 0xcf:
		u = readUint(b[1 : 1+1<<(c-0xcc)])
	default: // 0xd0..0xd3
		n := 1 << (c - 0xd0)
		v := readUint(b[1 : 1+n])
		shift := 64 - 8*n
		i = int64(v<<shift) >> shift // sign-extend
		if i >= 0 {
			u = uint64(i)
		} else {
			neg = true
		}
	}
	bits := t.Bits()
	if isUnsignedKind(t.Kind()) {
		switch {
		case neg:
			return fmt.Errorf("%s must not be negative", path)
		case bits < 64 && u>>bits != 0:
			return fmt.Errorf("%s is %d, past the largest value of this %d-bit field (%d)", path, u, bits, uint64(1)<<bits-1)
		}
		return nil
	}
	lo, hi := int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1)
	switch {
	case !neg && u > uint64(hi):
		return fmt.Errorf("%s is %d, past the largest value of this %d-bit field (%d)", path, u, bits, hi)
	case neg && i < lo:
		return fmt.Errorf("%s is %d, below the smallest value of this %d-bit field (%d)", path, i, bits, lo)
	}
	return nil
}

func readUint(p []byte) uint64 {
	var v uint64
	for _, x := range p {
		v = v<<8 | uint64(x)
	}
	return v
}

func isIntCode(c byte) bool { return c <= 0x7f || c >= 0xe0 || (c >= 0xcc && c <= 0xd3) }

func isArrayCode(c byte) bool { return c&0xf0 == 0x90 || c == 0xdc || c == 0xdd }

func isIntKind(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uint64 && k != reflect.Uintptr
}

func isUnsignedKind(k reflect.Kind) bool { return k >= reflect.Uint && k <= reflect.Uint64 }

// containerLen is the element count of the array or map b starts with
// (pairs for a map) and the bytes of its elements.
func containerLen(b []byte) (int, []byte) {
	c := b[0]
	if c&0xe0 == 0x80 { // fixmap, fixarray
		return int(c & 0x0f), b[1:]
	}
	_, _, hdr, _ := header(c)
	return readLen(b[1 : 1+hdr]), b[1+hdr:]
}

// skipValue returns the bytes after the validated msgpack value b starts with.
func skipValue(b []byte) []byte {
	pos, pending := 0, 1
	for pending > 0 {
		c := b[pos]
		pos++
		skip, children, hdr, _ := header(c)
		switch {
		case hdr > 0 && isStrBinExt(c):
			skip += readLen(b[pos : pos+hdr])
		case hdr > 0 && isContainer(c):
			children = readLen(b[pos : pos+hdr])
			if isMapCode(c) {
				children *= 2
			}
		}
		pos += hdr + skip
		pending += children - 1
	}
	return b[pos:]
}

// topLevelID is the id of a structurally valid request whose top-level map
// has exactly one "id" key holding an unsigned integer, else 0.
func topLevelID(body []byte) uint64 {
	n, b := containerLen(body)
	var id uint64
	seen := 0
	for range n {
		isID := isStrCode(b[0]) && string(strPayload(b)) == "id"
		b = skipValue(b)
		if isID {
			seen++
			id, _ = decodeUint(b[:len(b)-len(skipValue(b))])
		}
		b = skipValue(b)
	}
	if seen != 1 {
		return 0
	}
	return id
}

func unmarshalStrict(raw []byte, dst any) error {
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(bytes.NewReader(raw))
	dec.DisallowUnknownFields(true)
	return dec.Decode(dst)
}

var fieldIndexes sync.Map // reflect.Type → map[string]int

func fieldIndex(t reflect.Type) map[string]int {
	if m, ok := fieldIndexes.Load(t); ok {
		return m.(map[string]int)
	}
	m := make(map[string]int)
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("msgpack")
		name, _, _ := strings.Cut(tag, ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	fieldIndexes.Store(t, m)
	return m
}

func isNil(raw []byte) bool { return len(raw) == 0 || raw[0] == 0xc0 }

func decodeUint(raw []byte) (uint64, error) {
	if len(raw) == 0 || isNegativeInt(raw) {
		return 0, fmt.Errorf("not an unsigned integer")
	}
	c := raw[0]
	if !(c <= 0x7f || (c >= 0xcc && c <= 0xcf) || (c >= 0xd0 && c <= 0xd3)) {
		return 0, fmt.Errorf("not an integer")
	}
	var n uint64
	err := msgpack.Unmarshal(raw, &n)
	return n, err
}

// isNegativeInt reports whether raw is a msgpack integer below zero
// (msgpack/v5 silently wraps those into huge unsigned values).
func isNegativeInt(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	c := raw[0]
	switch {
	case c >= 0xe0:
		return true
	case c >= 0xd0 && c <= 0xd3 && len(raw) > 1:
		return raw[1]&0x80 != 0
	}
	return false
}

func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an unsigned integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "an "), "a ") + "s"
	case reflect.Map, reflect.Struct:
		return "a map"
	}
	return t.String()
}

// describeRaw names the msgpack type of an encoded value, for error messages.
func describeRaw(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	c := raw[0]
	switch {
	case c <= 0x7f || c >= 0xe0 || (c >= 0xcc && c <= 0xd3):
		return "an integer"
	case c <= 0x8f || c == 0xde || c == 0xdf:
		return "a map"
	case c <= 0x9f || c == 0xdc || c == 0xdd:
		return "an array"
	case c <= 0xbf || (c >= 0xd9 && c <= 0xdb):
		return "a string"
	case c == 0xc0:
		return "nil"
	case c == 0xc2 || c == 0xc3:
		return "a boolean"
	case c == 0xca || c == 0xcb:
		return "a float"
	case c >= 0xc4 && c <= 0xc6:
		return "binary data"
	}
	return "an extension value"
}
