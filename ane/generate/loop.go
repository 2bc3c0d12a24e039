package generate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/text/chat"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
)

// run is the state of one Run.
type run struct {
	ctx     context.Context
	g       *Generator
	req     Request
	drafter speculative.Drafter // nil when not drafting; else capped
	capped  *cappedDrafter
	sp      *speculative.Speculator
	sampler *sample.Sampler
	stopper *sample.Stopper
	dec     *tokenizer.StreamDecoder
	guard   *chat.ThinkingGuard
	fired   bool // the thinking budget was spent and the stop text forced
	parser  *chat.Parser
	con     *constraint // nil: unconstrained
	events  []chat.Event
	emit    func(Event) error
	sum     *Summary
	began   time.Time
	first   time.Time
	byToken bool // generation ended on a stop token (not a stop string)
	// maxTokens is the output limit; engineFailed: an engine call failed,
	// so what the engine holds is unknown.
	maxTokens    int
	engineFailed bool
}

// cappedDrafter cuts proposals to limit drafts, so a cycle never commits
// tokens past the output limit: the engine then ends holding the prompt
// and the output (less its last token) exactly as plain decoding leaves
// it, which a later Continue relies on. Fewer drafts never change what is
// generated (greedy) nor its distribution (sampled).
type cappedDrafter struct {
	speculative.Drafter
	limit int
}

func (c *cappedDrafter) Propose(anchor, pos int) (speculative.Proposal, error) {
	p, err := c.Drafter.Propose(anchor, pos)
	if err == nil && len(p.Tokens) > c.limit {
		p.Tokens = p.Tokens[:c.limit]
		if p.Q != nil {
			p.Q = p.Q[:c.limit]
		}
	}
	return p, err
}

// start puts the engine (and the generator's drafter) at the state the
// prompt continues from, grows the context for the prompt plus the output
// limit, and returns how many prompt tokens the engine already holds.
func (r *run) start(prompt []int) (int, error) {
	g := r.g
	cached := 0
	switch {
	case r.req.Continue && g.held != nil && isProperPrefix(g.held, prompt):
		cached = len(g.held)
	case r.req.Continue && g.snap != nil && isProperPrefix(g.snapTokens, prompt):
		if err := g.Engine.Restore(g.snap); err != nil {
			r.engineFailed = true
			return 0, fmt.Errorf("generate: restoring the kept state: %w", err)
		}
		cached = len(g.snapTokens)
	default:
		g.Engine.Reset()
		g.snap, g.snapTokens = nil, nil
		if rs, ok := g.Drafter.(resetter); ok {
			rs.Reset()
		}
	}
	if rw, ok := g.Drafter.(rewinder); ok && cached > 0 {
		rw.Rewind(cached) // the drafter may have seen rows the engine no longer holds
	}
	g.held = append(g.held[:0], prompt[:cached]...)
	if err := g.Engine.Fit(len(prompt) + r.maxTokens); err != nil {
		return 0, fmt.Errorf("%w: %d prompt + %d new tokens: %w", ErrContextExceeded, len(prompt), r.maxTokens, err)
	}
	return cached, nil
}

// isProperPrefix: p is a prefix of s with at least one token of s left to
// feed (for its logits).
func isProperPrefix(p, s []int) bool {
	return len(p) < len(s) && slices.Equal(p, s[:len(p)])
}

func (r *run) generate(prompt []int) error {
	r.began = time.Now()
	cached, err := r.start(prompt)
	if err != nil {
		return err
	}
	r.sum.CachedTokens, r.sum.Context = cached, r.g.Engine.Context()
	at := cached
	if keep := r.req.SnapshotAt; keep > cached && keep < len(prompt) {
		if _, err := r.feed(prompt[cached:keep], cached); err != nil {
			return err
		}
		snap, err := r.g.Engine.Snapshot()
		if err != nil {
			r.engineFailed = true
			return err
		}
		r.g.snap, r.g.snapTokens, at = snap, append(r.g.snapTokens[:0], prompt[:keep]...), keep
	}
	logits, err := r.feed(prompt[at:], at)
	if err != nil {
		return err
	}
	r.sum.Prefill = time.Since(r.began)
	anchor, err := r.sampleAnchor(logits, nil)
	if err != nil {
		return err
	}
	// batch holds output tokens to show; its last token is the anchor, not
	// yet in the engine, at position pos. fromStep: the batch came from a
	// Step that started at stepPos with stepAnchor (snap, if taken, is the
	// engine before that Step).
	batch, pos := []int{anchor}, len(prompt)
	fromStep, stepPos, stepAnchor := false, pos, anchor
	var snap ane.Snapshot
	for {
		at, force := -1, ""
		for i, id := range batch {
			finish, f, err := r.take(id, false, i == len(batch)-1)
			if err != nil {
				return err
			}
			if finish != "" {
				return r.finish(finish)
			}
			if f != "" {
				at, force = i, f
				break
			}
		}
		if at >= 0 {
			// The thinking budget ran out at batch[at]: keep it, drop the
			// rest of the batch, and feed the stop text after it.
			base, from := []int(nil), pos-(len(batch)-1)
			if fromStep {
				if snap == nil {
					return errors.New("generate: thinking budget reached without an engine snapshot")
				}
				if err := r.g.Engine.Restore(snap); err != nil {
					r.engineFailed = true
					return fmt.Errorf("generate: thinking budget: %w", err)
				}
				r.g.held = r.g.held[:stepPos]
				if rw, ok := r.g.Drafter.(rewinder); ok {
					rw.Rewind(stepPos)
				}
				base, from = []int{stepAnchor}, stepPos
			}
			if r.con != nil { // the constraint took the whole batch
				if err := r.con.Rollback(len(batch) - 1 - at); err != nil {
					return err
				}
			}
			stopIDs := r.g.Tokenizer.Encode(force)
			fed := append(append(base, batch[:at+1]...), stopIDs...)
			if logits, err = r.feed(fed, from); err != nil {
				return err
			}
			r.fired, r.sum.ForcedThinkStop = true, true
			for i, id := range stopIDs {
				if r.con != nil {
					if err := r.con.Accept(id); err != nil {
						return fmt.Errorf("generate: the forced reasoning stop breaks the constraint: %w", err)
					}
				}
				finish, _, err := r.take(id, true, i == len(stopIDs)-1)
				if err != nil {
					return err
				}
				if finish != "" {
					return r.finish(finish)
				}
			}
			if anchor, err = r.sampleAnchor(logits, r.stopper.Tokens()); err != nil {
				return err
			}
			batch, pos, fromStep, snap = []int{anchor}, from+len(fed), false, nil
			continue
		}
		anchor = batch[len(batch)-1]
		snap = nil
		if r.nearBudget() {
			if snap, err = r.g.Engine.Snapshot(); err != nil {
				r.engineFailed = true
				return err
			}
		}
		fromStep, stepPos, stepAnchor = true, pos, anchor
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if r.capped != nil {
			// Each output token so far is in IDs (stop tokens end the run).
			r.capped.limit = min(speculative.MaxDrafts, r.maxTokens-len(r.sum.IDs)-1)
		}
		next, err := r.sp.Step(anchor, pos, r.stopper.Tokens())
		if err != nil {
			r.engineFailed = true
			return err
		}
		// The Step committed the anchor and all it returned but the last.
		r.g.held = append(append(r.g.held, anchor), next[:len(next)-1]...)
		batch = next
		pos += len(next)
	}
}

// sampleAnchor draws a token from logits (masked by the constraint, which
// then accepts it) outside a Step.
func (r *run) sampleAnchor(logits []float32, history []int) (int, error) {
	if r.con != nil {
		r.con.Mask(logits)
	}
	id, err := r.sampler.Sample(logits, history)
	if err != nil {
		return 0, err
	}
	if r.con != nil {
		if err := r.con.Accept(id); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// nearBudget: the next Step could spend the thinking budget, so the engine
// state before it must be kept (a Step yields at most 8 tokens).
func (r *run) nearBudget() bool {
	return r.guard != nil && !r.fired && r.guard.Used()+speculative.MaxDrafts+1 >= r.req.ThinkingBudget
}

// feed commits ids at pos in prefill blocks, giving the drafter each
// block's features, and returns a copy of the last row's logits.
func (r *run) feed(ids []int, pos int) ([]float32, error) {
	var logits []float32
	for len(ids) > 0 {
		if err := r.ctx.Err(); err != nil {
			return nil, err
		}
		n := min(len(ids), ane.FeedRows(r.g.Engine))
		l, err := r.g.Engine.Feed(ids[:n])
		if err != nil {
			r.engineFailed = true
			return nil, err
		}
		r.g.held = append(r.g.held, ids[:n]...)
		if len(l) != r.g.Vocab {
			r.engineFailed = true
			return nil, fmt.Errorf("generate: engine returned %d logits, want the vocabulary size %d", len(l), r.g.Vocab)
		}
		logits = append(logits[:0], l...)
		if r.drafter != nil {
			f, err := r.g.Engine.Features(n)
			if err != nil {
				r.engineFailed = true
				return nil, err
			}
			positions := make([]int, n)
			for i := range positions {
				positions[i] = pos + i
			}
			if err := r.drafter.AddContext(f, positions); err != nil {
				r.engineFailed = true // the drafter lacks these rows: start over next time
				return nil, err
			}
		}
		ids, pos = ids[n:], pos+n
	}
	return logits, nil
}

// take shows one token: detokenize, apply the stopper, split for chat,
// emit. It returns the finish reason, and the text to force when the
// thinking budget ran out at this token.
func (r *run) take(id int, forced, stepEnd bool) (sample.FinishReason, string, error) {
	if r.first.IsZero() {
		r.first = time.Now()
		r.sum.TimeToFirst = r.first.Sub(r.began)
	}
	stop := r.stopper.IsStopToken(id)
	text := ""
	if !stop {
		text = r.dec.Add(id)
	}
	shown, finish := r.stopper.Add(id, text)
	if stop {
		r.byToken = true
	} else {
		r.sum.IDs = append(r.sum.IDs, id)
	}
	ev := r.event(Event{ID: id, Text: shown, Forced: forced, StepEnd: stepEnd}, shown)
	if err := r.emit(ev); err != nil {
		return "", "", err
	}
	force := ""
	if r.guard != nil && !stop && !forced && finish == "" {
		force = r.guard.Observe(text)
	}
	return finish, force, nil
}

// event fills in the chat split of text and records the text.
func (r *run) event(ev Event, text string) Event {
	r.sum.Text += text
	if r.parser == nil {
		return ev
	}
	for _, e := range r.parser.Feed(text) {
		r.note(&ev, e)
	}
	return ev
}

func (r *run) note(ev *Event, e chat.Event) {
	r.events = append(r.events, e)
	switch e.Kind {
	case chat.EventReasoning:
		ev.Reasoning += e.Text
	case chat.EventContent:
		ev.Content += e.Text
	}
}

// finish releases held text (the stream decoder's partial character and
// the stopper's held-back stop-string prefix — except after a stop string,
// whose text is never shown), emits the final event and fills the summary.
func (r *run) finish(reason sample.FinishReason) error {
	end := time.Now()
	tail := ""
	if reason != sample.FinishStop || r.byToken {
		tail = r.stopper.Flush() + r.dec.Flush()
	}
	ev := r.event(Event{ID: -1, Text: tail, Final: true}, tail)
	if r.parser != nil {
		for _, e := range r.parser.Finish() {
			r.note(&ev, e)
		}
		out := chat.Collect(r.events)
		r.sum.Output = &out
	}
	s := r.sum
	s.Finish = reason
	s.GeneratedTokens = len(s.IDs)
	s.Decode = end.Sub(r.first)
	if s.Decode > 0 {
		s.TokensPerSecond = float64(s.GeneratedTokens) / s.Decode.Seconds()
	}
	s.Stats = r.sp.Stats()
	s.AcceptRate, s.TokensPerCycle = s.Stats.AcceptRate(), s.Stats.TokensPerCycle()
	if r.guard != nil {
		s.ThinkingTokens = r.guard.Used()
	}
	return r.emit(ev)
}
