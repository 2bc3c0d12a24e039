package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/refdata"
)

// chat shows the reasoning apart (each line prefixed when stdout is not a
// terminal; hidden with --hide-reasoning), the answer, and each tool call
// as indented JSON with the arguments in the model's order.
func TestChatShowsReasoningAndToolCalls(t *testing.T) {
	rb, err := modelbackend.Open(filepath.Dir(refdata.Path(t, "qwen3", "tokenizer.json")), modelbackend.Options{TokenizerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	end, _ := rb.Tokenize("<|im_end|>")
	sb := &fakeengine.Scripted{Backend: rb, Step: 2, EndOfTurn: end}
	sock, _ := serveDaemon(t, sb)
	const script = "<think>\nStep one.\nStep two.\n</think>\n\nThe answer.\n" +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"c\", \"city\": \"Paris\"}}\n</tool_call>"
	sb.Script(script, script)
	out, _, err := runCtl(t, "", "chat", "--socket", sock, "weather?")
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`"id": "call_[0-9a-f]{24}"`)
	want := "thinking: Step one.\nthinking: Step two.\n\nThe answer.\n[tool call]\n{\n  \"index\": 0,\n  \"id\": \"ID\",\n" +
		"  \"name\": \"get_weather\",\n  \"arguments\": {\n    \"unit\": \"c\",\n    \"city\": \"Paris\"\n  }\n}\n\n"
	if got := id.ReplaceAllString(out, `"id": "ID"`); got != want {
		t.Errorf("chat printed\n%q\nwant\n%q", got, want)
	}
	out, _, err = runCtl(t, "", "chat", "--socket", sock, "--hide-reasoning", "weather?")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "Step") || !strings.HasPrefix(out, "The answer.\n[tool call]\n") {
		t.Errorf("--hide-reasoning printed %q", out)
	}
}

// On a terminal the reasoning is dimmed, not prefixed; a diagnostic goes
// to stderr with its kind.
func TestChatViewDimsReasoning(t *testing.T) {
	var out, errOut bytes.Buffer
	v := newChatView(false, true)
	for _, ev := range []wire.TokenEvent{{Reasoning: "a\nb"}, {Reasoning: "c"}, {Content: "answer"},
		{Diagnostics: []wire.Diagnostic{{Kind: wire.DiagTruncatedToolCall, Message: "cut"}}}} {
		if err := v.write(&out, &errOut, ev); err != nil {
			t.Fatal(err)
		}
	}
	if want := ansiDim + "a\nb" + ansiReset + ansiDim + "c" + ansiReset + "\n\nanswer"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	if !strings.Contains(errOut.String(), "truncated_tool_call: cut") {
		t.Errorf("stderr %q", errOut.String())
	}
}
