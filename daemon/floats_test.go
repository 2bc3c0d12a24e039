package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/refdata"
)

// pythonRender is one line of testdata/python-jinja2/qwen3_renders.jsonl:
// a conversation rendered by Python's Jinja2 in transformers' environment.
type pythonRender struct {
	Name           string          `json:"name"`
	Messages       json.RawMessage `json:"messages"`
	Tools          json.RawMessage `json:"tools"`
	EnableThinking *bool           `json:"enable_thinking"`
	Text           string          `json:"text"`
}

func pythonRenders(t *testing.T) []pythonRender {
	t.Helper()
	f, err := os.Open(refdata.Path(t, "python-jinja2", "qwen3_renders.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []pythonRender
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r pythonRender
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if len(out) < 3 {
		t.Fatalf("%d Python renders, want 3", len(out))
	}
	return out
}

// A tool call's arguments and a tool schema with floats (300.0, 1.0,
// -0.0, 1e-06, 1e16) sent by the Go client reach the template as floats,
// not integers: the prompt is byte for byte Python Jinja2's, which prints
// json.dumps's forms ("300.0", "1e-06", "1e+16"). The JSON→msgpack→JSON
// path used to drop the ".0".
func TestChatFloatArgumentsRenderAsPython(t *testing.T) {
	ts, b := startRenderCapture(t)
	ctx := context.Background()
	c, err := client.Dial(ctx, ts.path, client.Options{Name: "floats-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, ref := range pythonRenders(t) {
		var args wire.ChatArgs
		if err := json.Unmarshal(ref.Messages, &args.Messages); err != nil {
			t.Fatal(err)
		}
		if args.Tools, err = wire.ObjectsFromJSON(ref.Tools); err != nil {
			t.Fatal(err)
		}
		if ref.EnableThinking != nil && !*ref.EnableThinking {
			args.Thinking = "off"
		}
		if _, err := c.Chat(ctx, args).Result(); err != nil {
			t.Fatalf("%s: chat: %v", ref.Name, err)
		}
		if got := b.last(t); got != ref.Text {
			t.Errorf("%s: rendered prompt differs from Python's\n got %q\nwant %q", ref.Name, got, ref.Text)
		}
	}
}
