package ops

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/forgedaemon/forged/ane/text/chat"
	"github.com/forgedaemon/forged/ane/text/jinja"
	"github.com/forgedaemon/forged/client/wire"
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
}

// newChatOutput starts the parse of the output that continues prompt; the
// request's tools type the parameters of XML-form calls.
func newChatOutput(prompt string, tools wire.Objects) (*chatOutput, error) {
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
	return &chatOutput{parser: chat.NewParser(opts)}, nil
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
	return wire.ToolCall{Index: uint64(len(o.calls)), ID: newCallID(), Name: c.Name, Arguments: args}, nil
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

// newCallID names a tool call: "call_" and 24 random hex digits, unique
// enough that a client can match tool results to calls across turns.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// parsed reports whether an event carries any parsed output.
func parsed(ev *wire.TokenEvent) bool {
	return ev.Reasoning != "" || ev.Content != "" || len(ev.ToolCalls) > 0 || len(ev.Diagnostics) > 0
}
