package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/refdata"
)

// The tests of this file script the model's text (fakeengine.Scripted) and
// run everything after the engine for real: the Qwen3 tokenizer and chat
// template, the stream decoder, the daemon's output parser, the socket and
// the Go client.

var qwen3Text = sync.OnceValues(func() (*modelbackend.Backend, error) {
	dir, err := refdata.Dir()
	if err != nil {
		return nil, err
	}
	return modelbackend.Open(filepath.Join(dir, "qwen3"), modelbackend.Options{TokenizerOnly: true})
})

// scriptedModel is the Qwen3 text side (loaded once) with a scripted engine.
func scriptedModel(t *testing.T, step int) *fakeengine.Scripted {
	t.Helper()
	rb, err := qwen3Text()
	if err != nil {
		t.Fatal(err)
	}
	end, err := rb.Tokenize("<|im_end|>")
	if err != nil || len(end) != 1 {
		t.Fatalf("<|im_end|> tokenizes to %v, %v", end, err)
	}
	return &fakeengine.Scripted{Backend: rb, Step: step, EndOfTurn: end}
}

// openThinking renders like the Qwen3.5 family: with thinking on, the
// generation prompt opens <think> and the model starts inside its reasoning.
type openThinking struct{ *fakeengine.Scripted }

func (o openThinking) RenderChat(p daemon.ChatPrompt) (string, error) {
	s, err := o.Scripted.RenderChat(p)
	if p.Thinking {
		s += "<think>\n"
	}
	return s, err
}

func dialClient(t *testing.T, b daemon.Backend) *client.Client {
	t.Helper()
	ts := startBackend(t, daemon.Config{}, b)
	c, err := client.Dial(context.Background(), ts.path, client.Options{Name: "structured-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// streamed is what a chat's token events carried, concatenated.
type streamed struct {
	text, reasoning, content string
	calls                    []wire.ToolCall
	diags                    []wire.Diagnostic
}

func runChat(t *testing.T, c *client.Client, args wire.ChatArgs) (streamed, *wire.GenerationResult) {
	t.Helper()
	var st streamed
	s := c.Chat(context.Background(), args)
	for ev, err := range s.Tokens() {
		if err != nil {
			t.Fatalf("chat: %v", err)
		}
		st.text += ev.Text
		st.reasoning += ev.Reasoning
		st.content += ev.Content
		st.calls = append(st.calls, ev.ToolCalls...)
		st.diags = append(st.diags, ev.Diagnostics...)
	}
	res, err := s.Result()
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	// The stream and the reply agree: the text is the model's, and the
	// parsed parts are the same (the reply's content is trimmed around
	// tool calls).
	if st.text != res.Text {
		t.Errorf("streamed text %q, reply text %q", st.text, res.Text)
	}
	if st.reasoning != res.Reasoning {
		t.Errorf("streamed reasoning %q, reply reasoning %q", st.reasoning, res.Reasoning)
	}
	if want := res.Content; st.content != want && (len(res.ToolCalls) == 0 || strings.TrimSpace(st.content) != want) {
		t.Errorf("streamed content %q, reply content %q", st.content, want)
	}
	if !sameCalls(st.calls, res.ToolCalls) {
		t.Errorf("streamed tool calls %v, reply's %v", st.calls, res.ToolCalls)
	}
	if !reflect.DeepEqual(st.diags, res.Diagnostics) {
		t.Errorf("streamed diagnostics %v, reply's %v", st.diags, res.Diagnostics)
	}
	return st, res
}

func sameCalls(a, b []wire.ToolCall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Index != b[i].Index || a[i].ID != b[i].ID || a[i].Name != b[i].Name || a[i].Arguments.String() != b[i].Arguments.String() {
			return false
		}
	}
	return true
}

var weatherTools = `[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
  "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"type": "string"}}}}},
 {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
  "properties": {"q": {"type": "string"}, "filter": {"type": "object"}}}}}]`

// call is a tool call as a test expects it: the arguments' JSON with the
// keys in the order the model wrote them.
type call struct{ name, args string }

// Reasoning, answer and tool calls come apart for templates with thinking
// on (the model opens <think>, or the prompt did) and off; parallel calls
// keep their order and their arguments' key order (strings, nested
// objects, XML-form parameters typed by the schema); a malformed call and a
// parameter of the wrong type are diagnosed, the text kept. Each with one
// token per engine call and with several (a speculative cycle).
func TestChatStructuredOutput(t *testing.T) {
	const parallel = "<think>\nTwo lookups.\n</think>\n\nLet me check.\n" +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"c\", \"city\": \"Paris\"}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"café \\\"bar\\\"\", \"filter\": {\"zeta\": [1, 2.5, null, true], \"alpha\": {\"b\": \"é\"}}}}\n</tool_call>\n" +
		"<tool_call>\n<function=get_weather>\n<parameter=city>\nSão Paulo\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
	const malformed = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>"
	cases := []struct {
		name      string
		open      bool // the template opens <think> (Qwen3.5 style)
		thinking  string
		script    string
		reasoning string
		content   string
		calls     []call
		diags     []string // kinds
		finish    string
	}{
		{name: "thinking on", script: "<think>\nThe user wants Paris.\nCheck twice.\n</think>\n\nIt is sunny in Paris.",
			reasoning: "The user wants Paris.\nCheck twice.", content: "It is sunny in Paris.", finish: "stop"},
		{name: "thinking off", thinking: "off", script: "Plain answer; a <think> here is text.",
			content: "Plain answer; a <think> here is text.", finish: "stop"},
		{name: "prompt opens thinking", open: true, script: "Reasoning first.\n</think>\n\nThen the answer.",
			reasoning: "Reasoning first.", content: "Then the answer.", finish: "stop"},
		{name: "prompt opens thinking, off", open: true, thinking: "off", script: "No reasoning.",
			content: "No reasoning.", finish: "stop"},
		{name: "parallel calls", script: parallel, reasoning: "Two lookups.", content: "Let me check.",
			calls: []call{
				{"get_weather", `{"unit":"c","city":"Paris"}`},
				{"search", `{"q":"café \"bar\"","filter":{"zeta":[1,2.5,null,true],"alpha":{"b":"é"}}}`},
				{"get_weather", `{"city":"São Paulo","days":3}`},
			}, finish: "tool_calls"},
		{name: "malformed call", script: "Calling.\n" + malformed, content: "Calling.\n" + malformed,
			diags: []string{wire.DiagMalformedToolCall}, finish: "stop"},
		{name: "wrong parameter type", script: "<tool_call>\n<function=get_weather>\n<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>",
			calls: []call{{"get_weather", `{"days":"three"}`}}, diags: []string{wire.DiagToolCallArgument}, finish: "tool_calls"},
	}
	tools, err := wire.ObjectsFromJSON([]byte(weatherTools))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []int{1, 5} {
		for _, tc := range cases {
			sb := scriptedModel(t, step)
			var b daemon.Backend = sb
			if tc.open {
				b = openThinking{sb}
			}
			c := dialClient(t, b)
			sb.Script(tc.script)
			st, res := runChat(t, c, wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "Weather?"}},
				Tools: tools, Thinking: tc.thinking})
			name := fmt.Sprintf("%s, step %d", tc.name, step)
			if res.Text != tc.script {
				t.Errorf("%s: text %q, want the script %q (the end-of-turn token shows no text)", name, res.Text, tc.script)
			}
			if res.Reasoning != tc.reasoning || res.Content != tc.content {
				t.Errorf("%s: reasoning %q content %q, want %q and %q", name, res.Reasoning, res.Content, tc.reasoning, tc.content)
			}
			if res.FinishReason != tc.finish {
				t.Errorf("%s: finish %q, want %q", name, res.FinishReason, tc.finish)
			}
			checkCalls(t, name, res.ToolCalls, tc.calls)
			var kinds []string
			for _, d := range res.Diagnostics {
				kinds = append(kinds, d.Kind)
				if d.Message == "" {
					t.Errorf("%s: diagnostic %s says nothing", name, d.Kind)
				}
			}
			if !reflect.DeepEqual(kinds, tc.diags) {
				t.Errorf("%s: diagnostics %v, want kinds %v", name, res.Diagnostics, tc.diags)
			}
			if tc.name == "malformed call" && (len(res.Diagnostics) != 1 || res.Diagnostics[0].Text != malformed ||
				!strings.Contains(res.Diagnostics[0].Message, "invalid JSON")) {
				t.Errorf("%s: the diagnostic %v does not carry the call's text and why", name, res.Diagnostics)
			}
			if tc.name == "parallel calls" && strings.Count(st.text, "<tool_call>") != 3 {
				t.Errorf("%s: the raw text lost a call: %q", name, st.text)
			}
		}
	}
}

func checkCalls(t *testing.T, name string, got []wire.ToolCall, want []call) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tool calls %v, want %d", name, len(got), got, len(want))
	}
	ids := map[string]bool{}
	for i, c := range got {
		if c.Index != uint64(i) || c.Name != want[i].name || c.Arguments.String() != want[i].args {
			t.Errorf("%s: call %d is #%d %s %s, want %s %s", name, i, c.Index, c.Name, c.Arguments, want[i].name, want[i].args)
		}
		if !strings.HasPrefix(c.ID, "call_") || ids[c.ID] {
			t.Errorf("%s: call %d has id %q (not call_… or not unique)", name, i, c.ID)
		}
		ids[c.ID] = true
	}
}

// A tool call cut off by max_tokens is not lost: its text is the content
// (after the reasoning), with a diagnostic holding it, and the finish
// reason is length.
func TestChatToolCallCutByMaxTokens(t *testing.T) {
	const script = "<think>\nok\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>"
	for _, step := range []int{1, 3} {
		sb := scriptedModel(t, step)
		c := dialClient(t, sb)
		ids, _ := sb.Tokenize(script)
		maxTok := uint64(len(ids) - 6) // inside the arguments
		sb.Script(script)
		_, res := runChat(t, c, wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "Weather?"}}, MaxTokens: &maxTok})
		if res.FinishReason != wire.FinishLength || len(res.ToolCalls) != 0 {
			t.Fatalf("step %d: finish %q with calls %v, want length and none", step, res.FinishReason, res.ToolCalls)
		}
		start := strings.Index(res.Text, "<tool_call>")
		if start < 0 || strings.Contains(res.Text, "</tool_call>") || !strings.HasPrefix(script, res.Text) {
			t.Fatalf("step %d: text %q is not the script cut inside the call", step, res.Text)
		}
		checkTruncatedCall(t, fmt.Sprintf("step %d", step), res, res.Text[start:])
	}
	// A stop string inside the call cuts it the same way.
	sb := scriptedModel(t, 2)
	c := dialClient(t, sb)
	sb.Script(script)
	_, res := runChat(t, c, wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "Weather?"}}, Stop: []string{"</tool_call>"}})
	if res.FinishReason != wire.FinishStopString || len(res.ToolCalls) != 0 {
		t.Fatalf("stop string: finish %q with calls %v, want stop_string and none", res.FinishReason, res.ToolCalls)
	}
	checkTruncatedCall(t, "stop string", res, strings.TrimSuffix(script[strings.Index(script, "<tool_call>"):], "</tool_call>"))
}

func checkTruncatedCall(t *testing.T, name string, res *wire.GenerationResult, cut string) {
	t.Helper()
	if res.Reasoning != "ok" || res.Content != cut {
		t.Errorf("%s: reasoning %q content %q, want \"ok\" and the cut call %q", name, res.Reasoning, res.Content, cut)
	}
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Kind != wire.DiagTruncatedToolCall || res.Diagnostics[0].Text != cut {
		t.Errorf("%s: diagnostics %v, want one truncated_tool_call holding %q", name, res.Diagnostics, cut)
	}
}

// A turn's tool calls and the tools' results, sent back in the next turn
// (the reply's Message, tool messages naming the call), render exactly as
// the reference renders the same conversation (@huggingface/jinja with the
// Qwen3 template): the calls' arguments in the model's key order, the
// reasoning where the template shows it. The model's turn is scripted to
// be the reference conversation's assistant turn.
func TestChatToolRoundTrip(t *testing.T) {
	chatRenders := filepath.Join("..", "ane", "text", "chat", "testdata", "qwen3_renders.jsonl")
	cases := []struct {
		file, name, script string
	}{
		{"", "tool_call_and_response",
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
		// reasoning, then a call with a string and an integer
		{chatRenders, "random_144", "<think>\nRésumé of 東京 ☕ — \"quoted\" \\ back\n</think>\n\n" +
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"São Paulo\", \"days\": 3}}\n</tool_call>"},
		// parallel calls, one with nested arguments
		{chatRenders, "random_32", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"q\": \"x\", \"nested\": {\"a\": [1, 2.5, null, true]}}}\n</tool_call>\n" +
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
	}
	for _, tc := range cases {
		var ref renderCase
		if tc.file == "" {
			ref = referenceRender(t, tc.name)
		} else {
			ref = readRender(t, tc.file, tc.name)
		}
		var msgs []wire.Message
		if err := json.Unmarshal(ref.Messages, &msgs); err != nil {
			t.Fatal(err)
		}
		lastUser := 0
		for i, m := range msgs {
			if m.Role == "user" {
				lastUser = i
			}
		}
		args := wire.ChatArgs{Thinking: "on"}
		if ref.EnableThinking != nil && !*ref.EnableThinking {
			args.Thinking = "off"
		}
		if len(ref.Tools) > 0 {
			var err error
			if args.Tools, err = wire.ObjectsFromJSON(ref.Tools); err != nil {
				t.Fatal(err)
			}
		}
		for _, session := range []bool{false, true} {
			sb := scriptedModel(t, 2)
			c := dialClient(t, sb)
			sb.Script(tc.script, "Done.")
			first := args
			first.Messages = msgs[:lastUser+1]
			if session {
				var err error
				if first.Session, err = c.OpenSession(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			_, res := runChat(t, c, first)
			if res.FinishReason != wire.FinishToolCalls {
				t.Fatalf("%s: finish %q, want tool_calls", tc.name, res.FinishReason)
			}
			// The results, one tool message per reference tool message,
			// naming the calls in turn.
			var results []wire.Message
			for i, m := range msgs[lastUser+2:] {
				m.ToolCallID = res.ToolCalls[min(i, len(res.ToolCalls)-1)].ID
				results = append(results, m)
			}
			second := args
			second.Session = first.Session
			if session {
				second.Messages = results // the daemon keeps the assistant turn
			} else {
				answer, err := res.Message()
				if err != nil {
					t.Fatal(err)
				}
				second.Messages = append(append(append([]wire.Message(nil), msgs[:lastUser+1]...), answer), results...)
			}
			if _, res := runChat(t, c, second); res.Content != "Done." {
				t.Errorf("%s: second turn content %q", tc.name, res.Content)
			}
			prompts := sb.Prompts()
			if got := prompts[len(prompts)-1]; got != ref.Text {
				t.Errorf("%s (session %v): the round trip renders differently from the reference\n got %q\nwant %q", tc.name, session, got, ref.Text)
			}
		}
	}
}

// The parsed keys over raw frames (docs/PROTOCOL.md §5): token events add
// reasoning, content, tool_calls and diagnostics only where they carry
// something; the reply has content, reasoning, tool_calls and
// finish_reason "tool_calls"; a call is {index, id, name, arguments} with
// the arguments a map in the model's key order on the wire.
func TestChatStructuredOutputOverRawFrames(t *testing.T) {
	sb := scriptedModel(t, 4)
	ts := startBackend(t, daemon.Config{}, sb)
	r := dialRaw(t, ts.path)
	r.hello()
	sb.Script("<think>\nHm.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"c\", \"city\": \"Paris\"}}\n</tool_call>")
	r.write(map[string]any{"id": 2, "op": "chat", "args": map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": "weather?"}}}})
	eventKeys := map[string]bool{"text": true, "ids": true, "t_ms": true, "reasoning": true, "content": true, "tool_calls": true, "diagnostics": true}
	var reasoning string
	var calls []any
	for {
		body, err := r.readBody(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		m, err := decodeBody(body)
		if err != nil {
			t.Fatal(err)
		}
		if _, isReply := m["ok"]; isReply {
			res := result(t, m)
			var keys []string
			for k := range res {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if want := []string{"content", "context", "finish_reason", "reasoning", "revision", "text", "tool_calls", "usage"}; !slices.Equal(keys, want) {
				t.Errorf("reply keys %v, want %v", keys, want)
			}
			if res["finish_reason"] != "tool_calls" || res["reasoning"] != "Hm." || res["content"] != "" || len(res["tool_calls"].([]any)) != 1 {
				t.Errorf("reply %v", res)
			}
			if i, j := bytes.Index(body, []byte("\xa4unit")), bytes.Index(body, []byte("\xa4city")); i < 0 || j < i {
				t.Errorf("the reply's arguments are not in the model's order (unit at %d, city at %d)", i, j)
			}
			break
		}
		data := m["data"].(map[string]any)
		for k, v := range data {
			if !eventKeys[k] {
				t.Errorf("token event key %q is not documented", k)
			}
			if s, ok := v.(string); ok && s == "" && k != "text" {
				t.Errorf("token event key %q is present but empty", k)
			}
		}
		if s, ok := data["reasoning"].(string); ok {
			reasoning += s
		}
		if c, ok := data["tool_calls"].([]any); ok {
			calls = append(calls, c...)
			if i, j := bytes.Index(body, []byte("\xa4unit")), bytes.Index(body, []byte("\xa4city")); i < 0 || j < i {
				t.Errorf("the event's arguments are not in the model's order (unit at %d, city at %d)", i, j)
			}
		}
	}
	if reasoning != "Hm." || len(calls) != 1 {
		t.Fatalf("streamed reasoning %q and calls %v", reasoning, calls)
	}
	c := calls[0].(map[string]any)
	if len(c) != 4 || asUint(c["index"]) != 0 || c["name"] != "get_weather" || !strings.HasPrefix(c["id"].(string), "call_") {
		t.Errorf("tool call %v, want {index: 0, id: call_…, name: get_weather, arguments}", c)
	}
	if args := c["arguments"].(map[string]any); len(args) != 2 || args["unit"] != "c" || args["city"] != "Paris" {
		t.Errorf("arguments %v", args)
	}
}
