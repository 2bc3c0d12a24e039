package ops

import (
	"regexp"
	"testing"

	"github.com/forgedaemon/forged/client/wire"
)

// twoCalls is model output with two tool calls.
const twoCalls = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n" +
	"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"

// callIDsOf parses twoCalls, fed in pieces of n bytes, as the reply to
// prompt and a, and returns the calls' ids.
func callIDsOf(t *testing.T, prompt string, a wire.ChatArgs, n int) []string {
	t.Helper()
	o, err := newChatOutput(prompt, nil, a)
	if err != nil {
		t.Fatal(err)
	}
	var ev wire.TokenEvent
	for i := 0; i < len(twoCalls); i += n {
		o.feed(&ev, twoCalls[i:min(i+n, len(twoCalls))])
	}
	o.finish(&ev)
	var res wire.GenerationResult
	res.FinishReason = wire.FinishStop
	o.result(&res)
	if len(res.ToolCalls) != 2 || res.FinishReason != wire.FinishToolCalls {
		t.Fatalf("parsed %d calls (finish %s), want 2: %+v", len(res.ToolCalls), res.FinishReason, res)
	}
	for i, c := range res.ToolCalls {
		if ev.ToolCalls[i].ID != c.ID {
			t.Errorf("call %d: streamed id %s, reply id %s", i, ev.ToolCalls[i].ID, c.ID)
		}
	}
	return []string{res.ToolCalls[0].ID, res.ToolCalls[1].ID}
}

// Tool-call ids are a function of the turn and the call's index: the same
// request replayed gives the same ids however the text streams in; the
// two calls of a turn differ; and a different conversation, seed, format
// or tool_choice gives different ids. All are OpenAI-style call_ ids.
func TestToolCallIDsAreDeterministic(t *testing.T) {
	const prompt = "<|im_start|>user\nweather and time?<|im_end|>\n<|im_start|>assistant\n"
	seeded := wire.ChatArgs{Sampling: &wire.Sampling{Temperature: 1, Seed: 7}}
	want := callIDsOf(t, prompt, seeded, 1000)
	shape := regexp.MustCompile(`^call_[0-9a-f]{24}$`)
	for _, id := range want {
		if !shape.MatchString(id) {
			t.Errorf("id %q is not call_ and 24 hex digits", id)
		}
	}
	if want[0] == want[1] {
		t.Fatalf("both calls of a turn are %s", want[0])
	}
	if got := callIDsOf(t, prompt, seeded, 3); got[0] != want[0] || got[1] != want[1] {
		t.Errorf("the replayed turn's ids %v, first %v", got, want)
	}
	seen := map[string]string{want[0]: "first", want[1]: "first"}
	for name, tc := range map[string]struct {
		prompt string
		args   wire.ChatArgs
	}{
		"a later turn": {prompt + twoCalls + "<|im_end|>\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n", seeded},
		"another seed": {prompt, wire.ChatArgs{Sampling: &wire.Sampling{Temperature: 1, Seed: 8}}},
		"greedy":       {prompt, wire.ChatArgs{}},
		"a format":     {prompt, wire.ChatArgs{Sampling: seeded.Sampling, Format: &wire.Format{JSON: true}}},
		"tool_choice":  {prompt, wire.ChatArgs{Sampling: seeded.Sampling, ToolChoice: &wire.ToolChoice{Mode: wire.ToolChoiceRequired}}},
	} {
		for _, id := range callIDsOf(t, tc.prompt, tc.args, 5) {
			if other, dup := seen[id]; dup {
				t.Errorf("%s: id %s repeats one of %s", name, id, other)
			}
			seen[id] = name
		}
	}
}
