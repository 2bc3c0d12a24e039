package jinja

import (
	"math"
	"strconv"
	"strings"
)

// Value is a template value. The dynamic types are:
//
//	nil          None
//	Undefined    a name or key that does not exist
//	bool, int64, float64, string
//	*List        list or tuple
//	*Dict        mapping with string keys, in insertion order
//	*Namespace   the mutable object namespace() returns
//	Func         a callable (globals, methods, macros)
type Value = any

type undefined struct{}

// Undefined is the value of a missing variable, attribute or key.
var Undefined Value = undefined{}

// List is a Jinja list or tuple.
type List struct {
	Items []Value
}

// Dict is a mapping that keeps its keys in insertion order, as Python
// dicts and JSON objects from the caller do; tojson depends on it.
type Dict struct {
	keys []string
	vals map[string]Value
}

// NewDict returns an empty ordered mapping.
func NewDict() *Dict { return &Dict{vals: map[string]Value{}} }

// newDictSized returns an empty mapping with room for n keys.
func newDictSized(n int) *Dict {
	return &Dict{keys: make([]string, 0, n), vals: make(map[string]Value, n)}
}

// Set adds or replaces key; a new key goes last.
func (d *Dict) Set(key string, v Value) {
	if _, ok := d.vals[key]; !ok {
		d.keys = append(d.keys, key)
	}
	d.vals[key] = v
}

// Get returns the value of key.
func (d *Dict) Get(key string) (Value, bool) {
	v, ok := d.vals[key]
	return v, ok
}

// Keys returns the keys in insertion order.
func (d *Dict) Keys() []string { return d.keys }

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

// Namespace is the object namespace() returns: the one value a template
// may assign attributes on ({% set ns.x = … %}), which is how state leaves
// a loop body.
type Namespace struct {
	Attrs *Dict
}

// Func is a callable value. kwargs is never nil.
type Func func(args []Value, kwargs *Dict) (Value, error)

// typeName names a value's type in error messages.
func typeName(v Value) string {
	switch v.(type) {
	case nil:
		return "none"
	case undefined:
		return "undefined"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		return "float"
	case string:
		return "string"
	case *List:
		return "list"
	case *Dict:
		return "mapping"
	case *Namespace:
		return "namespace"
	case Func:
		return "function"
	}
	return "unknown"
}

// truthy is Python truthiness: empty strings, lists and mappings are false.
func truthy(v Value) bool {
	switch x := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case *List:
		return len(x.Items) > 0
	case *Dict:
		return x.Len() > 0
	}
	return true
}

// maxPrintedContainer bounds toString of a container outside a rendering
// (the renderer's own str applies its output limit and reports errors).
const maxPrintedContainer = 1 << 20

// toString is how {{ value }} prints: booleans as true/false (as the
// JavaScript renderer does), floats as Python's repr, containers as JSON.
func toString(v Value) string {
	switch x := v.(type) {
	case nil, undefined:
		return ""
	case bool:
		if x {
			return "true"
		}
		return "false"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return floatString(x)
	case string:
		return x
	case *List, *Dict, *Namespace:
		s, _ := toJSON(v, jsonOptions{itemSep: ", ", keySep: ": ", maxLen: maxPrintedContainer}, 0, false)
		return s
	case Func:
		return "<function>"
	}
	return ""
}

// floatString is Python's repr (and str) of a float: the shortest digits
// that read back as f; positional when the decimal exponent is from -4 to
// 15, with at least one digit after the point (1.0, 300.0, 0.0001,
// 1234567890123456.0); else scientific with no ".0" and an exponent of at
// least two digits (1e-05, 1.5e-07, 1e+16); nan, inf, -inf.
func floatString(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±XX
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	sign := ""
	if mant[0] == '-' {
		sign, mant = "-", mant[1:]
	}
	digits := strings.Replace(mant, ".", "", 1)
	if e < -4 || e >= 16 {
		if len(digits) > 1 {
			mant = digits[:1] + "." + digits[1:]
		}
		es := "+"
		if e < 0 {
			es, e = "-", -e
		}
		if e < 10 {
			es += "0"
		}
		return sign + mant + "e" + es + strconv.Itoa(e)
	}
	if e < 0 {
		return sign + "0." + strings.Repeat("0", -e-1) + digits
	}
	for len(digits) < e+1 {
		digits += "0"
	}
	frac := digits[e+1:]
	if frac == "" {
		frac = "0"
	}
	return sign + digits[:e+1] + "." + frac
}

// pyJSONFloat is a float as json.dumps writes it: repr, and NaN, Infinity,
// -Infinity (allow_nan is on by default).
func pyJSONFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return floatString(f)
}

// jsFloatString is how the JavaScript renderer prints a float: integral
// values keep ".0", others as JavaScript's Number#toString.
func jsFloatString(f float64) string {
	if f == 0 && math.Signbit(f) {
		return "-0.0"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return jsNumber(f)
}

// jsNumber formats a number the way JavaScript's Number#toString and
// JSON.stringify do (the reference renderer's tojson).
func jsNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	if f == 0 {
		return "0"
	}
	a := math.Abs(f)
	if a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1e+21, 1.5e-07
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + string(sign) + exp
}

// equal is == in templates. None and undefined compare equal, as in the
// reference renderer; numbers and booleans compare by value;
// containers compare element by element. tick is called for every value
// visited and stops the comparison (false) when it returns false, which
// bounds the work on huge or self-sharing containers.
func equal(a, b Value, tick func() bool) bool {
	if !tick() {
		return false
	}
	switch x := a.(type) {
	case nil, undefined:
		switch b.(type) {
		case nil, undefined:
			return true
		}
		return false
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool, int64, float64: // True == 1, as in Python
		fa, _ := number(a)
		fb, ok := number(b)
		return ok && fa == fb
	case *List:
		y, ok := b.(*List)
		if !ok || len(x.Items) != len(y.Items) {
			return false
		}
		for i := range x.Items {
			if !equal(x.Items[i], y.Items[i], tick) {
				return false
			}
		}
		return true
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.keys {
			yv, ok := y.Get(k)
			if !ok || !equal(x.vals[k], yv, tick) {
				return false
			}
		}
		return true
	}
	return a == b
}

// number returns a numeric value as float64 (booleans count as 0/1).
func number(v Value) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}
