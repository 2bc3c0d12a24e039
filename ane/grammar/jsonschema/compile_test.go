package jsonschema

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/refdata"
)

func qwen(t testing.TB) (*tokenizer.Tokenizer, *grammar.Vocab) {
	tok, err := tokenizer.Load(refdata.Path(t, "qwen3", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tok, grammar.VocabFor(tok)
}

// accepts forces text's tokens through a matcher of schema; every token
// must be in the mask exactly when Accept takes it.
func accepts(t *testing.T, tok *tokenizer.Tokenizer, v *grammar.Vocab, g *grammar.Grammar, text string) bool {
	t.Helper()
	m := grammar.NewMatcher(g, v)
	mask := grammar.NewMask(v.Size())
	for _, id := range tok.Encode(text) {
		m.Mask(mask)
		in := mask.Has(id)
		err := m.Accept(id)
		if in != (err == nil) {
			t.Fatalf("%q: token %d: mask says %v, Accept says %v", text, id, in, err)
		}
		if err != nil {
			return false
		}
	}
	return m.Accepting()
}

func TestSchemasAcceptAndReject(t *testing.T) {
	tok, v := qwen(t)
	for _, c := range []struct {
		schema string
		good   []string
		bad    []string
	}{
		{`{"type":"object","properties":{"a":{"type":"integer","minimum":-5,"maximum":120},"b":{"type":"string","maxLength":3}},"required":["a"],"additionalProperties":false}`,
			[]string{`{"a":0}`, `{"a":-5,"b":"xyz"}`, "{\n  \"a\": 120,\n  \"b\": \"\"\n}", ` {"a":7}`},
			[]string{`{"a":121}`, `{"a":-6}`, `{"b":"x"}`, `{"a":1,"b":"abcd"}`, `{"a":1,"c":2}`, `{"a":01}`, `{"a":1}x`, `{"a":1.5}`}},
		{`{"type":"array","items":{"enum":["x",2,null,{"k":[true]}]},"minItems":1,"maxItems":2}`,
			[]string{`["x"]`, `[2,null]`, `[{"k":[true]}]`, "[\n  {\n    \"k\": [\n      true\n    ]\n  }\n]"},
			[]string{`[]`, `["x","x","x"]`, `["y"]`, `[3]`, `[{"k":[false]}]`}},
		{`{"$defs":{"n":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/n"}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/n"}`,
			[]string{`{"v":1}`, `{"v":1,"next":{"v":2,"next":{"v":3}}}`},
			[]string{`{"next":{"v":1}}`, `{"v":1,"next":{}}`}},
		{`{"type":"string","pattern":"^[a-z]{2,3}-\\d+$"}`,
			[]string{`"ab-1"`, `"xyz-0042"`},
			[]string{`"a-1"`, `"abcd-1"`, `"ab-"`, `"AB-1"`}},
		{`{"type":"string","pattern":"^\\s\\S$"}`,
			[]string{`" a"`, `"\ta"`},
			[]string{"\"\ufeffa\"", "\" \u0085\"", `" \u001c"`, `"ab"`}},
		{`{"type":"string","pattern":"cat"}`,
			[]string{`"cat"`, `"a cat here"`, `"\ncat"`},
			[]string{`"dog"`, `"ca t"`}},
		{`{"type":"string","format":"date-time"}`,
			[]string{`"2024-02-28T12:30:00Z"`, `"1999-12-31T23:59:59.5+05:30"`},
			[]string{`"2024-02-30T12:30:00Z"`, `"2024-13-01T00:00:00Z"`, `"2024-01-01 00:00:00Z"`, `"2024-01-01T24:00:00Z"`}},
		{`{"type":"string","format":"uuid"}`,
			[]string{`"123e4567-e89b-12d3-a456-426614174000"`},
			[]string{`"123e4567-e89b-12d3-a456-42661417400"`, `"g23e4567-e89b-12d3-a456-426614174000"`}},
		{`{"type":"string","format":"email"}`,
			[]string{`"a.b@example.com"`},
			[]string{`"a..b@example.com"`, `"ab.example.com"`, `"a@-x.com"`}},
		{`{"anyOf":[{"type":"integer","exclusiveMinimum":10},{"type":"boolean"}]}`,
			[]string{`11`, `true`, `999999`},
			[]string{`10`, `9`, `"x"`, `null`}},
		{`{"type":"number","minimum":0,"exclusiveMaximum":1}`,
			[]string{`0`, `0.5`, `0.999`, `0.0`},
			[]string{`1`, `1.0`, `-0.1`, `1.5`}},
		{`{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"const":1}},"required":["b"]}]}`,
			[]string{`{"a":"x","b":1}`},
			[]string{`{"a":"x"}`, `{"b":1}`, `{"a":"x","b":2}`}},
		{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`,
			[]string{`"s"`, `3`},
			[]string{`1.5`, `[]`}},
		{`{"type":"object","properties":{"a":{"type":"integer"}}}`,
			[]string{`{}`, `{"a":1}`, `{"a":1,"z":[{"q":null}]}`, `{"z":"a"}`},
			[]string{`{"a":"x"}`, `{"a":1,"a":2}`, `{"a":1,}`}},
		{`{"type":"object","properties":{"a":{"not":{}},"b":{"not":{"type":["string","object"]}}}}`,
			[]string{`{}`, `{"b":1}`, `{"b":[]}`, `{"c":1}`},
			[]string{`{"a":1}`, `{"b":"x"}`, `{"b":{}}`}},
		{`{"type":"object","properties":{"id":{"type":"integer"},"x-a":{"type":"string"}},"patternProperties":{"^x-":{"type":"string","maxLength":3}},"additionalProperties":false}`,
			[]string{`{"id":1}`, `{"id":1,"x-a":"abc","x-b":""}`, `{"x-zz":"q"}`},
			[]string{`{"y":1}`, `{"x-a":"abcd"}`, `{"x-b":1}`, `{"id":1,"x-a":1}`}},
		{`{"type":"object","patternProperties":{"^a":{}}}`,
			[]string{`{"ab":1,"c":[]}`},
			[]string{`{"ab":}`}},
		{`{"properties":{"a":{"type":"integer"}},"not":{"required":["b"]}}`,
			[]string{`{}`, `{"a":1}`, `{"c":2}`},
			[]string{`{"b":1}`, `{"a":1,"b":1}`, `1`, `"x"`}},
		{`{"type":"object","not":{"anyOf":[{"required":["x"]},{"required":["y"]}]}}`,
			[]string{`{}`, `{"z":1}`},
			[]string{`{"x":1}`, `{"y":1}`}},
		{`{"type":"object","not":{"required":["x","y"]}}`,
			[]string{`{}`, `{"x":1}`, `{"y":1}`},
			[]string{`{"x":1,"y":2}`}},
		{`{"properties":{"a":{"type":"integer"}},"oneOf":[{"required":["a"]},{"required":["b"]}]}`,
			[]string{`{"a":1}`, `{"b":[]}`, `{"a":1,"c":2}`},
			[]string{`{}`, `{"a":1,"b":2}`, `{"b":1,"a":1}`, `3`, `{"a":"x"}`}},
		{`{"not":{"not":{"type":"integer"}}}`,
			[]string{`1`},
			[]string{`"a"`, `1.5`}},
		{`{"type":"string","format":"flag-topic"}`,
			[]string{`"anything"`},
			[]string{`1`}},
		{`{"type":"string","minLength":2,"maxLength":3}`,
			[]string{`"ab"`, `"abc"`, `"\n\t"`, `"é€😀"`},
			[]string{`"a"`, `"abcd"`, `"\u00e9"`}},
	} {
		g, err := Compile([]byte(c.schema), Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		for _, s := range c.good {
			if !accepts(t, tok, v, g, s) {
				t.Errorf("%s: rejected valid %s", c.schema, s)
			}
		}
		for _, s := range c.bad {
			if accepts(t, tok, v, g, s) {
				t.Errorf("%s: accepted invalid %s", c.schema, s)
			}
		}
	}
}

func TestUnsupportedKeywordNamesItAndItsPointer(t *testing.T) {
	for _, c := range []struct{ schema, keyword, pointer string }{
		{`{"type":"object","properties":{"a":{"not":{"enum":[1]}}}}`, "not", "/properties/a/not"},
		{`{"type":"array","uniqueItems":true}`, "uniqueItems", "/uniqueItems"},
		{`{"type":"string","format":"hostname"}`, "format", "/format"},
		{`{"type":"string","pattern":"(a)\\1"}`, "pattern", "/pattern"},
		{`{"$ref":"other.json#/a"}`, "$ref", "/$ref"},
		{`{"oneOf":[{"type":"string"},{"type":"string","maxLength":2}]}`, "oneOf", "/oneOf"},
		{`{"type":"number","maximum":0.5}`, "maximum", "/maximum"},
		{`{"properties":{"a":{"$id":"http://x/a.json","definitions":{"b":{}},"properties":{"c":{"$ref":"#/definitions/b"}}}}}`, "$ref", "/properties/a/properties/c/$ref"},
		{`{"properties":{"x~y/z":{"patternProperties":{"a":{"type":"string"}}}}}`, "patternProperties", "/properties/x~0y~1z/patternProperties"},
	} {
		_, err := Compile([]byte(c.schema), Options{})
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("%s: got %v, want a *Error", c.schema, err)
		}
		if ce.Keyword != c.keyword || ce.Pointer != c.pointer {
			t.Errorf("%s: error names %q at %q, want %q at %q (%v)", c.schema, ce.Keyword, ce.Pointer, c.keyword, c.pointer, err)
		}
	}
}

func TestPathologicalSchemaHitsALimit(t *testing.T) {
	// (a|b)*a(a|b){18}: the smallest deterministic automaton has 2^19
	// states, but a matcher builds only those it reaches, so the pattern
	// is enforced exactly (the 19th byte from the end must be an a).
	schema := []byte(`{"type":"string","pattern":"^[ab]*a[ab]{18}$"}`)
	g, err := Compile(schema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := grammar.NewVocab([][]byte{[]byte(`"`), []byte("a"), []byte("b"), []byte("ab")})
	valid := `"bba` + strings.Repeat("b", 18) + `"`
	invalid := `"bbb` + strings.Repeat("b", 18) + `"`
	for _, c := range []struct {
		text string
		ok   bool
	}{{valid, true}, {invalid, false}} {
		m := grammar.NewMatcher(g, v)
		err := m.AcceptBytes([]byte(c.text))
		if got := err == nil && m.Accepting(); got != c.ok || m.Err() != nil {
			t.Errorf("%s: accepted %v (%v, matcher error %v), want %v", c.text, got, err, m.Err(), c.ok)
		}
	}
	// Under a small state limit the matcher stops with the limit's error
	// (the mask empty, Accept refusing) instead of building more.
	g, err = Compile(schema, Options{Limits: grammar.Limits{DFAStates: 30}})
	if err != nil {
		t.Fatal(err)
	}
	m := grammar.NewMatcher(g, v)
	mask := grammar.NewMask(v.Size())
	var le *grammar.LimitError
	if err := m.Accept(0); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatal("no limit after 100 bytes")
		}
		err = m.Accept(1 + rng.IntN(2)) // random a's and b's: the last 19 bytes are new states
		if err != nil {
			break
		}
	}
	if !errors.As(err, &le) || le.Limit != "DFAStates" || !errors.As(m.Err(), &le) {
		t.Fatalf("got %v (matcher %v), want the DFAStates limit", err, m.Err())
	}
	if m.Mask(mask); mask.Count() != 0 || m.Accepting() || m.Allows(1) {
		t.Errorf("after the limit: mask %v, accepting %v, want nothing allowed", mask, m.Accepting())
	}
	if err := m.Accept(2); !errors.As(err, &le) {
		t.Errorf("Accept after the limit: %v, want the limit error", err)
	}
	// Many string positions with their own bounded lengths: over the NFA
	// size limit, refused before any large allocation.
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 400 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string","minLength":%d,"maxLength":%d}`, i, i, 999)
	}
	b.WriteString(`}}`)
	_, err = Compile([]byte(b.String()), Options{})
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want a compile limit", err)
	}
}

func TestRecursionOnTheLeftIsRefused(t *testing.T) {
	_, err := Compile([]byte(`{"anyOf":[{"$ref":"#"},{"type":"null"}]}`), Options{})
	if err == nil || !strings.Contains(err.Error(), "left-recursive") {
		t.Fatalf("got %v, want a left-recursion error", err)
	}
}

// The mask is exactly the set of tokens Accept takes, at every step of
// several outputs, over a random sample of the Qwen3 vocabulary.
func TestMaskEqualsAccept(t *testing.T) {
	tok, v := qwen(t)
	rng := rand.New(rand.NewPCG(1, 2))
	sample := make([]int, 4000)
	for i := range sample {
		sample[i] = rng.IntN(v.Size())
	}
	for _, c := range []struct{ schema, text string }{
		{`{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"array","items":{"type":"number"}}}}`, "{\n  \"name\": \"a \\\"q\\\" é\",\n  \"n\": [1.5e3, -2],\n  \"x\": {\"y\": [true, null]}\n}"},
		{`{"$defs":{"t":{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#/$defs/t"},"maxItems":2}}}},"$ref":"#/$defs/t"}`, `{"c":[{"c":[]},{"c":[{}]}]}`},
		// Counting states: near the bound, long tokens must drop out.
		{`{"type":"array","items":{"type":"string","maxLength":30}}`, `["the quick brown fox jumps over", "                             x", "a"]`},
	} {
		g, err := Compile([]byte(c.schema), Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := grammar.NewMatcher(g, v)
		mask := grammar.NewMask(v.Size())
		for step, id := range tok.Encode(c.text) {
			m.Mask(mask)
			for _, s := range append(sample, id) {
				if mask.Has(s) != m.Allows(s) {
					t.Fatalf("%s step %d: token %d %q: mask %v, Allows %v", c.schema, step, s, v.Token(s), mask.Has(s), m.Allows(s))
				}
			}
			if err := m.Accept(id); err != nil {
				t.Fatalf("%s step %d: %v", c.schema, step, err)
			}
		}
		if !m.Accepting() {
			t.Fatalf("%s: %q not accepted at the end", c.schema, c.text)
		}
		// Rolling back to the start and replaying gives the same end.
		n := m.Accepted()
		if err := m.Rollback(n); err != nil || m.Accepted() != 0 || m.Accepting() {
			t.Fatalf("rollback of %d: %v (accepted %d)", n, err, m.Accepted())
		}
	}
}

func TestOneOfDisjointByClosedObjects(t *testing.T) {
	tok, v := qwen(t)
	g, err := Compile([]byte(`{"oneOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false},{"type":"object","properties":{"b":{"type":"integer"}},"required":["b"]}]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !accepts(t, tok, v, g, `{"a":1}`) || !accepts(t, tok, v, g, `{"b":1,"a":1}`) {
		t.Error("a valid instance was rejected")
	}
	// Both branches match {"b":1,"a":"x"}? No: a must be an integer in the
	// first, which is closed anyway; {"a":1,"b":1} matches only the second.
	if accepts(t, tok, v, g, `{"c":1}`) {
		t.Error("an instance matching no branch was accepted")
	}
	// Overlapping open objects are refused.
	if _, err := Compile([]byte(`{"oneOf":[{"type":"object","required":["a"]},{"type":"object","required":["b"]}]}`), Options{}); err == nil {
		t.Error("overlapping oneOf branches compiled")
	}
}

var sharedRuns int

// TestSharedStringRule: a string kind built whole by one grammar's matcher
// is taken by the next schema using it (fewer states built at compile)
// and enforces the same strings.
func TestSharedStringRule(t *testing.T) {
	tok, v := qwen(t)
	// A kind no other test (or earlier run, with -count) uses, so the
	// first compile builds it.
	sharedRuns++
	schema := fmt.Appendf(nil, `{"type":"object","properties":{"k":{"type":"string","minLength":3,"maxLength":%d,"pattern":"^z[0-9]+$"}},"required":["k"]}`, 8+sharedRuns)
	g1, err := Compile(schema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text string
		ok   bool
	}{{`{"k": "z123"}`, true}, {`{"k": "z1"}`, false}, {`{"k": "z1234567890123"}`, false}, {`{"k": "y123"}`, false}}
	for _, c := range cases { // the first builds the string rule whole (a cache miss inside it)
		if got := accepts(t, tok, v, g1, c.text); got != c.ok {
			t.Errorf("first grammar: %s: accepted %v, want %v", c.text, got, c.ok)
		}
	}
	g2, err := Compile(schema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g2.States() >= g1.States() {
		t.Errorf("second compile built %d states, the first %d: the string rule was not shared", g2.States(), g1.States())
	}
	for _, c := range cases {
		if got := accepts(t, tok, v, g2, c.text); got != c.ok {
			t.Errorf("shared rule: %s: accepted %v, want %v", c.text, got, c.ok)
		}
	}
}
