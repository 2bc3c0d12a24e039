package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/internal/refdata"
)

// qwen3Dir is the repository's testdata/qwen3: the real Qwen3 tokenizer.
func qwen3Dir(t testing.TB) string {
	t.Helper()
	return filepath.Dir(refdata.Path(t, "qwen3", "tokenizer.json"))
}

var (
	qwenOnce sync.Once
	qwenTok  *Tokenizer
	qwenErr  error
)

func loadQwen(t testing.TB) *Tokenizer {
	dir := qwen3Dir(t)
	qwenOnce.Do(func() { qwenTok, qwenErr = Load(dir) })
	if qwenErr != nil {
		t.Fatal(qwenErr)
	}
	return qwenTok
}

type encodingCase struct {
	Text    string `json:"text"`
	IDs     []int  `json:"ids"`
	Decoded string `json:"decoded"`
}

func loadEncodings(t testing.TB) []encodingCase {
	f, err := os.Open(filepath.Join(qwen3Dir(t), "encodings.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []encodingCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var c encodingCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("encodings.jsonl line %d: %v", len(cases)+1, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// Every reference line must encode to exactly its ids and decode back to
// exactly its decoded text.
func TestQwen3ReferenceEncodings(t *testing.T) {
	tok := loadQwen(t)
	cases := loadEncodings(t)
	if len(cases) < 200 {
		t.Fatalf("only %d reference lines", len(cases))
	}
	for i, c := range cases {
		got := tok.Encode(c.Text)
		if !slices.Equal(got, c.IDs) {
			t.Errorf("line %d %q:\n encode = %v\n want     %v", i+1, trunc(c.Text), got, c.IDs)
		}
		if dec := tok.Decode(c.IDs); dec != c.Decoded {
			t.Errorf("line %d: decode = %q, want %q", i+1, trunc(dec), trunc(c.Decoded))
		}
	}
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
