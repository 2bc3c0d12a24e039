package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/ane/grammar/jsonschema"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/internal/schematest"
)

// Schemas whose languages are finite enough that a random model finishes
// them: nested objects, bounded arrays, enums, $ref recursion, patterns and
// formats.
var constrainedSchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer","minimum":0,"maximum":120},"address":{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"},"kind":{"enum":["home","work",null]}},"required":["zip","kind"],"additionalProperties":false}},"required":["name","age","address"],"additionalProperties":false}`,
	`{"type":"array","items":{"type":"integer","minimum":-3,"maximum":3},"minItems":2,"maxItems":4}`,
	`{"$defs":{"node":{"type":"object","properties":{"v":{"enum":[1,2,3]},"next":{"$ref":"#/$defs/node"}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/node"}`,
	`{"type":"object","properties":{"id":{"type":"string","format":"uuid"},"day":{"type":"string","format":"date"},"at":{"type":"string","format":"date-time"},"code":{"type":"string","pattern":"^[A-Z]{2}-[0-9]{2,3}$"}},"required":["id","day","at","code"],"additionalProperties":false}`,
	`{"anyOf":[{"type":"boolean"},{"type":"array","prefixItems":[{"const":"x"},{"type":"number","minimum":0,"maximum":9}],"items":false,"minItems":2}]}`,
}

func compileBoth(t *testing.T, schema string) (*grammar.Grammar, *schematest.Schema) {
	t.Helper()
	g, err := jsonschema.Compile([]byte(schema), jsonschema.Options{})
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	return g, schematest.Compile(t, schema)
}

// Sampled output at temperature 1, several seeds: always complete, always
// JSON, always valid by an independent validator.
func TestConstrainedSamplingAlwaysValidates(t *testing.T) {
	g, _ := newGenerator(t)
	prompt := g.Tokenizer.Encode("Answer in JSON:")
	for _, schema := range constrainedSchemas {
		gram, val := compileBoth(t, schema)
		for seed := uint64(1); seed <= 3; seed++ {
			opts := &sample.Options{Temperature: 1, TopK: 50, Seed: seed, MaxTokens: 3000}
			sum, _ := collect(t, g, Request{IDs: prompt, Sampling: opts, Constraint: gram, Speculative: speculative.ModeOff})
			if sum.Finish != sample.FinishStop {
				t.Fatalf("%s seed %d: finished by %s after %d tokens: %q", schema, seed, sum.Finish, len(sum.IDs), sum.Text)
			}
			schematest.Valid(t, val, sum.Text, fmt.Sprintf("%s seed %d", schema, seed))
			if !json.Valid([]byte(sum.Text)) {
				t.Fatalf("%q is not JSON", sum.Text)
			}
		}
	}
}

// Constrained greedy output is the same with either drafter as without one.
func TestConstrainedGreedySpeculativeEqualsPlain(t *testing.T) {
	g, dfl := newGenerator(t)
	rng := rand.New(rand.NewPCG(9, 9))
	cuts := map[string]int{}
	for i, schema := range constrainedSchemas {
		gram, _ := compileBoth(t, schema)
		for p := 0; p < 2; p++ {
			prompt := make([]int, 3+rng.IntN(20))
			for k := range prompt {
				prompt[k] = rng.IntN(g.Tokenizer.VocabSize())
			}
			g.Drafter = nil
			plain, _ := collect(t, g, Request{IDs: prompt, Sampling: greedy(40), Constraint: gram, Speculative: speculative.ModeOff})
			for _, d := range []struct {
				name string
				d    speculative.Drafter
			}{{"dflash", dfl}, {"lookup", speculative.NewLookupDrafter(append(slices.Clone(prompt), plain.IDs...))}} {
				g.Drafter = d.d
				fast, _ := collect(t, g, Request{IDs: prompt, Sampling: greedy(40), Constraint: gram, Speculative: speculative.ModeOn})
				if !slices.Equal(plain.IDs, fast.IDs) || plain.Finish != fast.Finish {
					t.Fatalf("schema %d prompt %d, %s drafter: speculative %v (%s) != plain %v (%s)", i, p, d.name, fast.IDs, fast.Finish, plain.IDs, plain.Finish)
				}
				cuts[d.name] += fast.Stats.ConstraintCuts
				if fast.Stats.Cycles == 0 {
					t.Fatalf("%s drafter never drafted", d.name)
				}
			}
		}
	}
	// The lookup drafter replays the plain output seeded with the prompt, so
	// some of its drafts are right and its prompt-copied ones are cut; the
	// synthetic DFlash drafter knows nothing of the grammar.
	for name, n := range cuts {
		if n == 0 {
			t.Errorf("%s drafter: no draft was ever cut by the grammar, the cut path went untested", name)
		}
	}
}

// With thinking on, the constraint starts at </think>; stop tokens are
// allowed only where the output is complete; rollback undoes activation.
func TestConstraintStartsAfterReasoning(t *testing.T) {
	g, _ := newGenerator(t)
	gram, err := jsonschema.Compile([]byte(`{"enum":[true]}`), jsonschema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok := g.Tokenizer
	end, ok := tok.TokenID("</think>")
	if !ok {
		t.Fatal("no </think> token")
	}
	stop := g.stopTokens()
	c := newConstraint(gram, grammar.VocabFor(tok), stop, end)
	row := make([]float32, g.Vocab)
	c.Mask(row)
	for i, x := range row {
		if x != 0 {
			t.Fatalf("token %d masked during the reasoning", i)
		}
	}
	for _, id := range tok.Encode("some thought") {
		if err := c.Accept(id); err != nil {
			t.Fatalf("free token refused: %v", err)
		}
	}
	if err := c.Accept(end); err != nil {
		t.Fatal(err)
	}
	allowed := func() []int {
		row := make([]float32, g.Vocab)
		c.Mask(row)
		var ids []int
		for i, x := range row {
			if !math.IsInf(float64(x), -1) {
				ids = append(ids, i)
			}
		}
		return ids
	}
	for _, id := range allowed() {
		b := tok.Decode([]int{id})
		if w := strings.TrimLeft(b, " \n\t\r"); w != "" && !strings.HasPrefix("true", w) {
			t.Fatalf("after </think> token %d %q allowed", id, b)
		}
		if slices.Contains(stop, id) {
			t.Fatalf("stop token %d allowed before the answer", id)
		}
	}
	for _, id := range tok.Encode("true") {
		if err := c.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	if ids := allowed(); len(ids) == 0 || !slices.Contains(stop, ids[0]) {
		t.Fatalf("complete answer: allowed %v, want the stop tokens", ids)
	}
	if err := c.Accept(tok.Encode("x")[0]); err == nil {
		t.Fatal("a token after the complete answer was accepted")
	}
	if err := c.Rollback(len(tok.Encode("true")) + 1); err != nil {
		t.Fatal(err)
	}
	if c.active {
		t.Fatal("rolling back past </think> left the constraint active")
	}
}

// A grammar whose states reach their limit during generation (they are
// built as the output reaches them) ends the run with that limit's error,
// with and without speculation, having emitted only a valid prefix.
func TestConstraintLimitEndsTheRun(t *testing.T) {
	g, _ := newGenerator(t)
	prompt := g.Tokenizer.Encode("Answer in JSON:")
	for _, mode := range []speculative.Mode{speculative.ModeOff, speculative.ModeOn} {
		// ^[ab]*a[ab]{18}$ has 2^19 states: a long output reaches any small limit.
		gram, err := jsonschema.Compile([]byte(`{"type":"string","pattern":"^[ab]*a[ab]{18}$"}`), jsonschema.Options{Limits: grammar.Limits{DFAStates: 40}})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		opts := &sample.Options{Temperature: 1, TopK: 50, Seed: 3, MaxTokens: 3000}
		_, err = g.Run(context.Background(), Request{IDs: prompt, Sampling: opts, Constraint: gram, Speculative: mode}, func(e Event) error {
			text.WriteString(e.Text)
			return nil
		})
		var le *grammar.LimitError
		if !errors.As(err, &le) || le.Limit != "DFAStates" {
			t.Fatalf("mode %v: got %v after %q, want the DFAStates limit", mode, err, text.String())
		}
		if out := strings.TrimLeft(text.String(), " \t\r\n"); strings.Trim(out, `"ab`) != "" || strings.Count(out, `"`) > 1 {
			t.Errorf("mode %v: emitted %q, not a prefix of a string of a's and b's", mode, out)
		}
		if !strings.Contains(text.String(), `"a`) {
			t.Errorf("mode %v: the limit came before any of the string (%q): the test no longer reaches it mid-generation", mode, text.String())
		}
	}
}
