package kl

import (
	"errors"

	"github.com/forgedaemon/forged/ane"
)

// decode feeds prompt to e, then repeatedly passes the last logits to
// next, which picks a token; the token is fed unless next reports done.
// Plain decoding, one token per step: a trace needs nothing more
// (generation for serving is ane/generate).
func decode(e ane.Engine, prompt []int, next func(logits []float32) (id int, done bool, err error)) (fed int, err error) {
	if len(prompt) == 0 {
		return 0, errors.New("decode: empty prompt")
	}
	logits, err := e.Feed(prompt)
	if err != nil {
		return 0, err
	}
	for {
		id, done, err := next(logits)
		if err != nil || done {
			return fed, err
		}
		if logits, err = e.Feed([]int{id}); err != nil {
			return fed, err
		}
		fed++
	}
}
