package chat

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// sharedTestdata is ../shared/testdata relative to the repository root.
func sharedTestdata(t testing.TB, parts ...string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	p := filepath.Join(append([]string{root, "..", "shared", "testdata"}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("reference data missing: %v", err)
	}
	return p
}

// Every conversation in the reference renderings renders byte for byte.
func TestReferenceRenders(t *testing.T) {
	tpl, err := LoadTemplate(sharedTestdata(t, "qwen3", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(sharedTestdata(t, "qwen3", "chat_renders.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var want struct {
			Name string `json:"name"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &want); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		req, err := ParseRequest(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", want.Name, err)
		}
		got, err := tpl.Render(req)
		if err != nil {
			t.Fatalf("%s: %v", want.Name, err)
		}
		if got != want.Text {
			t.Errorf("%s:\n got %q\nwant %q", want.Name, got, want.Text)
		}
	}
	if n < 8 {
		t.Fatalf("read only %d reference renderings", n)
	}
}
