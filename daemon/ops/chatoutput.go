package ops

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"

	"github.com/forgedaemon/forged/ane/text/chat"
	"github.com/forgedaemon/forged/ane/text/jinja"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// chatOutput splits a chat's streamed text into reasoning, answer, tool
// calls and diagnostics with ane/text/chat's streaming parser, filling each
// token event's parsed keys and, at the end, the reply's
// (docs/PROTOCOL.md §5).
type chatOutput struct {
	parser *chat.Parser
	events []chat.Event // everything the parser said, for chat.Collect
	calls  []wire.ToolCall
	diags  []wire.Diagnostic
	turn   [sha256.Size]byte // what the tool-call ids derive from (callIDs)
}

// newChatOutput starts the parse of the output that continues prompt; the
// request's tools type the parameters of XML-form calls; a's sampling and
// constraint, with prompt, name the turn its tool-call ids derive from.
func newChatOutput(prompt string, tools wire.Objects, a wire.ChatArgs) (*chatOutput, error) {
	opts := chat.ParseOptions{InThinking: chat.PromptOpensThinking(prompt)}
	if len(tools) > 0 {
		data, err := json.Marshal(tools)
		if err != nil {
			return nil, err
		}
		v, err := jinja.ParseJSON(data)
		if err != nil {
			return nil, err
		}
		opts.Tools, _ = v.(*jinja.List)
	}
	return &chatOutput{parser: chat.NewParser(opts), turn: turnDigest(prompt, a)}, nil
}

// feed parses the event's new text into its parsed keys.
func (o *chatOutput) feed(ev *wire.TokenEvent, text string) {
	o.apply(ev, o.parser.Feed(text))
}

// finish releases what the parser held back (and reports an open tool
// call or reasoning) into the last event.
func (o *chatOutput) finish(ev *wire.TokenEvent) {
	o.apply(ev, o.parser.Finish())
}

func (o *chatOutput) apply(ev *wire.TokenEvent, events []chat.Event) {
	for _, e := range events {
		if e.Kind == chat.EventToolCall {
			call, err := o.toolCall(e.Call)
			if err != nil {
				// The parser accepted JSON the protocol cannot carry as an
				// object (a duplicate key, say): the call stays text.
				o.diagnose(ev, chat.Event{Kind: chat.EventError, Problem: chat.ProblemMalformedToolCall,
					Text: "malformed tool call: arguments of " + e.Call.Name + ": " + err.Error(), Raw: e.Raw})
				e = chat.Event{Kind: chat.EventContent, Text: e.Raw}
			} else {
				ev.ToolCalls = append(ev.ToolCalls, call)
				o.calls = append(o.calls, call)
			}
		}
		o.events = append(o.events, e)
		switch e.Kind {
		case chat.EventReasoning:
			ev.Reasoning += e.Text
		case chat.EventContent:
			ev.Content += e.Text
		case chat.EventError:
			o.diagnose(ev, e)
		}
	}
}

func (o *chatOutput) diagnose(ev *wire.TokenEvent, e chat.Event) {
	d := wire.Diagnostic{Kind: string(e.Problem), Message: e.Text, Text: e.Raw}
	ev.Diagnostics = append(ev.Diagnostics, d)
	o.diags = append(o.diags, d)
}

func (o *chatOutput) toolCall(c *chat.ToolCall) (wire.ToolCall, error) {
	args, err := wire.ObjectFromJSON([]byte(c.Arguments))
	if err != nil {
		return wire.ToolCall{}, err
	}
	index := uint64(len(o.calls))
	return wire.ToolCall{Index: index, ID: callID(o.turn, index), Name: c.Name, Arguments: args}, nil
}

// result fills the reply's parsed keys; a turn that stopped having called
// tools finishes with "tool_calls".
func (o *chatOutput) result(res *wire.GenerationResult) {
	out := chat.Collect(o.events)
	res.Content, res.Reasoning = out.Content, out.Reasoning
	res.ToolCalls, res.Diagnostics = o.calls, o.diags
	if len(o.calls) > 0 && res.FinishReason == wire.FinishStop {
		res.FinishReason = wire.FinishToolCalls
	}
}

// Tool-call ids are deterministic (docs/PROTOCOL.md §5): the same request
// replayed (same conversation, tools, sampling seed, constraint) gives the
// same reply, ids included, so a recorded session can be compared byte
// for byte. They derive from the turn, not from a request id: the caller's
// id is per connection (every one-shot client starts at 1) and the HTTP
// API's is a daemon-wide counter, so neither would replay, and the first
// would repeat within a conversation. The turn is the rendered prompt —
// the whole conversation so far, a session's history included, so each
// turn of one conversation is a different prompt and its ids differ from
// every earlier turn's — plus what else shapes the output (sampling,
// format, tool_choice). Within a turn, the call's index.

// turnDigest names one turn: SHA-256 over the rendered prompt and the
// request's sampling, format and tool_choice, each length-prefixed.
func turnDigest(prompt string, a wire.ChatArgs) [sha256.Size]byte {
	h := sha256.New()
	part := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	part([]byte(prompt))
	for _, v := range []any{a.Sampling, a.Format, a.ToolChoice} {
		b, err := msgpack.Marshal(v) // deterministic: fields in declaration order, a schema's keys in its order
		if err != nil {
			b = nil // cannot happen: the request was decoded from these types
		}
		part(b)
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// callID names call index of a turn in OpenAI's style: "call_" and 24 hex
// digits of SHA-256(turn, index).
func callID(turn [sha256.Size]byte, index uint64) string {
	sum := sha256.Sum256(binary.BigEndian.AppendUint64(turn[:], index))
	return "call_" + hex.EncodeToString(sum[:12])
}

// parsed reports whether an event carries any parsed output.
func parsed(ev *wire.TokenEvent) bool {
	return ev.Reasoning != "" || ev.Content != "" || len(ev.ToolCalls) > 0 || len(ev.Diagnostics) > 0
}
