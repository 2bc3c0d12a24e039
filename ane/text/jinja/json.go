package jinja

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxJSONDepth bounds nesting both when decoding caller JSON and when
// encoding with tojson (a namespace can be made to contain itself).
const maxJSONDepth = 512

// ParseJSON decodes JSON into template values, keeping object key order
// (Go maps would sort keys, and tojson must reproduce the caller's order).
// Numbers are typed as Python's json.loads types them: integer syntax is an
// integer, anything with a fraction or an exponent a float (2.0 stays a
// float and prints as 2.0, as with transformers); integers beyond int64
// become floats.
func ParseJSON(data []byte) (Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJSON(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("json: unexpected data after the top-level value")
	}
	return v, nil
}

func decodeJSON(dec *json.Decoder, depth int) (Value, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("json: nesting deeper than %d levels", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, errors.New("json: unexpected end of input")
		}
		return nil, fmt.Errorf("json: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("json: %w", err)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, errors.New("json: object key is not a string")
				}
				v, err := decodeJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				d.Set(key, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("json: %w", err)
			}
			return d, nil
		case '[':
			l := &List{}
			for dec.More() {
				v, err := decodeJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				l.Items = append(l.Items, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("json: %w", err)
			}
			return l, nil
		}
		return nil, fmt.Errorf("json: unexpected %q", t)
	case json.Number:
		return jsonNumber(string(t))
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("json: unexpected token %v", tok)
}

func jsonNumber(s string) (Value, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, fmt.Errorf("json: bad number %q", s)
	}
	return f, nil
}

// jsNumbers is v with every integral float (up to 2^53) an integer, as
// JSON.parse and the JavaScript renderer see the caller's numbers
// (Options.JS). Containers are copied, not changed; memo keeps sharing.
func jsNumbers(v Value, memo map[any]Value) Value {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= 1<<53 {
			return int64(x)
		}
	case *List:
		if c, ok := memo[x]; ok {
			return c
		}
		l := &List{Items: make([]Value, len(x.Items))}
		memo[x] = l
		for i, e := range x.Items {
			l.Items[i] = jsNumbers(e, memo)
		}
		return l
	case *Dict:
		if c, ok := memo[x]; ok {
			return c
		}
		d := NewDict()
		memo[x] = d
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			d.Set(k, jsNumbers(e, memo))
		}
		return d
	}
	return v
}

// ValueOf converts ordinary Go data (as decoded by encoding/json, or built
// by hand) into template values. Go maps have no order, so their keys are
// sorted; pass a *Dict to keep an order.
func ValueOf(x any) (Value, error) {
	switch v := x.(type) {
	case nil, bool, string, int64, float64, *List, *Dict, *Namespace, Func, undefined:
		return v, nil
	case int:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case float32:
		return float64(v), nil
	case json.Number:
		return jsonNumber(string(v))
	case json.RawMessage:
		return ParseJSON(v)
	case []string:
		l := &List{}
		for _, s := range v {
			l.Items = append(l.Items, s)
		}
		return l, nil
	case []any:
		l := &List{}
		for _, e := range v {
			ev, err := ValueOf(e)
			if err != nil {
				return nil, err
			}
			l.Items = append(l.Items, ev)
		}
		return l, nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := NewDict()
		for _, k := range keys {
			ev, err := ValueOf(v[k])
			if err != nil {
				return nil, err
			}
			d.Set(k, ev)
		}
		return d, nil
	}
	return nil, fmt.Errorf("jinja: cannot use a Go %T as a template value", x)
}

type jsonOptions struct {
	maxLen      int    // 0: unlimited; else an error past this many bytes
	pretty      bool   // a newline before each item and the closing bracket
	indent      string // repeated per level when pretty
	itemSep     string
	keySep      string
	sortKeys    bool
	ensureASCII bool
	js          bool // numbers as JSON.stringify writes them (Options.JS)
}

// toJSON is the tojson filter: Python json.dumps spacing (", " and ": ",
// or "," with an indent), keys in insertion order, non-ASCII kept as is
// unless ensure_ascii is set, floats as Python's repr (1e-06, 1.0, -0.0,
// NaN, Infinity) or, with js, as JavaScript writes them. undefToNull is
// false when printing a container with {{ }}, where the reference writes
// undefined; true in tojson, where json.dumps refuses an Undefined (an
// error) and the JavaScript renderer writes null.
func toJSON(v Value, o jsonOptions, depth int, undefToNull bool) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, v, o, depth, undefToNull); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJSON(b *strings.Builder, v Value, o jsonOptions, depth int, undefToNull bool) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("tojson: value nested deeper than %d levels (does it contain itself?)", maxJSONDepth)
	}
	if o.maxLen > 0 && b.Len() > o.maxLen {
		return fmt.Errorf("tojson: JSON longer than the %d-byte limit", o.maxLen)
	}
	pad := func(d int) {
		if o.pretty {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(o.indent, d))
		}
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case undefined:
		switch {
		case !undefToNull:
			b.WriteString("undefined")
		case o.js:
			b.WriteString("null")
		default:
			return errors.New("tojson: Object of type Undefined is not JSON serializable")
		}
	case bool:
		b.WriteString(toString(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		if o.js {
			b.WriteString(jsNumber(x))
		} else {
			b.WriteString(pyJSONFloat(x))
		}
	case string:
		writeJSONString(b, x, o.ensureASCII)
	case *List:
		b.WriteByte('[')
		for i, e := range x.Items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			pad(depth + 1)
			if err := writeJSON(b, e, o, depth+1, undefToNull); err != nil {
				return err
			}
		}
		if len(x.Items) > 0 {
			pad(depth)
		}
		b.WriteByte(']')
	case *Dict, *Namespace:
		d, ok := x.(*Dict)
		if !ok {
			d = x.(*Namespace).Attrs
		}
		keys := d.Keys()
		if o.sortKeys {
			keys = append([]string(nil), keys...)
			sort.Strings(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			pad(depth + 1)
			writeJSONString(b, k, o.ensureASCII)
			b.WriteString(o.keySep)
			e, _ := d.Get(k)
			if err := writeJSON(b, e, o, depth+1, undefToNull); err != nil {
				return err
			}
		}
		if len(keys) > 0 {
			pad(depth)
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("tojson: cannot convert a %s to JSON", typeName(v))
	}
	return nil
}

// writeJSONString escapes like JSON.stringify (and json.dumps with
// ensure_ascii=False): quotes, backslashes and control characters only.
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (ensureASCII && r >= 0x7f):
			units := []rune{r}
			if r > 0xffff {
				r -= 0x10000
				units = []rune{0xd800 + r>>10, 0xdc00 + r&0x3ff}
			}
			for _, u := range units {
				b.WriteString(`\u`)
				b.WriteByte(hex[u>>12&0xf])
				b.WriteByte(hex[u>>8&0xf])
				b.WriteByte(hex[u>>4&0xf])
				b.WriteByte(hex[u&0xf])
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
