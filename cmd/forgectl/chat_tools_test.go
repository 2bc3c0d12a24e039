package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

// toolsSpy is the fake engine, recording the tools each chat renders with.
type toolsSpy struct {
	*fakeengine.Engine
	got chan []wire.Object
}

func (s *toolsSpy) RenderChat(p daemon.ChatPrompt) (string, error) {
	s.got <- p.Tools
	return s.Engine.RenderChat(p)
}

// chat --tools FILE sends the schemas with their keys in the file's order;
// a file that is not an array of objects is refused naming the flag.
func TestChatToolsKeepTheirOrder(t *testing.T) {
	spy := &toolsSpy{fakeengine.New(fakeengine.Options{StopAfter: 5}), make(chan []wire.Object, 1)}
	sock, _ := serveDaemon(t, spy)
	const schema = `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}},"description":"Weather now"}}`
	file := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(file, []byte("[\n"+schema+"\n]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCtl(t, "", "chat", "--socket", sock, "--tools", file, "weather?"); err != nil {
		t.Fatal(err)
	}
	tools := <-spy.got
	if len(tools) != 1 {
		t.Fatalf("the daemon rendered with %d tools, want 1", len(tools))
	}
	got, err := json.Marshal(tools[0])
	if err != nil || string(got) != schema {
		t.Fatalf("tool as rendered: %s (%v)\nwant (same key order): %s", got, err, schema)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"type":"function"}`), 0o644)
	if _, _, err := runCtl(t, "", "chat", "--socket", sock, "--tools", bad, "hi"); err == nil || !strings.Contains(err.Error(), "--tools "+bad) {
		t.Fatalf("a non-array tools file: %v", err)
	}
	if _, _, err := runCtl(t, "", "chat", "--socket", sock, "--tools", filepath.Join(t.TempDir(), "none.json"), "hi"); err == nil || !strings.Contains(err.Error(), "--tools") {
		t.Fatalf("a missing tools file: %v", err)
	}
}
