package chat

import (
	"fmt"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/internal/refdata"
)

// BenchmarkRenderQwen3 renders a 40-turn conversation with tools and tool
// calls with the real Qwen3 template (reports prompt bytes per second).
func BenchmarkRenderQwen3(b *testing.B) {
	tpl, err := LoadTemplate(refdata.Path(b, "qwen3", "tokenizer_config.json"))
	if err != nil {
		b.Fatal(err)
	}
	var msgs []string
	for i := 0; i < 20; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role": "user", "content": "Question %d about the weather in a city with a long name?"}`, i),
			fmt.Sprintf(`{"role": "assistant", "content": "<think>\nreasoning %d\n</think>\n\nLet me check.", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": %d}}}]}`, i, i),
		)
	}
	body := `{"add_generation_prompt": true, "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}], "messages": [` + strings.Join(msgs, ",") + `]}`
	req, err := ParseRequest([]byte(body))
	if err != nil {
		b.Fatal(err)
	}
	out, err := tpl.Render(req)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tpl.Render(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseStreaming feeds a reasoning + XML tool-call response one
// small delta at a time, as the generator does.
func BenchmarkParseStreaming(b *testing.B) {
	text := "<think>\n" + strings.Repeat("Some reasoning words here. ", 200) + "\n</think>\n\nAnswer.\n" +
		"<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
	tools := weatherTools(b)
	b.SetBytes(int64(len(text)))
	for i := 0; i < b.N; i++ {
		p := NewParser(ParseOptions{Tools: tools})
		for j := 0; j < len(text); j += 4 {
			p.Feed(text[j:min(j+4, len(text))])
		}
		p.Finish()
	}
}
