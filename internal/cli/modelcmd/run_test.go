package modelcmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
)

// Greedy run streams exactly the argmax chain the engine gives.
func TestRunCommandGreedy(t *testing.T) {
	dir := tinyModelDir(t)
	out, _, err := runCtl(t, "", "run", "--model", dir, "--max-tokens", "6", "--json", "a story")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var got []int
	for _, l := range lines[:len(lines)-1] {
		var tk runToken
		if err := json.Unmarshal([]byte(l), &tk); err != nil {
			t.Fatalf("%v in %q", err, l)
		}
		got = append(got, tk.ID)
	}
	var sum runSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	tok, _ := tokenizer.Load(dir)
	ids := tok.Encode("a story")
	var want []int
	for len(want) < 6 {
		l := engineLogits(t, dir, append(append([]int(nil), ids...), want...))
		want = append(want, ane.TopK(l, 1)[0].ID)
	}
	if sum.Tokens != len(got) || sum.PromptTokens != len(ids) {
		t.Fatalf("summary %+v for %d streamed tokens", sum, len(got))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("token %d: run produced %v, greedy argmax chain %v", i, got, want)
		}
	}
	if sum.Finish != "length" && sum.Finish != "stop" {
		t.Fatalf("finish %q", sum.Finish)
	}

	// Text mode streams the decoded text and reports speed on stderr.
	out, errOut, err := runCtl(t, "", "run", "--model", dir, "--max-tokens", "6", "a story")
	if err != nil || !strings.Contains(errOut, "tok/s") || out != tok.Decode(want[:len(got)]) {
		t.Fatalf("text mode: %q / %q / %v (want text %q)", out, errOut, err, tok.Decode(want))
	}
	if _, _, err := runCtl(t, "", "run", "--model", dir, "--max-tokens", "0", "x"); err == nil {
		t.Fatal("--max-tokens 0 accepted")
	}
}
