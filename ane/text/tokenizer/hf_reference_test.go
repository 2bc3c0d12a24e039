package tokenizer

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/internal/refdata"

	"github.com/forgedaemon/forged/ane/text/tokenizer/internal/hftables"
)

// readJSONLines decodes every line of a testdata JSON-lines file into T.
func readJSONLines[T any](t testing.TB, parts ...string) []T {
	t.Helper()
	path := refdata.Path(t, parts...)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every vector Hugging Face tokenizers (the Rust library, npm "tokenizers";
// scripts/hf-reference) wrote for the real Qwen3 tokenizer.json encodes to
// exactly its ids and decodes to exactly its text: ~5,000 adversarial texts
// (combining-mark runs, every script, Unicode 16 letters before
// contractions, emoji sequences, numbers, special tokens, whitespace runs).
func TestHFTokenizersEncodings(t *testing.T) {
	tok := loadQwen(t)
	cases := readJSONLines[encodingCase](t, "hf-tokenizers", "qwen3-encodings.jsonl")
	if len(cases) < 5000 {
		t.Fatalf("only %d vectors", len(cases))
	}
	encBad, decBad := 0, 0
	for i, c := range cases {
		if got := tok.Encode(c.Text); !slices.Equal(got, c.IDs) {
			if encBad++; encBad <= 20 {
				t.Errorf("line %d %+q:\n encode = %v\n want     %v", i+1, trunc(c.Text), got, c.IDs)
			}
		}
		if dec := tok.Decode(c.IDs); dec != c.Decoded {
			if decBad++; decBad <= 20 {
				t.Errorf("line %d: decode = %+q, want %+q", i+1, trunc(dec), trunc(c.Decoded))
			}
		}
	}
	if encBad+decBad > 0 {
		t.Errorf("%d of %d vectors encode differently, %d decode differently", encBad, len(cases), decBad)
	}
}

// The NFC, NFD, NFKC and NFKD normalizers give exactly what Hugging Face
// tokenizers gives on every code point any form changes (eight to a line),
// each combining mark in context, random mark runs and Hangul jamo.
func TestHFTokenizersNormalize(t *testing.T) {
	type line struct{ Text, NFC, NFD, NFKC, NFKD string }
	lines := readJSONLines[line](t, "hf-tokenizers", "normalize.jsonl")
	if len(lines) < 5000 {
		t.Fatalf("only %d lines", len(lines))
	}
	for _, form := range []string{"NFC", "NFD", "NFKC", "NFKD"} {
		n, err := parseNormalizer(json.RawMessage(`{"type":"`+form+`"}`), "normalizer")
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, l := range lines {
			want := map[string]string{"NFC": l.NFC, "NFD": l.NFD, "NFKC": l.NFKC, "NFKD": l.NFKD}[form]
			if got := n.normalize(l.Text); got != want {
				if bad++; bad <= 5 {
					t.Errorf("%s line %d %+q:\n got  %+q\n want %+q", form, i+1, trunc(l.Text), trunc(got), trunc(want))
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d lines differ", form, bad, len(lines))
		}
	}
}

// The vectors and the generated tables come from the same library version,
// and the vectors from the tokenizer.json the tests load.
func TestHFTokenizersProvenance(t *testing.T) {
	data, err := os.ReadFile(refdata.Path(t, "hf-tokenizers", "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Library string `json:"library"`
		SHA256  string `json:"tokenizer_json_sha256"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	if want := "tokenizers " + hftables.Version + " "; !strings.HasPrefix(meta.Library, want) {
		t.Errorf("vectors from %q, tables from tokenizers %s: regenerate both (scripts/hf-reference)", meta.Library, hftables.Version)
	}
	tj, err := os.ReadFile(filepath.Join(qwen3Dir(t), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(tj); hex.EncodeToString(sum[:]) != meta.SHA256 {
		t.Errorf("the vectors were made from another tokenizer.json (sha256 %s)", meta.SHA256)
	}
}
