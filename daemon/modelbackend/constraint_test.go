package modelbackend_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/ane/grammar/jsonschema"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/testbundle"
)

// A format whose automaton outgrows its state limit while the output is
// being built (the grammar is determinized lazily) ends the request with
// bad_request naming the limit, not internal: the request asked for more
// than the daemon enforces.
func TestLazyGrammarLimitIsBadRequest(t *testing.T) {
	dir := testbundle.Tiny(t, 4)
	b, err := modelbackend.OpenRefBundle(dir, modelbackend.Options{Repo: "o/n", Revision: "abc", Ladder: []int{1024}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// ^[ab]*a[ab]{18}$ has 2^19 states: a few steps of output reach 40.
	g, err := jsonschema.Compile([]byte(`{"type":"string","pattern":"^[ab]*a[ab]{18}$"}`), jsonschema.Options{Limits: grammar.Limits{DFAStates: 40}})
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ := b.Tokenize("Answer in JSON:")
	_, err = b.Generate(context.Background(), backend.GenerateRequest{
		Prompt: prompt, MaxTokens: 500, Sampling: wire.Sampling{Temperature: 1, TopK: 50, Seed: 3}, Constraint: g,
	}, func([]int) error { return nil })
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeBadRequest || !strings.Contains(we.Message, "DFAStates") {
		t.Fatalf("got %v, want bad_request naming the DFAStates limit", err)
	}
}
