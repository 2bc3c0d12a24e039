package chat

import (
	"strings"

	"github.com/forgedaemon/forged/ane/text/jinja"
)

// Markers the Qwen chat format uses in model output.
const (
	ThinkOpen     = "<think>"
	ThinkClose    = "</think>"
	ToolCallOpen  = "<tool_call>"
	ToolCallClose = "</tool_call>"
)

// ToolCall is one parsed call. Arguments is a JSON object, keys in the
// order the model wrote them.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Output is a whole response split into its parts. Nothing the model wrote
// is dropped: a malformed or truncated tool call stays in Content, verbatim,
// and Error says what was wrong.
type Output struct {
	Reasoning string     `json:"reasoning,omitempty"`
	Content   string     `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Error     string     `json:"error,omitempty"`
}

// ParseOptions describe the prompt the output continues.
type ParseOptions struct {
	// InThinking is true when the prompt ended inside an open <think>
	// block (see PromptOpensThinking): the output starts with reasoning.
	InThinking bool
	// Tools is the request's tool list; XML-form parameter values are
	// typed by each tool's JSON schema.
	Tools *jinja.List
}

// PromptOpensThinking reports whether a rendered prompt ends inside an
// open <think> block, as Qwen3.5-family templates leave it with thinking on.
func PromptOpensThinking(prompt string) bool {
	return strings.HasSuffix(strings.TrimRight(prompt, "\n"), ThinkOpen)
}

// Parse splits a complete response. It is the streaming Parser fed in one
// piece, so both always agree.
func Parse(text string, opts ParseOptions) Output {
	p := NewParser(opts)
	return Collect(append(p.Feed(text), p.Finish()...))
}

// Collect folds parser events into an Output. When there are tool calls,
// the whitespace the model puts around them is dropped from Content.
func Collect(events []Event) Output {
	var o Output
	var content, reasoning strings.Builder
	var errs []string
	for _, e := range events {
		switch e.Kind {
		case EventReasoning:
			reasoning.WriteString(e.Text)
		case EventContent:
			content.WriteString(e.Text)
		case EventToolCall:
			o.ToolCalls = append(o.ToolCalls, *e.Call)
		case EventError:
			errs = append(errs, e.Text)
		}
	}
	o.Reasoning, o.Content = reasoning.String(), content.String()
	if len(o.ToolCalls) > 0 {
		o.Content = strings.TrimSpace(o.Content)
	}
	o.Error = strings.Join(errs, "; ")
	return o
}

// EventKind says what an Event carries.
type EventKind int

const (
	EventReasoning EventKind = iota // Text is more reasoning
	EventContent                    // Text is more answer text
	EventToolCall                   // Call is a complete, parsed tool call
	EventError                      // Text says what was malformed or truncated
)

// Problem names what an EventError reports.
type Problem string

const (
	// ProblemMalformedToolCall: a closed <tool_call> whose body did not
	// parse; its text, verbatim, follows as content.
	ProblemMalformedToolCall Problem = "malformed_tool_call"
	// ProblemTruncatedToolCall: the output ended inside <tool_call> (at
	// the token limit, say); its text, verbatim, follows as content.
	ProblemTruncatedToolCall Problem = "truncated_tool_call"
	// ProblemToolCallArgument: the call was parsed, but a parameter value
	// did not match its schema's type and was kept as a string.
	ProblemToolCallArgument Problem = "tool_call_argument"
	// ProblemTruncatedReasoning: the output ended inside <think>.
	ProblemTruncatedReasoning Problem = "truncated_reasoning"
)

// Event is one piece of parsed output.
type Event struct {
	Kind EventKind
	Text string
	Call *ToolCall
	// Problem names what an EventError reports.
	Problem Problem
	// Raw is the verbatim model text of an EventToolCall, or of the
	// malformed or truncated call an EventError reports (which the next
	// event delivers as content).
	Raw string
}

type parseState int

const (
	stateContent parseState = iota
	stateReasoning
	stateToolCall
)

// Parser splits output incrementally: feed it text deltas as they are
// decoded and it returns what became certain. It holds back only text that
// could still be the start of a marker (at most a few bytes), newlines at
// the edges of the reasoning, and the body of an open tool call.
type Parser struct {
	tools       map[string]map[string]string // tool → parameter → JSON type
	state       parseState
	buf         string // undecided text
	atStart     bool   // no answer text yet: a <think> may still open
	reasonStart bool   // no reasoning text yet: leading newlines are dropped
	heldNL      string // newlines at the end of the reasoning so far
	afterThink  bool   // just closed </think>: leading newlines are dropped
	scanned     int    // bytes of an open tool call already searched for its end
}

// NewParser starts a parser for one response.
func NewParser(opts ParseOptions) *Parser {
	p := &Parser{tools: toolParamTypes(opts.Tools), atStart: true}
	if opts.InThinking {
		p.state, p.reasonStart = stateReasoning, true
	}
	return p
}

// Feed consumes a delta and returns the events it completes.
func (p *Parser) Feed(delta string) []Event {
	p.buf += delta
	var ev []Event
	for {
		n := len(p.buf)
		st := p.state
		ev = p.step(ev)
		if len(p.buf) == n && p.state == st {
			return ev
		}
	}
}

// step makes one unit of progress on p.buf.
func (p *Parser) step(ev []Event) []Event {
	switch p.state {
	case stateReasoning:
		if i := strings.Index(p.buf, ThinkClose); i >= 0 {
			ev = p.reasoning(ev, p.buf[:i], true)
			p.buf = p.buf[i+len(ThinkClose):]
			p.state, p.afterThink, p.heldNL = stateContent, true, ""
			return ev
		}
		keep := partialSuffix(p.buf, ThinkClose)
		ev = p.reasoning(ev, p.buf[:len(p.buf)-keep], false)
		p.buf = p.buf[len(p.buf)-keep:]
		return ev
	case stateToolCall:
		from := max(0, p.scanned-len(ToolCallClose)+1) // the start of the body was searched already
		i := strings.Index(p.buf[from:], ToolCallClose)
		if i < 0 {
			p.scanned = len(p.buf)
			return ev
		}
		i += from
		p.scanned = 0
		body := p.buf[:i]
		p.buf = p.buf[i+len(ToolCallClose):]
		p.state = stateContent
		call, err := parseToolCall(body, p.tools)
		if err != nil && call == nil {
			raw := ToolCallOpen + body + ToolCallClose
			ev = append(ev, Event{Kind: EventError, Text: "malformed tool call: " + err.Error(), Problem: ProblemMalformedToolCall, Raw: raw})
			return p.content(ev, raw)
		}
		ev = append(ev, Event{Kind: EventToolCall, Call: call, Raw: ToolCallOpen + body + ToolCallClose})
		if err != nil {
			ev = append(ev, Event{Kind: EventError, Text: "tool call " + call.Name + ": " + err.Error(), Problem: ProblemToolCallArgument})
		}
		return ev
	}
	if p.afterThink {
		p.buf = strings.TrimLeft(p.buf, "\n")
		if p.buf == "" {
			return ev
		}
		p.afterThink = false
	}
	if p.atStart {
		trimmed := strings.TrimLeft(p.buf, " \t\r\n")
		if trimmed == "" {
			return ev // only whitespace so far: a <think> may still come
		}
		if strings.HasPrefix(trimmed, ThinkOpen) {
			p.buf = trimmed[len(ThinkOpen):]
			p.state, p.reasonStart, p.atStart = stateReasoning, true, false
			return ev
		}
		if strings.HasPrefix(ThinkOpen, trimmed) {
			return ev // could still become <think>
		}
		p.atStart = false
	}
	if i := strings.Index(p.buf, ToolCallOpen); i >= 0 {
		ev = p.content(ev, p.buf[:i])
		p.buf = p.buf[i+len(ToolCallOpen):]
		p.state = stateToolCall
		return ev
	}
	keep := partialSuffix(p.buf, ToolCallOpen)
	ev = p.content(ev, p.buf[:len(p.buf)-keep])
	p.buf = p.buf[len(p.buf)-keep:]
	return ev
}

// Finish flushes what is held back at the end of the output; an open tool
// call or reasoning block is reported as truncated.
func (p *Parser) Finish() []Event {
	var ev []Event
	rest := p.buf
	p.buf = ""
	switch p.state {
	case stateReasoning:
		ev = p.reasoning(ev, rest, true)
		ev = append(ev, Event{Kind: EventError, Text: "output ended inside the reasoning (no " + ThinkClose + ")", Problem: ProblemTruncatedReasoning})
	case stateToolCall:
		raw := ToolCallOpen + rest
		ev = append(ev, Event{Kind: EventError, Text: "output ended inside a tool call (no " + ToolCallClose + "): generation stopped mid-call",
			Problem: ProblemTruncatedToolCall, Raw: raw})
		ev = p.content(ev, raw)
	default:
		if p.afterThink {
			rest = strings.TrimLeft(rest, "\n")
		}
		ev = p.content(ev, rest)
	}
	p.state = stateContent
	return ev
}

func (p *Parser) content(ev []Event, s string) []Event {
	if s == "" {
		return ev
	}
	return append(ev, Event{Kind: EventContent, Text: s})
}

// reasoning emits reasoning text without the newlines that surround it
// inside <think>…</think> (the chat template strips them too). Trailing
// newlines are held until more reasoning shows they are inside it.
func (p *Parser) reasoning(ev []Event, s string, final bool) []Event {
	if p.reasonStart {
		s = strings.TrimLeft(s, "\n")
		if s == "" {
			return ev
		}
		p.reasonStart = false
	}
	s = p.heldNL + s
	trimmed := strings.TrimRight(s, "\n")
	p.heldNL = s[len(trimmed):]
	if final {
		p.heldNL = ""
	}
	if trimmed == "" {
		return ev
	}
	return append(ev, Event{Kind: EventReasoning, Text: trimmed})
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of marker: text that must wait for the next delta.
func partialSuffix(s, marker string) int {
	for n := min(len(s), len(marker)-1); n > 0; n-- {
		if strings.HasSuffix(s, marker[:n]) {
			return n
		}
	}
	return 0
}
