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
}

// Chat starts a chat completion.
func (c *Client) Chat(ctx context.Context, args wire.ChatArgs) *Stream {
	return c.stream(ctx, wire.OpChat, args)
}

// Generate starts a raw completion of a prompt or token ids.
func (c *Client) Generate(ctx context.Context, args wire.GenerateArgs) *Stream {
	return c.stream(ctx, wire.OpGenerate, args)
}

func (c *Client) stream(ctx context.Context, op string, args any) *Stream {
	s := &Stream{c: c, ctx: ctx}
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

// next returns the next token event, or false once the reply has arrived.
// The reader queues a request's events before its reply, so after the reply
// is seen the events still buffered are delivered first.
func (s *Stream) next() (incoming, bool) {
	for {
		if s.reply != nil {
			select {
			case m := <-s.cl.events:
				if m.Event == wire.EventToken {
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
			if m.Event == wire.EventToken {
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
