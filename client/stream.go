package client

import (
	"context"
	"iter"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// Stream is a running chat or generate request.
type Stream struct {
	c      *Client
	ctx    context.Context
	id     uint64
	cl     *call
	err    error
	result *wire.GenerationResult
	reply  *incoming // the reply, once read
	done   bool

	onQueued func(wire.QueuedEvent) // OnQueued's, or nil
}

// Chat starts a chat completion of args.Messages; opts set the optional
// arguments (MaxTokens, Sampling, Speculative) and OnQueued.
func (c *Client) Chat(ctx context.Context, args wire.ChatArgs, opts ...GenOption) *Stream {
	o := collect(opts)
	a, err := o.chatArgs(args)
	if err != nil {
		return &Stream{c: c, ctx: ctx, err: err, done: true}
	}
	return c.stream(ctx, wire.OpChat, a, o.onQueued)
}

// Generate starts a raw completion of token ids (args.IDs) or of a text
// (the Prompt option); opts set the optional arguments as for Chat.
func (c *Client) Generate(ctx context.Context, args wire.GenerateArgs, opts ...GenOption) *Stream {
	o := collect(opts)
	return c.stream(ctx, wire.OpGenerate, o.generateArgs(args), o.onQueued)
}

func (c *Client) stream(ctx context.Context, op string, args any, onQueued func(wire.QueuedEvent)) *Stream {
	s := &Stream{c: c, ctx: ctx, onQueued: onQueued}
	s.id, s.cl, s.err = c.start(op, args, true)
	s.done = s.err != nil
	return s
}

// Tokens yields each token event until the reply. A failure (including
// cancellation through the Stream's context) is yielded once as the error.
// Stopping the loop early cancels the request.
func (s *Stream) Tokens() iter.Seq2[wire.TokenEvent, error] {
	return func(yield func(wire.TokenEvent, error) bool) {
		for !s.done {
			m, ok := s.next()
			if !ok {
				break
			}
			var ev wire.TokenEvent
			if err := msgpack.Unmarshal(m.Data, &ev); err != nil {
				continue // an event kind from a newer daemon
			}
			if !yield(ev, nil) {
				s.cancel()
				return
			}
		}
		if s.err != nil {
			yield(wire.TokenEvent{}, s.err)
		}
	}
}

// Result waits for the end of the request (discarding unread events) and
// returns the reply.
func (s *Stream) Result() (*wire.GenerationResult, error) {
	for !s.done {
		s.next()
	}
	return s.result, s.err
}

// next returns the next token event, or false once the reply has arrived;
// queued events on the way go to onQueued. The reader queues a request's
// events before its reply, so after the reply is seen the events still
// buffered are delivered first.
func (s *Stream) next() (incoming, bool) {
	for {
		if s.reply != nil {
			select {
			case m := <-s.cl.events:
				if s.event(m) {
					return m, true
				}
				continue
			default:
				s.finish(*s.reply)
				return incoming{}, false
			}
		}
		select {
		case m := <-s.cl.events:
			if s.event(m) {
				return m, true
			}
		case m := <-s.cl.reply:
			s.reply = &m
		case <-s.ctx.Done():
			s.cancel()
			return incoming{}, false
		}
	}
}

// event handles an event that is not a token (a queued event goes to
// onQueued; kinds from a newer daemon are skipped) and reports whether m is
// a token event.
func (s *Stream) event(m incoming) bool {
	if m.Event == wire.EventQueued && s.onQueued != nil {
		var ev wire.QueuedEvent
		if msgpack.Unmarshal(m.Data, &ev) == nil {
			s.onQueued(ev)
		}
	}
	return m.Event == wire.EventToken
}

func (s *Stream) finish(m incoming) {
	s.done = true
	var r wire.GenerationResult
	if err := decodeReply(m, &r); err != nil {
		s.err = err
		return
	}
	s.result = &r
}

// cancel sends the cancel op and waits briefly for the daemon to confirm.
func (s *Stream) cancel() {
	if s.done {
		return
	}
	cause := s.ctx.Err()
	go s.c.call(context.Background(), wire.OpCancel, wire.CancelArgs{ID: s.id}, nil)
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	if s.reply != nil {
		s.finish(*s.reply)
	}
	for !s.done {
		select {
		case <-s.cl.events:
		case m := <-s.cl.reply:
			s.finish(m)
		case <-t.C:
			s.c.forget(s.id)
			s.done = true
		}
	}
	if cause != nil {
		s.err = cause
	}
}

// Subscribe yields daemon state changes (the current state first) until ctx
// ends or the loop stops.
func (c *Client) Subscribe(ctx context.Context) iter.Seq2[wire.StateEvent, error] {
	return func(yield func(wire.StateEvent, error) bool) {
		id, cl, err := c.start(wire.OpSubscribe, nil, true)
		if err != nil {
			yield(wire.StateEvent{}, err)
			return
		}
		stop := func() {
			go c.call(context.Background(), wire.OpCancel, wire.CancelArgs{ID: id}, nil)
			for {
				select {
				case <-cl.events:
				case <-cl.reply:
					return
				case <-time.After(5 * time.Second):
					c.forget(id)
					return
				}
			}
		}
		for {
			select {
			case m := <-cl.events:
				var ev wire.StateEvent
				if msgpack.Unmarshal(m.Data, &ev) != nil || m.Event != wire.EventState {
					continue
				}
				if !yield(ev, nil) {
					stop()
					return
				}
			case m := <-cl.reply:
				yield(wire.StateEvent{}, decodeReply(m, nil))
				return
			case <-ctx.Done():
				stop()
				yield(wire.StateEvent{}, ctx.Err())
				return
			}
		}
	}
}
