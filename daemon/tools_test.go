package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/refdata"
)

// renderCapture renders chats with the real Qwen3 template (modelbackend,
// tokenizer only) and records each prompt; the fake engine generates.
type renderCapture struct {
	*fakeengine.Engine
	render  *modelbackend.Backend
	mu      sync.Mutex
	prompts []string
}

func (b *renderCapture) RenderChat(p daemon.ChatPrompt) (string, error) {
	s, err := b.render.RenderChat(p)
	b.mu.Lock()
	b.prompts = append(b.prompts, s)
	b.mu.Unlock()
	return s, err
}

func (b *renderCapture) last(t *testing.T) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.prompts) == 0 {
		t.Fatal("no chat was rendered")
	}
	return b.prompts[len(b.prompts)-1]
}

func startRenderCapture(t *testing.T) (*testServer, *renderCapture) {
	t.Helper()
	rb, err := modelbackend.Open(filepath.Dir(refdata.Path(t, "qwen3", "tokenizer.json")), modelbackend.Options{TokenizerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	b := &renderCapture{Engine: fakeengine.New(fakeengine.Options{StopAfter: 4}), render: rb}
	return startBackend(t, daemon.Config{}, b), b
}

// renderCase is one line of a reference render file (the Hugging Face
// renders), its JSON kept raw so the tools' key order is the reference's.
type renderCase struct {
	Name           string          `json:"name"`
	Messages       json.RawMessage `json:"messages"`
	Tools          json.RawMessage `json:"tools"`
	EnableThinking *bool           `json:"enable_thinking"`
	Text           string          `json:"text"`
}

func referenceRender(t *testing.T, name string) renderCase {
	t.Helper()
	return readRender(t, refdata.Path(t, "qwen3", "chat_renders.jsonl"), name)
}

// readRender returns the line named name of a render file.
func readRender(t *testing.T, path, name string) renderCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c renderCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no render %q in %s", name, path)
	return renderCase{}
}

// Tools sent by the Go client, built from the reference's JSON, reach the
// chat template in the caller's key order: the prompt is byte for byte the
// Hugging Face render (a Go map would put "function" before "type").
func TestChatToolsRenderInCallersKeyOrder(t *testing.T) {
	ts, b := startRenderCapture(t)
	ctx := context.Background()
	c, err := client.Dial(ctx, ts.path, client.Options{Name: "tools-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, name := range []string{"tools", "tool_call_and_response"} {
		ref := referenceRender(t, name)
		var args wire.ChatArgs
		if err := json.Unmarshal(ref.Messages, &args.Messages); err != nil {
			t.Fatal(err)
		}
		if args.Tools, err = wire.ObjectsFromJSON(ref.Tools); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Chat(ctx, args).Result(); err != nil {
			t.Fatalf("%s: chat: %v", name, err)
		}
		if got := b.last(t); got != ref.Text {
			t.Errorf("%s: rendered prompt differs from the reference\n got %q\nwant %q", name, got, ref.Text)
		}
	}
}

func must(o wire.Object, err error) wire.Object {
	if err != nil {
		panic(err)
	}
	return o
}

// The same over raw frames (docs/PROTOCOL.md: key order in tools is
// significant), with a schema whose property keys are in reverse order.
func TestChatToolsKeyOrderOverRawFrames(t *testing.T) {
	ts, b := startRenderCapture(t)
	r := dialRaw(t, ts.path)
	r.hello()
	str := must(wire.ObjectOf("type", "string"))
	tool := must(wire.ObjectOf("type", "function", "function", must(wire.ObjectOf(
		"name", "lookup", "parameters", must(wire.ObjectOf(
			"type", "object", "required", []string{"zip"},
			"properties", must(wire.ObjectOf("zip", str, "country", str)),
		)),
	))))
	r.write(map[string]any{"id": 2, "op": "chat", "args": map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": "where?"}}, "tools": []any{tool}}})
	for {
		m := r.read()
		if _, isReply := m["ok"]; isReply {
			result(t, m)
			break
		}
	}
	want := `{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "required": ["zip"], ` +
		`"properties": {"zip": {"type": "string"}, "country": {"type": "string"}}}}}`
	if got := b.last(t); !strings.Contains(got, "<tools>\n"+want+"\n</tools>") {
		t.Errorf("the tool is not rendered in the caller's order; want %s in\n%s", want, got)
	}
	// A tool the template cannot receive is refused, naming where.
	r.write(map[string]any{"id": 3, "op": "chat", "args": map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": "x"}}, "tools": []any{map[string]any{"type": []byte{1}}}}})
	msg := expectError(t, r.read(), 3, wire.CodeBadRequest)
	if !strings.Contains(msg, "args.tools") || !strings.Contains(msg, "object.type: binary data") {
		t.Errorf("error %q does not name the field and the problem", msg)
	}
}
