package ane

import (
	"errors"
	"time"
)

// Generation summarises one Generate call.
type Generation struct {
	PromptTokens int           `json:"prompt_tokens"`
	Tokens       int           `json:"tokens"` // tokens fed after the prompt
	Prefill      time.Duration `json:"prefill_ns"`
	Decode       time.Duration `json:"decode_ns"`
}

// PrefillRate and DecodeRate are tokens per second (0 when nothing ran).
func (g Generation) PrefillRate() float64 { return rate(g.PromptTokens, g.Prefill) }
func (g Generation) DecodeRate() float64  { return rate(g.Tokens, g.Decode) }

func rate(n int, d time.Duration) float64 {
	if n == 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Generate feeds prompt to e, then repeatedly passes the last logits to
// next, which picks a token (and may emit it); the token is fed unless next
// reports done. It is plain decoding, one token per step; speculative
// decoding builds on Verify/Accept instead.
func Generate(e Engine, prompt []int, next func(logits []float32) (id int, done bool, err error)) (Generation, error) {
	g := Generation{PromptTokens: len(prompt)}
	if len(prompt) == 0 {
		return g, errors.New("generate: empty prompt")
	}
	start := time.Now()
	logits, err := e.Feed(prompt)
	g.Prefill = time.Since(start)
	if err != nil {
		return g, err
	}
	for {
		id, done, err := next(logits)
		if err != nil || done {
			return g, err
		}
		start = time.Now()
		logits, err = e.Feed([]int{id})
		g.Decode += time.Since(start)
		if err != nil {
			return g, err
		}
		g.Tokens++
	}
}
