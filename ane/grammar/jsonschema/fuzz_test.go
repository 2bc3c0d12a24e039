package jsonschema

import (
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/grammar"
)

// A schema is outside input (a request's format or tool parameters):
// whatever the bytes, compiling either succeeds, naming nothing, or fails
// with an error that says why; it never panics or runs past its limits,
// and a compiled grammar gives a first mask.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]}`,
		`{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`,
		`{"type":"string","pattern":"^(a|b)*c{2,3}$"}`,
		`{"anyOf":[{"type":"integer","minimum":-5,"maximum":5},{"enum":[null,true,"x"]}]}`,
		`{"type":"array","prefixItems":[{"const":1}],"items":false,"minItems":1}`,
		`{"type":"string","format":"date-time"}`,
		`{"$ref":"#/nowhere"}`, `{"type":7}`, `[`, `{"a":1,"a":2}`,
	} {
		f.Add([]byte(s))
	}
	lim := grammar.Limits{NFAStates: 20_000, DFAStates: 4_000, Rules: 500, Time: 200 * time.Millisecond, Stacks: 16, MaxWS: 8}
	vocab := grammar.NewVocab([][]byte{[]byte("{"), []byte("}"), []byte(`"`), []byte("a"), []byte("1"), []byte(" "), []byte("null")})
	f.Fuzz(func(t *testing.T, schema []byte) {
		g, err := Compile(schema, Options{Limits: lim})
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("an error without a message for %q", schema)
			}
			return
		}
		m := grammar.NewMatcher(g, vocab)
		m.Mask(grammar.NewMask(vocab.Size()))
	})
}
