package chat

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/text/jinja"
)

func weatherTools(t testing.TB) *jinja.List {
	t.Helper()
	v, err := jinja.ParseJSON([]byte(`[
	 {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
	   "city": {"type": "string"}, "days": {"type": "integer"}, "temp": {"type": "number"},
	   "metric": {"type": "boolean"}, "opts": {"type": "object"}, "hours": {"type": ["array", "null"]}}}}},
	 {"name": "bare_tool", "parameters": {"properties": {"n": {"type": "integer"}}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	return v.(*jinja.List)
}

type parseCase struct {
	name       string
	text       string
	inThinking bool
	want       Output
	errHas     string // substring of Error; "" means no error
}

func parseCases() []parseCase {
	xmlCall := "<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=temp>\n-1.5e2\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n<parameter=opts>\n{\"a\": [1, 2], \"z\": null}\n</parameter>\n<parameter=hours>\n[9, 12]\n</parameter>\n<parameter=note>\nline 1\n\nline 3\n</parameter>\n</function>\n</tool_call>"
	xmlArgs := `{"city":"San Francisco","days":3,"temp":-1.5e2,"metric":true,"opts":{"a":[1,2],"z":null},"hours":[9,12],"note":"line 1\n\nline 3"}`
	return []parseCase{
		{name: "plain", text: "Just an answer.\n", want: Output{Content: "Just an answer.\n"}},
		{name: "think_block", text: "<think>\nLet me think.\nMore.\n</think>\n\nThe answer is 4.",
			want: Output{Reasoning: "Let me think.\nMore.", Content: "The answer is 4."}},
		{name: "empty_think_block", text: "<think>\n\n</think>\n\nHi", want: Output{Content: "Hi"}},
		{name: "prompt_opened_think", inThinking: true, text: "I should add.\n</think>\n\n2 + 2 = 4",
			want: Output{Reasoning: "I should add.", Content: "2 + 2 = 4"}},
		{name: "truncated_reasoning", inThinking: true, text: "Still thinking\n\n",
			want: Output{Reasoning: "Still thinking"}, errHas: "ended inside the reasoning"},
		{name: "late_think_is_text", text: "Answer <think>x</think>", want: Output{Content: "Answer <think>x</think>"}},
		{name: "json_call", text: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>",
			want: Output{ToolCalls: []ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris","days":2}`}}}},
		{name: "json_calls_with_text_and_thinking", text: "<think>\nneed weather\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Rome\\\"}\"}\n</tool_call>\n<tool_call>\n{\"name\": \"bare_tool\", \"arguments\": {}}\n</tool_call>",
			want: Output{Reasoning: "need weather", Content: "Checking.", ToolCalls: []ToolCall{
				{Name: "get_weather", Arguments: `{"city":"Rome"}`}, {Name: "bare_tool", Arguments: `{}`}}}},
		{name: "xml_call_typed", text: "Sure.\n" + xmlCall,
			want: Output{Content: "Sure.", ToolCalls: []ToolCall{{Name: "get_weather", Arguments: xmlArgs}}}},
		{name: "xml_call_bare_tool", text: "<tool_call><function=bare_tool><parameter=n>\n42\n</parameter></function></tool_call>",
			want: Output{ToolCalls: []ToolCall{{Name: "bare_tool", Arguments: `{"n":42}`}}}},
		{name: "xml_unknown_tool_keeps_strings", text: "<tool_call>\n<function=other>\n<parameter=n>\n42\n</parameter>\n</function>\n</tool_call>",
			want: Output{ToolCalls: []ToolCall{{Name: "other", Arguments: `{"n":"42"}`}}}},
		{name: "xml_type_mismatch", text: "<tool_call>\n<function=get_weather>\n<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>",
			want:   Output{ToolCalls: []ToolCall{{Name: "get_weather", Arguments: `{"days":"three"}`}}},
			errHas: `parameter days: "three" is not an integer`},
		{name: "truncated_json_call", text: "Let me check.\n<tool_call>\n{\"name\": \"get_wea",
			want:   Output{Content: "Let me check.\n<tool_call>\n{\"name\": \"get_wea"},
			errHas: "generation stopped mid-call"},
		{name: "truncated_xml_call", text: "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
			want:   Output{Content: "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar"},
			errHas: "generation stopped mid-call"},
		{name: "truncated_in_marker", text: "Hello <tool_ca", want: Output{Content: "Hello <tool_ca"}},
		{name: "malformed_json_call", text: "A\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>\nB",
			want:   Output{Content: "A\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>\nB"},
			errHas: "malformed tool call: invalid JSON"},
		{name: "json_call_without_name", text: "<tool_call>{\"arguments\": {}}</tool_call>",
			want: Output{Content: "<tool_call>{\"arguments\": {}}</tool_call>"}, errHas: `no "name"`},
		{name: "malformed_xml_unclosed_function", text: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</tool_call>",
			want:   Output{Content: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</tool_call>"},
			errHas: "not closed with </function>"},
		{name: "malformed_xml_unclosed_parameter", text: "<tool_call><function=get_weather><parameter=city>Paris</function></tool_call>",
			want:   Output{Content: "<tool_call><function=get_weather><parameter=city>Paris</function></tool_call>"},
			errHas: "parameter city is not closed"},
		{name: "malformed_neither_form", text: "<tool_call>call get_weather(Paris)</tool_call>",
			want: Output{Content: "<tool_call>call get_weather(Paris)</tool_call>"}, errHas: "neither a JSON object"},
		{name: "good_call_after_bad_one", text: "<tool_call>oops</tool_call>\n<tool_call>\n{\"name\": \"bare_tool\", \"arguments\": {\"n\": 1}}\n</tool_call>",
			want:   Output{Content: "<tool_call>oops</tool_call>", ToolCalls: []ToolCall{{Name: "bare_tool", Arguments: `{"n":1}`}}},
			errHas: "malformed tool call"},
	}
}

func checkOutput(t *testing.T, c parseCase, got Output) {
	t.Helper()
	gotErr := got.Error
	got.Error = ""
	if !reflect.DeepEqual(got, c.want) {
		t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
	}
	switch {
	case c.errHas == "" && gotErr != "":
		t.Errorf("%s: unexpected error %q", c.name, gotErr)
	case c.errHas != "" && !strings.Contains(gotErr, c.errHas):
		t.Errorf("%s: error %q does not say %q", c.name, gotErr, c.errHas)
	}
}

func TestParse(t *testing.T) {
	tools := weatherTools(t)
	for _, c := range parseCases() {
		checkOutput(t, c, Parse(c.text, ParseOptions{InThinking: c.inThinking, Tools: tools}))
	}
}

// The streaming parser gives the same result however the text is split.
func TestStreamingMatchesOneShot(t *testing.T) {
	tools := weatherTools(t)
	rng := rand.New(rand.NewSource(1))
	for _, c := range parseCases() {
		for trial := 0; trial < 20; trial++ {
			p := NewParser(ParseOptions{InThinking: c.inThinking, Tools: tools})
			var ev []Event
			for rest := c.text; rest != ""; {
				n := 1 + rng.Intn(4)
				if trial == 0 {
					n = 1 // byte by byte
				}
				n = min(n, len(rest))
				ev = append(ev, p.Feed(rest[:n])...)
				rest = rest[n:]
			}
			checkOutput(t, c, Collect(append(ev, p.Finish()...)))
		}
	}
}

// Reasoning streams as it is generated, not only when </think> arrives.
func TestStreamingEmitsEarly(t *testing.T) {
	p := NewParser(ParseOptions{InThinking: true})
	ev := p.Feed("First idea.\nSecond")
	if len(ev) == 0 || ev[0].Kind != EventReasoning || ev[0].Text != "First idea.\nSecond" {
		t.Fatalf("events %+v", ev)
	}
	ev = p.Feed("\n</think>\n\nDone <tool")
	if len(ev) != 1 || ev[0].Kind != EventContent || ev[0].Text != "Done " {
		t.Fatalf("events %+v", ev)
	}
}

func TestPromptOpensThinking(t *testing.T) {
	if !PromptOpensThinking("<|im_start|>assistant\n<think>\n") {
		t.Error("open think not detected")
	}
	if PromptOpensThinking("<|im_start|>assistant\n<think>\n\n</think>\n\n") || PromptOpensThinking("<|im_start|>assistant\n") {
		t.Error("closed or absent think detected as open")
	}
}

func FuzzParse(f *testing.F) {
	for _, c := range parseCases() {
		f.Add(c.text, c.inThinking, uint8(3))
	}
	tools := weatherTools(f)
	f.Fuzz(func(t *testing.T, text string, inThinking bool, chunk uint8) {
		opts := ParseOptions{InThinking: inThinking, Tools: tools}
		whole := Parse(text, opts)
		p := NewParser(opts)
		var ev []Event
		step := int(chunk%16) + 1
		for rest := text; rest != ""; {
			n := min(step, len(rest))
			ev = append(ev, p.Feed(rest[:n])...)
			rest = rest[n:]
		}
		if split := Collect(append(ev, p.Finish()...)); !reflect.DeepEqual(split, whole) {
			t.Fatalf("split parse differs:\n%+v\n%+v", split, whole)
		}
		// Without markup the text is all answer, byte for byte.
		if !inThinking && !strings.Contains(text, "<") && (whole.Content != text || whole.Reasoning != "" || whole.Error != "") {
			t.Fatalf("plain text changed: %+v", whole)
		}
	})
}
