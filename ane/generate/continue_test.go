package generate

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/text/chat"
)

func randomPrompt(rng *rand.Rand, n, vocab int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = rng.IntN(vocab)
	}
	return p
}

// heldAfter is what the engine must hold after a run: the prompt and the
// output, less the last output token at a length finish (sampled, never
// fed).
func heldAfter(prompt []int, sum *Summary) int {
	if sum.Finish == sample.FinishLength {
		return len(prompt) + len(sum.IDs) - 1
	}
	return len(prompt) + len(sum.IDs)
}

// A second turn continued from the state the first left (only the new
// tokens prefilled) generates exactly what the same prompt generates from
// scratch, greedy, with and without the drafter; and the engine never
// holds tokens past the output, even when a cycle could have drafted past
// the limit.
func TestContinueEqualsFromScratch(t *testing.T) {
	g, _ := newGenerator(t)
	rng := rand.New(rand.NewPCG(8, 8))
	for _, mode := range []speculative.Mode{speculative.ModeOff, speculative.ModeOn} {
		for p := range 4 {
			first := randomPrompt(rng, 5+rng.IntN(20), g.Vocab)
			one, _ := collect(t, g, Request{IDs: first, Sampling: greedy(9 + p), Speculative: mode})
			held := heldAfter(first, one)
			if pos := g.Engine.Position(); pos != held {
				t.Fatalf("%s prompt %d: engine at position %d after a %s finish, want %d (prompt %d + output %d)",
					mode, p, pos, one.Finish, held, len(first), len(one.IDs))
			}
			second := append(append(slices.Clone(first), one.IDs...), randomPrompt(rng, 1+rng.IntN(12), g.Vocab)...)
			resumed, revs := collect(t, g, Request{IDs: second, Sampling: greedy(10), Speculative: mode, Continue: true})
			if resumed.CachedTokens != held {
				t.Fatalf("%s prompt %d: %d cached tokens, want %d", mode, p, resumed.CachedTokens, held)
			}
			scratch, _ := collect(t, g, Request{IDs: second, Sampling: greedy(10), Speculative: mode})
			if scratch.CachedTokens != 0 {
				t.Fatalf("a run without Continue reused %d tokens", scratch.CachedTokens)
			}
			if !slices.Equal(resumed.IDs, scratch.IDs) || resumed.Finish != scratch.Finish {
				t.Fatalf("%s prompt %d: resumed %v (%s), from scratch %v (%s)", mode, p, resumed.IDs, resumed.Finish, scratch.IDs, scratch.Finish)
			}
			steps := 0
			for _, e := range revs {
				if e.StepEnd {
					steps++
				}
			}
			if want := 1 + resumed.Stats.Cycles + resumed.Stats.PlainSteps; steps != want {
				t.Errorf("%s prompt %d: %d step ends, want 1 + %d cycles + %d plain steps", mode, p, steps, resumed.Stats.Cycles, resumed.Stats.PlainSteps)
			}
		}
	}
}

// SnapshotAt keeps the state at a prompt position: a later prompt sharing
// only that prefix restores it (the drafter rewound with it) and generates
// what it generates from scratch.
func TestSnapshotAtRestores(t *testing.T) {
	g, _ := newGenerator(t)
	rng := rand.New(rand.NewPCG(9, 9))
	for _, mode := range []speculative.Mode{speculative.ModeOff, speculative.ModeOn} {
		first := randomPrompt(rng, 30, g.Vocab)
		const keep = 21
		collect(t, g, Request{IDs: first, Sampling: greedy(12), Speculative: mode, Continue: true, SnapshotAt: keep})
		second := append(slices.Clone(first[:keep]), randomPrompt(rng, 15, g.Vocab)...)
		resumed, _ := collect(t, g, Request{IDs: second, Sampling: greedy(12), Speculative: mode, Continue: true})
		if resumed.CachedTokens != keep {
			t.Fatalf("%s: %d cached tokens, want the snapshot's %d", mode, resumed.CachedTokens, keep)
		}
		scratch, _ := collect(t, g, Request{IDs: second, Sampling: greedy(12), Speculative: mode})
		if !slices.Equal(resumed.IDs, scratch.IDs) {
			t.Fatalf("%s: restored %v, from scratch %v", mode, resumed.IDs, scratch.IDs)
		}
		// The scratch run reset the engine: the snapshot is gone, so an
		// unrelated prompt starts over.
		other, _ := collect(t, g, Request{IDs: randomPrompt(rng, 10, g.Vocab), Sampling: greedy(3), Speculative: mode, Continue: true})
		if other.CachedTokens != 0 {
			t.Fatalf("%s: an unrelated prompt reused %d tokens", mode, other.CachedTokens)
		}
	}
}

// A prompt plus max tokens beyond the largest context is refused before
// any token is fed, as ErrContextExceeded.
func TestContextExceeded(t *testing.T) {
	g, _ := newGenerator(t)
	_, err := g.Run(t.Context(), Request{IDs: []int{1, 2, 3}, Sampling: greedy(1 << 20)}, func(Event) error { return nil })
	if !errors.Is(err, ErrContextExceeded) {
		t.Fatalf("1M tokens: %v, want ErrContextExceeded", err)
	}
	if g.Engine.Position() != 0 {
		t.Errorf("the refused run fed %d positions", g.Engine.Position())
	}
}

// A token prompt that ends inside an open <think> (the daemon renders chat
// itself and sends ids) is in thinking mode: the budget forces the stop
// text after exactly that many reasoning tokens, as for a chat request.
func TestIDsPromptOpensThinking(t *testing.T) {
	g, _ := newGenerator(t)
	req, err := chat.ParseRequest([]byte(`{"messages":[{"role":"user","content":"Think about it."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.AddGenerationPrompt = true
	text, err := g.Template.Render(req)
	if err != nil || !chat.PromptOpensThinking(text) {
		t.Fatalf("rendered %q (%v): want a prompt that opens <think>", text, err)
	}
	const budget = 5
	sum, _ := collect(t, g, Request{IDs: g.Tokenizer.Encode(text), Sampling: greedy(40), ThinkingBudget: budget, Speculative: speculative.ModeOff})
	if !sum.ForcedThinkStop || sum.ThinkingTokens != budget {
		t.Fatalf("forced %v after %d thinking tokens, want after %d", sum.ForcedThinkStop, sum.ThinkingTokens, budget)
	}
	// The same ids without the trailing <think> are not in thinking mode.
	plain, _ := collect(t, g, Request{IDs: g.Tokenizer.Encode(strings.TrimSuffix(strings.TrimRight(text, "\n"), chat.ThinkOpen)),
		Sampling: greedy(40), ThinkingBudget: budget, Speculative: speculative.ModeOff})
	if plain.ThinkingTokens != 0 && !strings.Contains(plain.Text, chat.ThinkOpen) {
		t.Fatalf("a prompt without <think> counted %d thinking tokens", plain.ThinkingTokens)
	}
}
