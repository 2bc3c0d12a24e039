package modelcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/internal/refdata"
)

func qwen3TokenizerDir(t *testing.T) string {
	t.Helper()
	return filepath.Dir(refdata.Path(t, "qwen3", "tokenizer.json"))
}

func TestTokenizeAndDetokenizeArguments(t *testing.T) {
	dir := qwen3TokenizerDir(t)
	out, _, err := runCtl(t, "", "tokenize", "--tokenizer", dir, "Hello, my dog is cute")
	if err != nil || out != "9707 11 847 5562 374 18838\n" {
		t.Fatalf("tokenize = %q, %v", out, err)
	}
	out, _, err = runCtl(t, "", "tokenize", "--tokenizer", filepath.Join(dir, "tokenizer.json"), "--json", "<|im_start|>user")
	var enc struct{ IDs []int }
	if err != nil || json.Unmarshal([]byte(out), &enc) != nil || !slices.Equal(enc.IDs, []int{151644, 872}) {
		t.Fatalf("tokenize --json = %q, %v", out, err)
	}
	out, _, err = runCtl(t, "hello world", "tokenize", "--tokenizer", dir) // text on stdin
	if err != nil || out != "14990 1879\n" {
		t.Fatalf("tokenize from stdin = %q, %v", out, err)
	}
	out, _, err = runCtl(t, "", "detokenize", "--tokenizer", dir, "9707,11", "847")
	if err != nil || out != "Hello, my\n" {
		t.Fatalf("detokenize = %q, %v", out, err)
	}
	out, _, err = runCtl(t, "[151644, 872]", "detokenize", "--tokenizer", dir, "--json")
	var dec struct{ Text string }
	if err != nil || json.Unmarshal([]byte(out), &dec) != nil || dec.Text != "<|im_start|>user" {
		t.Fatalf("detokenize --json = %q, %v", out, err)
	}
}

// The CLI round trip over every reference line.
func TestTokenizeJSONLinesMatchesReference(t *testing.T) {
	dir := qwen3TokenizerDir(t)
	data, err := os.ReadFile(filepath.Join(dir, "encodings.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Text    string
		IDs     []int
		Decoded string
	}
	var texts, ids strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c struct {
			Text    string `json:"text"`
			IDs     []int  `json:"ids"`
			Decoded string `json:"decoded"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			Text    string
			IDs     []int
			Decoded string
		}(c))
		b, _ := json.Marshal(map[string]string{"text": c.Text})
		texts.Write(append(b, '\n'))
		b, _ = json.Marshal(map[string][]int{"ids": c.IDs})
		ids.Write(append(b, '\n'))
	}
	out, _, err := runCtl(t, texts.String(), "tokenize", "--tokenizer", dir, "--jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("%d output lines for %d inputs", len(lines), len(cases))
	}
	for i, l := range lines {
		var got struct{ IDs []int }
		if err := json.Unmarshal([]byte(l), &got); err != nil || !slices.Equal(got.IDs, cases[i].IDs) {
			t.Fatalf("tokenize line %d = %s, want %v", i+1, l, cases[i].IDs)
		}
	}
	out, _, err = runCtl(t, ids.String(), "detokenize", "--tokenizer", dir, "--jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var got struct{ Text string }
		if err := json.Unmarshal([]byte(l), &got); err != nil || got.Text != cases[i].Decoded {
			t.Fatalf("detokenize line %d = %s, want %q", i+1, l, cases[i].Decoded)
		}
	}
}

func TestTokenizeBadInput(t *testing.T) {
	dir := qwen3TokenizerDir(t)
	out, _, err := runCtl(t, `{"text":"a"}`+"\n"+`{"text":["b"]}`+"\n"+`{"text":"c"}`+"\n", "tokenize", "--tokenizer", dir, "--jsonl")
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: err = %v, want it to name line 2", err)
	}
	if want := "{\"ids\":[64]}\n"; !strings.HasPrefix(out, want) || !strings.HasSuffix(out, "{\"ids\":[66]}\n") {
		t.Errorf("the good lines around a bad one must still be answered; got %q", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"detokenize", "--tokenizer", dir, "1 two"}, `item 2 ("two") is not an integer`},
		{[]string{"detokenize", "--tokenizer", dir, "999999"}, "999999 is not a token id"},
		{[]string{"tokenize", "--tokenizer", filepath.Join(t.TempDir(), "absent"), "x"}, "absent"},
		{[]string{"tokenize", "x"}, `"tokenizer" not set`},
		{[]string{"tokenize", "--tokenizer", dir, "--jsonl", "x"}, "do not pass TEXT"},
	} {
		if _, _, err := runCtl(t, "", c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want it to contain %q", c.args, err, c.want)
		}
	}
}
