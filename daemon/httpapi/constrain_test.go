package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/schematest"
	"github.com/forgedaemon/forged/internal/testbundle"
)

// Schemas with every part bounded, so a random model's masked output ends
// well within max_tokens: nested objects, bounded arrays, enums, $ref
// recursion, patterns and formats.
var replySchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer","minimum":0,"maximum":120},"address":{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"},"kind":{"enum":["home","work",null]}},"required":["zip","kind"],"additionalProperties":false}},"required":["name","age","address"],"additionalProperties":false}`,
	`{"type":"array","items":{"type":"integer","minimum":-3,"maximum":3},"minItems":2,"maxItems":4}`,
	`{"$defs":{"node":{"type":"object","properties":{"v":{"enum":[1,2,3]},"next":{"$ref":"#/$defs/node"}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/node"}`,
	`{"type":"object","properties":{"id":{"type":"string","format":"uuid"},"day":{"type":"string","format":"date"},"code":{"type":"string","pattern":"^[A-Z]{2}-[0-9]{2,3}$"}},"required":["id","day","code"],"additionalProperties":false}`,
}

func tinyHarness(t *testing.T) *harness {
	t.Helper()
	b, err := modelbackend.OpenRefBundle(testbundle.Tiny(t, 4), modelbackend.Options{Repo: "forged/tiny", Revision: "abc", Ladder: []int{1024}})
	if err != nil {
		t.Fatal(err)
	}
	return start(t, b, daemon.Config{})
}

// A chat with a format over the msgpack socket, sampled at temperature 1
// with several seeds on the tiny model: the answer always parses and
// validates (an independent validator), and the turn ends by itself.
func TestChatFormatAlwaysValidates(t *testing.T) {
	h := tinyHarness(t)
	cl := h.msgpack(t)
	ctx := context.Background()
	for i, schema := range replySchemas {
		v := schematest.Compile(t, schema)
		obj, err := wire.ObjectFromJSON([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		for seed := uint64(1); seed <= 3; seed++ {
			res, err := cl.Chat(ctx, wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "Answer in JSON."}},
				Format: &wire.Format{Schema: obj}, Thinking: "off",
				Sampling: &wire.Sampling{Temperature: 1, Seed: seed}, MaxTokens: ptr(uint64(600))}).Result()
			what := fmt.Sprintf("schema %d seed %d", i, seed)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if res.FinishReason != wire.FinishStop {
				t.Fatalf("%s: finished by %s: %q", what, res.FinishReason, res.Content)
			}
			schematest.Valid(t, v, res.Content, what)
		}
	}
	// "json": any JSON value.
	res, err := cl.Chat(ctx, wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "JSON"}}, Format: &wire.Format{JSON: true},
		Thinking: "off", MaxTokens: ptr(uint64(600))}).Result()
	if err != nil || !json.Valid([]byte(res.Content)) {
		t.Fatalf("format json: %v %q", err, res.Content)
	}
}

// A forced tool call (tool_choice naming one of two tools) is one
// well-formed call of that tool whose arguments follow its schema, and the
// turn ends to call it.
func TestChatToolChoiceForcesTheNamedTool(t *testing.T) {
	h := tinyHarness(t)
	cl := h.msgpack(t)
	params := `{"type":"object","properties":{"city":{"type":"string","maxLength":8},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"],"additionalProperties":false}`
	weather, _ := wire.ObjectFromJSON([]byte(`{"type":"function","function":{"name":"get_weather","parameters":` + params + `}}`))
	clock, _ := wire.ObjectFromJSON([]byte(`{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}`))
	v := schematest.Compile(t, params)
	for seed := uint64(1); seed <= 3; seed++ {
		res, err := cl.Chat(context.Background(), wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "Weather?"}},
			Tools: wire.Objects{clock, weather}, ToolChoice: &wire.ToolChoice{Name: "get_weather"}, Thinking: "off",
			Sampling: &wire.Sampling{Temperature: 1, Seed: seed}, MaxTokens: ptr(uint64(200))}).Result()
		if err != nil {
			t.Fatal(err)
		}
		if res.FinishReason != wire.FinishToolCalls || len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "get_weather" {
			t.Fatalf("seed %d: finish %s, calls %+v, content %q", seed, res.FinishReason, res.ToolCalls, res.Content)
		}
		args, _ := res.ToolCalls[0].Arguments.MarshalJSON()
		schematest.Valid(t, v, string(args), fmt.Sprintf("seed %d arguments", seed))
	}
}

// What cannot be enforced is refused before anything runs, naming the
// keyword and where it is, or the limit; so is a forced call of no tool,
// and a backend that cannot mask (the fake engine) never ignores a format.
func TestChatConstraintRefusals(t *testing.T) {
	h := tinyHarness(t)
	cl := h.msgpack(t)
	chat := func(a wire.ChatArgs) error {
		a.Messages = []wire.Message{{Role: "user", Content: "x"}}
		_, err := cl.Chat(context.Background(), a).Result()
		return err
	}
	schema := func(s string) *wire.Format {
		o, err := wire.ObjectFromJSON([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return &wire.Format{Schema: o}
	}
	enum := make([]string, 40000) // a compile limit, not a stall
	for i := range enum {
		enum[i] = fmt.Sprintf("%q", fmt.Sprintf("w%08x-%04d", i*2654435761, i))
	}
	for _, tc := range []struct {
		name string
		args wire.ChatArgs
		want []string
	}{
		{"keyword", wire.ChatArgs{Format: schema(`{"type":"object","properties":{"tags":{"type":"array","uniqueItems":true}}}`)}, []string{"uniqueItems", "/properties/tags"}},
		{"limit", wire.ChatArgs{Format: schema(`{"enum":[` + strings.Join(enum, ",") + `]}`)}, []string{"limit"}},
		{"no tools", wire.ChatArgs{ToolChoice: &wire.ToolChoice{Mode: wire.ToolChoiceRequired}}, []string{"args.tools is empty"}},
		{"unknown tool", wire.ChatArgs{Tools: wire.Objects{mustObject(t, `{"name":"a"}`)}, ToolChoice: &wire.ToolChoice{Name: "b"}}, []string{`"b"`, "not one of args.tools"}},
		{"both", wire.ChatArgs{Format: &wire.Format{JSON: true}, Tools: wire.Objects{mustObject(t, `{"name":"a"}`)}, ToolChoice: &wire.ToolChoice{Name: "a"}}, []string{"cannot be combined"}},
	} {
		err := chat(tc.args)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeBadRequest {
			t.Fatalf("%s: %v, want bad_request", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(we.Message, w) {
				t.Errorf("%s: %q does not say %q", tc.name, we.Message, w)
			}
		}
	}
	fake := start(t, fakeengine.New(fakeengine.Options{}), daemon.Config{}).msgpack(t)
	_, err := fake.Chat(context.Background(), wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "x"}}, Format: &wire.Format{JSON: true}}).Result()
	if we := (*wire.Error)(nil); !errors.As(err, &we) || !strings.Contains(we.Message, "cannot constrain") {
		t.Fatalf("fake engine with a format: %v, want a refusal", err)
	}
}

func mustObject(t *testing.T, s string) wire.Object {
	t.Helper()
	o, err := wire.ObjectFromJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func ptr[T any](v T) *T { return &v }
