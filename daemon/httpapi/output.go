package httpapi

import (
	"encoding/json"

	"github.com/forgedaemon/forged/ane/text/chat"
	"github.com/forgedaemon/forged/ane/text/jinja"
	"github.com/forgedaemon/forged/client/wire"
)

// output is the one adapter from the daemon's generation to OpenAI's
// parts of an answer: reasoning (reasoning_content), content and tool
// calls. Both the streamed and the whole answer go through it, so they
// agree. Today the daemon's events carry text only, so it parses the
// model's <think> and <tool_call> markers with ane/text/chat's streaming
// parser (the one the chat template's output format is tested with); once
// generation events carry reasoning and tool calls as data, token and
// finish read those fields instead, and nothing else here changes.
type output struct {
	tools  *jinja.List // the tools offered (XML-form arguments are typed by their schemas)
	parser *chat.Parser
}

func newOutput(toolsJSON json.RawMessage) *output {
	o := &output{}
	if len(toolsJSON) > 0 {
		if v, err := jinja.ParseJSON(toolsJSON); err == nil {
			o.tools, _ = v.(*jinja.List)
		}
	}
	o.parser = chat.NewParser(chat.ParseOptions{Tools: o.tools})
	return o
}

// prompt is told the rendered prompt before generation starts: a prompt
// that leaves a <think> block open makes the answer start as reasoning.
func (o *output) prompt(rendered string) {
	o.parser = chat.NewParser(chat.ParseOptions{InThinking: chat.PromptOpensThinking(rendered), Tools: o.tools})
}

// token is one token event's parts.
func (o *output) token(ev wire.TokenEvent) []chat.Event { return o.parser.Feed(ev.Text) }

// finish is what the end of the generation completes (a held-back
// marker prefix, an unterminated tool call kept as content).
func (o *output) finish(*wire.GenerationResult) []chat.Event { return o.parser.Finish() }
