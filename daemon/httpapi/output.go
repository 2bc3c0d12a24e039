package httpapi

import (
	"github.com/forgedaemon/forged/client/wire"
)

// part is one piece of an answer as OpenAI names it: reasoning
// (reasoning_content), content, or a tool call.
type part struct {
	reasoning, content string
	call               *wire.ToolCall
}

// parts is the one adapter from the daemon's generation to OpenAI's parts
// of an answer: the daemon parses the model's output (its reasoning block,
// answer and tool calls; daemon/ops chatOutput) into each token event's
// parsed keys, and this reads them, in the order reasoning, content, calls
// (an event records no interleaving; a call always closes its event's
// text). The whole answer is the reply's same keys (wholeMessage).
func parts(ev wire.TokenEvent) []part {
	var out []part
	if ev.Reasoning != "" {
		out = append(out, part{reasoning: ev.Reasoning})
	}
	if ev.Content != "" {
		out = append(out, part{content: ev.Content})
	}
	for i := range ev.ToolCalls {
		out = append(out, part{call: &ev.ToolCalls[i]})
	}
	return out
}

// toolCallOf is a parsed call in OpenAI's shape (arguments as a JSON
// string, the model's key order kept); index is set in a stream's delta.
func toolCallOf(c wire.ToolCall, streamed bool) toolCall {
	tc := toolCall{ID: c.ID, Type: "function"}
	if streamed {
		i := int(c.Index)
		tc.Index = &i
	}
	tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments.String()
	return tc
}

// wholeMessage is a non-streamed answer from the reply's parsed keys:
// content is null when the model only called tools.
func wholeMessage(res *wire.GenerationResult) *message {
	m := &message{Role: "assistant", Content: &res.Content, ReasoningContent: res.Reasoning}
	for _, c := range res.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, toolCallOf(c, false))
	}
	if len(m.ToolCalls) > 0 && res.Content == "" {
		m.Content = nil
	}
	return m
}
