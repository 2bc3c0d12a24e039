package modelcmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/internal/refdata"
)

func qwen3Testdata(t *testing.T, name string) string {
	t.Helper()
	return refdata.Path(t, "qwen3", name)
}

func TestRenderChatJSONLinesMatchesReference(t *testing.T) {
	in, err := os.ReadFile(qwen3Testdata(t, "chat_renders.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(qwen3Testdata(t, "tokenizer_config.json"))
	out, _, err := runCtl(t, string(in), "render-chat", "--tokenizer-config", dir, "--jsonl=true", "--json=false")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	sc := bufio.NewScanner(bytes.NewReader(in))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		want = append(want, l.Text)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d output lines for %d requests", len(lines), len(want))
	}
	for i, l := range lines {
		var got struct{ Text string }
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("output line %d: %v", i+1, err)
		}
		if got.Text != want[i] {
			t.Errorf("line %d: got %q want %q", i+1, got.Text, want[i])
		}
	}
}

func TestRenderChatBadLineNamesIt(t *testing.T) {
	cfg := qwen3Testdata(t, "tokenizer_config.json")
	in := `{"messages":[{"role":"user","content":"ok"}]}` + "\n\n" + `{"messages":"nope"}` + "\n"
	out, _, err := runCtl(t, in, "render-chat", "--tokenizer-config", cfg, "--jsonl=true", "--json=false")
	if err == nil || !strings.Contains(err.Error(), "line 3: messages: must be a list") {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(out, `"text":"<|im_start|>user\nok<|im_end|>\n"`) {
		t.Fatalf("the good line before the bad one was lost: %q", out)
	}
	if _, _, err := runCtl(t, "{not json", "render-chat", "--tokenizer-config", cfg, "--jsonl=true", "--json=false"); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("bad JSON: %v", err)
	}
}

func TestRenderChatSingleDocument(t *testing.T) {
	cfg := qwen3Testdata(t, "tokenizer_config.json")
	req := `{"messages":[{"role":"user","content":"Quick answer please."}],"add_generation_prompt":true,"enable_thinking":false}`
	want := "<|im_start|>user\nQuick answer please.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
	out, _, err := runCtl(t, req, "render-chat", "--tokenizer-config", cfg, "--jsonl=false", "--json=false")
	if err != nil || out != want {
		t.Fatalf("text: %q, %v", out, err)
	}
	out, _, err = runCtl(t, req, "render-chat", "--tokenizer-config", cfg, "--jsonl=false", "--json=true")
	var got struct{ Text string }
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Text != want {
		t.Fatalf("--json: %q, %v", out, err)
	}
}
