package speculative

import (
	"fmt"

	"github.com/forgedaemon/forged/ane/sample"
)

// Detokenizer turns token ids into text as they arrive; the tokenizer's
// StreamDecoder satisfies it.
type Detokenizer interface {
	Add(id int) string
}

// Token is one output token and the text it made visible (empty while a
// possible stop string is held back).
type Token struct {
	ID   int
	Text string
	// Stop marks a stop token: the last event, not part of the output; its
	// Text is whatever was held back before it.
	Stop bool
}

// Generate runs a whole generation: it samples the first token from first,
// the logits after the prompt (whose next position is pos), then steps the
// target until stop ends generation, passing each output token to emit.
// detok may be nil (no text). A drafter, if any, must already hold the
// prompt's features. An error from emit aborts generation and is returned.
// A constraint (SetConstraint) must be at the start of the output.
func (sp *Speculator) Generate(first []float32, pos int, stop *sample.Stopper, detok Detokenizer, emit func(Token) error) (sample.FinishReason, error) {
	if len(first) != sp.vocab {
		return "", fmt.Errorf("prompt logits have %d values, want the vocabulary size %d", len(first), sp.vocab)
	}
	anchor, err := sp.sampler.Sample(sp.masked(first), nil)
	if err != nil {
		return "", err
	}
	if err := sp.accept(anchor); err != nil {
		return "", err
	}
	next := []int{anchor}
	for {
		for _, id := range next {
			text := ""
			if detok != nil && !stop.IsStopToken(id) {
				text = detok.Add(id)
			}
			shown, finish := stop.Add(id, text)
			if err := emit(Token{ID: id, Text: shown, Stop: stop.IsStopToken(id)}); err != nil {
				return "", err
			}
			if finish != "" {
				return finish, nil
			}
		}
		anchor = next[len(next)-1]
		if next, err = sp.Step(anchor, pos, stop.Tokens()); err != nil {
			return "", err
		}
		pos += len(next)
	}
}
