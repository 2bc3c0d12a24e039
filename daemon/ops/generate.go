package ops

import (
	"context"
	"errors"
	"time"

	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
	"github.com/forgedaemon/forged/daemon/scheduler"
)

func (c *conn) opSessionOpen(_ context.Context, req wire.Request) (any, error) {
	if err := wire.DecodeArgs(req.Op, req.Args, &wire.Empty{}); err != nil {
		return nil, err
	}
	id, err := c.s.sessions.Open(c.sessions)
	if err != nil {
		return nil, err
	}
	return wire.SessionResult{Session: id}, nil
}

func (c *conn) opSessionClose(_ context.Context, req wire.Request) (any, error) {
	var a wire.SessionArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	if err := c.sessions.Close(a.Session); err != nil {
		return nil, err
	}
	c.s.Backend().CloseSession(a.Session)
	c.s.MemoryFreed()
	return wire.Empty{}, nil
}

// closeSessions frees every session of a closed connection.
func (c *conn) closeSessions() {
	for _, id := range c.s.sessions.Leave(c.sessions) {
		c.s.Backend().CloseSession(id)
	}
	c.s.MemoryFreed()
}

// genParams are the options shared by chat and generate.
type genParams struct {
	op             string
	maxTokens      *uint64
	sampling       *wire.Sampling
	speculative    *bool
	stop           []string
	priority       string
	ifBusy         string
	session        string
	thinkingBudget int
	output         *chatOutput      // a chat's parser; nil for generate
	constraint     *grammar.Grammar // what the reply must follow (format, forced tool call); nil: free
	tokens         int              // max_tokens with the default applied (check)
	class          int              // scheduler class from priority (check)
}

func (c *conn) opChat(ctx context.Context, req wire.Request) (any, error) {
	var a wire.ChatArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	return result(c.call().chat(ctx, req, a))
}

func (c *call) chat(ctx context.Context, req wire.Request, a wire.ChatArgs) (*wire.GenerationResult, error) {
	if len(a.Messages) == 0 {
		return nil, wire.Errorf(wire.CodeBadRequest, "chat: args.messages must not be empty")
	}
	for i, m := range a.Messages {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			return nil, wire.Errorf(wire.CodeBadRequest, "chat: args.messages[%d].role %q is not one of system, user, assistant, tool", i, m.Role)
		}
	}
	thinking := true
	switch a.Thinking {
	case "", "on":
	case "off":
		thinking = false
	default:
		return nil, wire.Errorf(wire.CodeBadRequest, "chat: args.thinking must be \"on\" or \"off\", got %q", a.Thinking)
	}
	p := genParams{op: req.Op, maxTokens: a.MaxTokens, sampling: a.Sampling,
		speculative: a.Speculative, stop: a.Stop, priority: a.Priority, ifBusy: a.IfBusy, session: a.Session, thinkingBudget: int(a.ThinkingBudget)}
	ctx, sess, ticket, done, err := c.admitFirst(ctx, &p)
	if err != nil {
		return nil, err
	}
	defer done()
	var history []wire.Message
	if sess != nil {
		history = sess.History
	}
	conversation := append(append([]wire.Message(nil), history...), a.Messages...)
	tools := a.Tools
	if a.ToolChoice != nil && a.ToolChoice.Mode == wire.ToolChoiceNone {
		tools = nil // not offered to the model
	}
	var prompt string // the rendered conversation, for the reply's parser
	ids, err := c.prepare(ctx, func() ([]int, error) {
		var err error
		if p.constraint, err = constraint(req.Op, a.Format, a.ToolChoice, tools); err != nil {
			return nil, err
		}
		if prompt, err = c.s.Backend().RenderChat(backend.ChatPrompt{Messages: conversation, Tools: tools, Thinking: thinking, ThinkingBudget: int(a.ThinkingBudget)}); err != nil {
			return nil, err
		}
		return c.s.Backend().Tokenize(prompt)
	})
	if err != nil {
		return nil, err
	}
	output, err := newChatOutput(prompt, tools, a)
	if err != nil {
		return nil, err
	}
	p.output = output
	res, err := c.generate(ctx, req.ID, ids, p, ticket)
	if err != nil {
		return nil, err
	}
	if sess != nil {
		answer, err := res.Message()
		if err != nil {
			return nil, err
		}
		c.sessions.Update(func() {
			sess.History = append(conversation, answer)
			sess.Tokens = len(ids) + int(res.Usage.GeneratedTokens)
			sess.Context, sess.Parked = int(res.Context), false
			sess.LastUsed = time.Now()
		})
	}
	return res, nil
}

func (c *conn) opGenerate(ctx context.Context, req wire.Request) (any, error) {
	var a wire.GenerateArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	return result(c.call().gen(ctx, req, a))
}

func (c *call) gen(ctx context.Context, req wire.Request, a wire.GenerateArgs) (*wire.GenerationResult, error) {
	if (a.Prompt == nil) == (len(a.IDs) == 0) {
		return nil, wire.Errorf(wire.CodeBadRequest, "generate: exactly one of args.prompt and args.ids must be given")
	}
	p := genParams{op: req.Op, maxTokens: a.MaxTokens, sampling: a.Sampling,
		speculative: a.Speculative, stop: a.Stop, priority: a.Priority, ifBusy: a.IfBusy, session: a.Session}
	ctx, sess, ticket, done, err := c.admitFirst(ctx, &p)
	if err != nil {
		return nil, err
	}
	defer done()
	ids := fromWireIDs(a.IDs)
	if ids, err = c.prepare(ctx, func() ([]int, error) {
		var err error
		if p.constraint, err = constraint(req.Op, a.Format, nil, nil); err != nil || a.Prompt == nil {
			return ids, err
		}
		return c.s.Backend().Tokenize(*a.Prompt)
	}); err != nil {
		return nil, err
	}
	res, err := c.generate(ctx, req.ID, ids, p, ticket)
	if err == nil && sess != nil {
		c.sessions.Update(func() {
			sess.Tokens = len(ids) + int(res.Usage.GeneratedTokens)
			sess.Context, sess.Parked = int(res.Context), false
			sess.LastUsed = time.Now()
		})
	}
	return res, err
}

var errStopString = errors.New("stop string reached")

// slotWait is the reason of a queued event while a generation waits for a
// generation slot (limits.slots are all running).
const slotWait = "waiting for a generation slot (all are running)"

// generate runs one admitted generation (admitFirst, prepare): the
// context check, the memory admission, the wait for a slot, then the
// engine, streaming token events.
func (c *call) generate(ctx context.Context, id uint64, prompt []int, p genParams, ticket *scheduler.Ticket) (*wire.GenerationResult, error) {
	received := time.Now()
	served := c.s.Backend()
	model := served.Model()
	maxTokens := p.tokens
	if len(prompt) == 0 {
		return nil, wire.Errorf(wire.CodeBadRequest, "%s: the prompt is empty", p.op)
	}
	if _, err := contextEntry(p.op, c.s.footprint(), model.ContextEntries, len(prompt), maxTokens); err != nil {
		return nil, err
	}
	priority := wire.PriorityInteractive
	if p.class == scheduler.Background {
		priority = wire.PriorityBackground
	}

	g := &generation{id: id, received: received, priority: priority, peer: c.peer, client: c.clientName(), op: p.op, session: p.session}
	defer c.s.track(g)()
	if err := c.admit(ctx, id, g, len(prompt), maxTokens, p.speculative == nil || *p.speculative, p.ifBusy == wire.IfBusyFail); err != nil {
		return nil, err
	}
	if err := ticket.WaitQueued(ctx, func(pos int) {
		// Best effort: a connection too slow for this event fails at the
		// first token anyway.
		_ = c.event(id, wire.EventQueued, wire.QueuedEvent{Reason: slotWait, Position: uint64(pos)})
	}); err != nil {
		return nil, err
	}
	g.running.Store(true)

	genCtx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	dec := served.NewStreamDecoder()
	text := newTextStream(p.stop)
	var full []byte
	var first time.Time
	stopped := false
	emit := func(ids []int) error {
		if first.IsZero() {
			first = time.Now()
		}
		var raw []byte
		for _, t := range ids {
			raw = append(raw, dec.Add(t)...)
		}
		delta, hit := text.push(string(raw))
		full = append(full, delta...)
		g.generated.Add(uint64(len(ids)))
		ev := wire.TokenEvent{Text: delta, IDs: toWireIDs(ids), TMS: msSince(received)}
		if p.output != nil {
			p.output.feed(&ev, delta)
		}
		if err := c.event(id, wire.EventToken, ev); err != nil {
			return err
		}
		if err := ticket.Yield(ctx); err != nil { // between steps: another caller's waiting request runs first
			return err
		}
		if hit {
			stopped = true
			return errStopString
		}
		return nil
	}
	req := backend.GenerateRequest{Prompt: prompt, MaxTokens: maxTokens, Speculative: p.speculative == nil || *p.speculative,
		ThinkingBudget: p.thinkingBudget, Session: p.session, Constraint: p.constraint}
	if p.sampling != nil {
		req.Sampling = *p.sampling
	}
	out, err := served.Generate(genCtx, req, emit)
	last := wire.TokenEvent{IDs: []uint32{}}
	if stopped {
		out.FinishReason = wire.FinishStopString
	} else if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	} else {
		last.Text = text.flush(dec.Flush())
		full = append(full, last.Text...)
	}
	if p.output != nil {
		p.output.feed(&last, last.Text)
		p.output.finish(&last)
	}
	if last.Text != "" || parsed(&last) {
		last.TMS = msSince(received)
		if err := c.event(id, wire.EventToken, last); err != nil {
			return nil, err
		}
	}
	end := time.Now()
	usage := wire.Usage{PromptTokens: uint64(len(prompt)), CachedTokens: uint64(out.CachedTokens),
		GeneratedTokens: g.generated.Load(), Acceptance: out.Acceptance}
	if usage.Acceptance == nil {
		usage.Acceptance = []uint64{}
	}
	if !first.IsZero() {
		usage.TTFTMS = float64(first.Sub(received).Microseconds()) / 1000
		if d := end.Sub(first).Seconds(); d > 0 && usage.GeneratedTokens > 1 {
			usage.TokensPerS = float64(usage.GeneratedTokens-1) / d
		}
	}
	revision := out.Revision
	if revision == "" {
		revision = model.Bundle.Revision
	}
	res := &wire.GenerationResult{Text: string(full), Content: string(full), FinishReason: out.FinishReason, Usage: usage,
		Revision: revision, Context: uint64(out.ContextEntry), Session: p.session}
	if p.output != nil {
		p.output.result(res)
	}
	return res, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }
