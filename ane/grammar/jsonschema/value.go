package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/forgedaemon/forged/ane/grammar/chars"
)

// Kind is a JSON value's type.
type Kind uint8

// The JSON kinds.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// Value is a decoded JSON value that keeps object members in the order
// they were written (schemas define property order by it, and instances
// must be serialized in their own order).
type Value struct {
	Kind    Kind
	Bool    bool
	Num     string // the number's literal text
	Str     string
	Arr     []*Value
	Members []Member
}

// Member is one object member.
type Member struct {
	Key   string
	Value *Value
}

// Get returns the member named key (the last one if repeated), or nil.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != Object {
		return nil
	}
	for i := len(v.Members) - 1; i >= 0; i-- {
		if v.Members[i].Key == key {
			return v.Members[i].Value
		}
	}
	return nil
}

// Decode parses one JSON value (and nothing after it).
func Decode(data []byte) (*Value, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("jsonschema: data after the JSON value")
	}
	return v, nil
}

const maxDepth = 512

func decodeValue(d *json.Decoder, depth int) (*Value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("jsonschema: JSON nested deeper than %d", maxDepth)
	}
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case nil:
		return &Value{Kind: Null}, nil
	case bool:
		return &Value{Kind: Bool, Bool: t}, nil
	case json.Number:
		return &Value{Kind: Number, Num: t.String()}, nil
	case string:
		return &Value{Kind: String, Str: t}, nil
	case json.Delim:
		if t == '[' {
			v := &Value{Kind: Array, Arr: []*Value{}}
			for d.More() {
				e, err := decodeValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				v.Arr = append(v.Arr, e)
			}
			_, err := d.Token()
			return v, err
		}
		v := &Value{Kind: Object}
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return nil, err
			}
			e, err := decodeValue(d, depth+1)
			if err != nil {
				return nil, err
			}
			v.Members = append(v.Members, Member{kt.(string), e})
		}
		_, err := d.Token()
		return v, err
	}
	return nil, fmt.Errorf("jsonschema: unexpected token %v", t)
}

// Compact is v serialized without whitespace.
func (v *Value) Compact() []byte { return v.appendJSON(nil, "", 0) }

// Indent is v serialized with two-space indentation (Python's
// json.dumps(indent=2) layout).
func (v *Value) Indent() []byte { return v.appendJSON(nil, "  ", 0) }

func (v *Value) appendJSON(dst []byte, indent string, level int) []byte {
	nl := func(dst []byte, level int) []byte {
		if indent == "" {
			return dst
		}
		dst = append(dst, '\n')
		for range level {
			dst = append(dst, indent...)
		}
		return dst
	}
	switch v.Kind {
	case Null:
		return append(dst, "null"...)
	case Bool:
		return strconv.AppendBool(dst, v.Bool)
	case Number:
		return append(dst, v.Num...)
	case String:
		return AppendString(dst, v.Str)
	case Array:
		if len(v.Arr) == 0 {
			return append(dst, "[]"...)
		}
		dst = append(dst, '[')
		for i, e := range v.Arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = nl(dst, level+1)
			dst = e.appendJSON(dst, indent, level+1)
		}
		dst = nl(dst, level)
		return append(dst, ']')
	}
	if len(v.Members) == 0 {
		return append(dst, "{}"...)
	}
	dst = append(dst, '{')
	for i, m := range v.Members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = nl(dst, level+1)
		dst = AppendString(dst, m.Key)
		dst = append(dst, ':')
		if indent != "" {
			dst = append(dst, ' ')
		}
		dst = m.Value.appendJSON(dst, indent, level+1)
	}
	dst = nl(dst, level)
	return append(dst, '}')
}

// AppendString appends s as a JSON string: UTF-8 kept, only '"', '\\' and
// control characters escaped (the short forms where JSON has them) — the
// one spelling the grammar's literals use.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, `\ufffd`...)
			i++
			continue
		}
		dst = chars.AppendRune(dst, r)
		i += n
	}
	return append(dst, '"')
}
