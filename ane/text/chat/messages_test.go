package chat

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/text/jinja"
	"github.com/forgedaemon/forged/internal/refdata"
)

func TestNormalizeMessages(t *testing.T) {
	req, err := ParseRequest([]byte(`{"messages": [
		{"role": "developer", "content": "Be brief."},
		{"role": "user", "content": "Weather?"},
		{"role": "assistant", "content": null, "reasoning": "need tool", "tool_calls": [
			{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}},
			{"name": "raw", "arguments": "not json"}]},
		{"role": "tool"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	before := toJSON(t, req.Messages)
	got := toJSON(t, NormalizeMessages(req.Messages))
	want := `[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "", "reasoning_content": "need tool", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}, {"name": "raw", "arguments": "not json"}]}, {"role": "tool", "content": ""}]`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if toJSON(t, req.Messages) != before {
		t.Fatal("NormalizeMessages modified its input")
	}
}

func toJSON(t *testing.T, v jinja.Value) string {
	t.Helper()
	tpl, err := jinja.Parse("{{ v|tojson }}")
	if err != nil {
		t.Fatal(err)
	}
	d := jinja.NewDict()
	d.Set("v", v)
	s, err := tpl.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// What the template writes for an assistant turn parses back to the same
// turn: render → parse → render is stable for the Qwen3 template.
func TestParsedTurnRendersBack(t *testing.T) {
	tpl, err := LoadTemplate(refdata.Path(t, "qwen3", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := ParseRequest([]byte(`{"messages": [{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": "Checking.", "reasoning_content": "Use the tool.",
		 "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := tpl.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	const start = "<|im_start|>assistant\n"
	turn := prompt[strings.Index(prompt, start)+len(start):]
	turn = strings.TrimSuffix(turn, "<|im_end|>\n")
	out := Parse(turn, ParseOptions{})
	if out.Error != "" || out.Reasoning != "Use the tool." || out.Content != "Checking." || len(out.ToolCalls) != 1 {
		t.Fatalf("parsed %+v from %q", out, turn)
	}
	again, err := tpl.Render(&Request{Messages: &jinja.List{Items: []jinja.Value{req.Messages.Items[0], out.Message()}}})
	if err != nil {
		t.Fatal(err)
	}
	if again != prompt {
		t.Fatalf("re-rendered turn differs:\n%q\n%q", again, prompt)
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "x"}], "add_generation_prompt": true}`))
	f.Add([]byte(`{"messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{\"a\": [1, 2.5]}"}}]}]}`))
	f.Add([]byte(`[[[[{}]]]]`))
	tpl, err := LoadTemplate(refdata.Path(f, "qwen3", "tokenizer_config.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := ParseRequest(data)
		if err != nil {
			return
		}
		if req.Messages == nil {
			t.Fatal("accepted a request without messages")
		}
		req.Messages = NormalizeMessages(req.Messages)
		_, _ = tpl.Render(req) // template errors are fine; panics are not
	})
}

// OpenAI clients send content: null beside tool_calls. The Qwen3 template
// cannot take that as is (it tests '</think>' in content); normalized, the
// request renders exactly as the reference rendering with content "".
func TestNormalizedNullContentMatchesReference(t *testing.T) {
	tpl, err := LoadTemplate(refdata.Path(t, "qwen3", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(refdata.Path(t, "qwen3", "chat_renders.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, `"name":"tool_call_and_response"`) {
			line = l
		}
	}
	if !strings.Contains(line, `"role":"assistant","content":""`) {
		t.Fatal("reference line not found")
	}
	var want struct{ Text string }
	if err := json.Unmarshal([]byte(line), &want); err != nil {
		t.Fatal(err)
	}
	req, err := ParseRequest([]byte(strings.Replace(line, `"role":"assistant","content":""`, `"role":"assistant","content":null`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tpl.Render(req); err == nil || !strings.Contains(err.Error(), "template line") {
		t.Fatalf("null content rendered without normalization: %v", err)
	}
	req.Messages = NormalizeMessages(req.Messages)
	got, err := tpl.Render(req)
	if err != nil || got != want.Text {
		t.Fatalf("got %q, %v\nwant %q", got, err, want.Text)
	}
}
