package jinja

import (
	"math"
	"strings"
	"testing"
)

// The default mode is Python's: transformers renders chat templates with
// Jinja2 and replaces its tojson with
//
//	json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
//
// No Python runs here, so the expected values below are written from the
// documented behaviour: json.loads types "2.0" a float and "2" an int;
// json.dumps writes a float with float.__repr__ (the shortest string that
// round-trips; positional notation while the decimal exponent is from -4
// to 15, always with a digit after the point; otherwise d.ddde±XX with at
// least two exponent digits) and NaN / Infinity / -Infinity; separators are
// (", ", ": ") without indent and (",", ": ") with one; any indent but None
// (0 too) puts each item on its own line, a string indent is used as is;
// ensure_ascii escapes every character outside U+0020–U+007E as \uXXXX
// (lowercase hex, surrogate pairs above U+FFFF); str(float) is repr.

func TestPythonFloatRepr(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{1e-06, "1e-06"}, {1.0, "1.0"}, {math.Copysign(0, -1), "-0.0"}, {0, "0.0"}, {300.0, "300.0"},
		{0.1, "0.1"}, {0.0001, "0.0001"}, {0.00012, "0.00012"}, {1e-05, "1e-05"}, {1.5e-07, "1.5e-07"},
		{1e15, "1000000000000000.0"}, {9999999999999998.0, "9999999999999998.0"}, {1e16, "1e+16"},
		{12345678901234567.0, "1.2345678901234568e+16"}, {1e22, "1e+22"}, {123456789.123, "123456789.123"},
		{-2.5, "-2.5"}, {5e-324, "5e-324"}, {math.MaxFloat64, "1.7976931348623157e+308"}, {1e100, "1e+100"},
		{0.30000000000000004, "0.30000000000000004"}, {2.5e-300, "2.5e-300"}, {-1e-10, "-1e-10"},
		{math.NaN(), "nan"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"},
	} {
		if got := floatString(c.f); got != c.want {
			t.Errorf("repr(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

func TestPythonToJSON(t *testing.T) {
	v := vars(t, `{"a": 1e-06, "b": 1.0, "c": -0.0, "d": 300.0, "e": 300, "f": 1E2, "g": 1e16, "h": 1e15, "i": -0,
		"s": "\u00e9\ud83d\ude00\u007f\u0001\n\"\\", "k": {"b": 1, "a": [2.5, null, true]}}`)
	for _, c := range []struct{ tpl, want string }{
		{`{{ a|tojson }}|{{ b|tojson }}|{{ c|tojson }}|{{ d|tojson }}|{{ e|tojson }}|{{ f|tojson }}|{{ g|tojson }}|{{ h|tojson }}|{{ i|tojson }}`,
			`1e-06|1.0|-0.0|300.0|300|100.0|1e+16|1000000000000000.0|0`},
		{`{{ a }}|{{ b }}|{{ c }}|{{ d }}|{{ e }}|{{ g }}|{{ 2.0 }}|{{ 8 / 2 }}`, `1e-06|1.0|-0.0|300.0|300|1e+16|2.0|4.0`},
		{`{{ k|tojson }}`, `{"b": 1, "a": [2.5, null, true]}`},
		{`{{ k|tojson(sort_keys=true) }}`, `{"a": [2.5, null, true], "b": 1}`},
		{`{{ k|tojson(separators=(',', ':')) }}`, `{"b":1,"a":[2.5,null,true]}`},
		{`{{ k|tojson(indent=2) }}`, "{\n  \"b\": 1,\n  \"a\": [\n    2.5,\n    null,\n    true\n  ]\n}"},
		{`{{ k|tojson(indent=0) }}`, "{\n\"b\": 1,\n\"a\": [\n2.5,\nnull,\ntrue\n]\n}"},
		{`{{ k|tojson(indent='\t') }}`, "{\n\t\"b\": 1,\n\t\"a\": [\n\t\t2.5,\n\t\tnull,\n\t\ttrue\n\t]\n}"},
		{`{{ k|tojson(indent=1, separators=(', ', ' = ')) }}`, "{\n \"b\" = 1, \n \"a\" = [\n  2.5, \n  null, \n  true\n ]\n}"},
		{`{{ []|tojson(indent=2) }}|{{ {}|tojson(indent=0) }}`, `[]|{}`},
		{`{{ s|tojson }}`, "\"\u00e9\U0001F600\u007f\\u0001\\n\\\"\\\\\""},
		{`{{ s|tojson(ensure_ascii=true) }}`, `"\u00e9\ud83d\ude00\u007f\u0001\n\"\\"`},
		{`{{ 'inf'|float|tojson }}|{{ '-inf'|float|tojson }}|{{ 'nan'|float|tojson }}`, `Infinity|-Infinity|NaN`},
		{`{{ 'inf'|float }}|{{ 'nan'|float }}`, `inf|nan`},
	} {
		got, err := renderString(c.tpl, v)
		if err != nil || got != c.want {
			t.Errorf("%s:\n got %q, %v\nwant %q", c.tpl, got, err, c.want)
		}
	}
	// json.dumps refuses Jinja2's Undefined (TypeError): an error here too.
	if got, err := renderString(`{{ missing|tojson }}`, v); err == nil || !strings.Contains(err.Error(), "not JSON serializable") {
		t.Errorf("missing|tojson = %q, %v; want an error", got, err)
	}
}

// The JavaScript renderer's mode keeps its numbers: integral floats from
// the caller are integers, tojson is JSON.stringify's, undefined is null,
// indent=0 is no indent.
func TestJSModeNumbers(t *testing.T) {
	v := vars(t, `{"a": 2.0, "b": 1e-07, "c": -0.0, "d": [300.0, 0.5], "e": 0.00001}`)
	for _, c := range []struct{ tpl, want string }{
		{`{{ a }}|{{ a|tojson }}|{{ b }}|{{ b|tojson }}|{{ c|tojson }}|{{ d|tojson }}|{{ e }}|{{ 2.0 }}|{{ 3.0|tojson }}`, `2|2|1e-7|1e-7|0|[300, 0.5]|0.00001|2.0|3`},
		{`{{ missing|tojson }}|{{ d|tojson(indent=0) }}`, `null|[300, 0.5]`},
		{`{{ 'nan'|float|tojson }}`, `null`},
	} {
		got, err := renderWith(c.tpl, v, Options{JS: true})
		if err != nil || got != c.want {
			t.Errorf("%s (JS):\n got %q, %v\nwant %q", c.tpl, got, err, c.want)
		}
	}
	// The caller's containers are not changed by the conversion.
	if a, _ := v.Get("a"); a != float64(2) {
		t.Fatalf("vars changed: a = %#v", a)
	}
}
