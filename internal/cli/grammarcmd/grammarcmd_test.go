package grammarcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/internal/cli/clitest"
	"github.com/forgedaemon/forged/internal/refdata"
)

// A three-schema file: one passes, one is refused at compile time (by
// keyword), one has an invalid instance that must be rejected.
const data = `{"name":"ok","schema":{"type":"object","properties":{"a":{"type":"integer","maximum":9}},"required":["a"],"additionalProperties":false},"tests":[{"valid":true,"data":{"a":3},"description":"v"},{"valid":false,"data":{"a":10},"description":"too big"},{"valid":false,"data":{},"description":"missing"}]}
{"name":"refused","schema":{"type":"array","uniqueItems":true},"tests":[{"valid":true,"data":[1],"description":"v"}]}
{"name":"strings","schema":{"type":"string","pattern":"^a+$"},"tests":[{"valid":true,"data":"aaa","description":"v"},{"valid":false,"data":"ab","description":"i"}]}
`

func TestBenchJSON(t *testing.T) {
	file := filepath.Join(t.TempDir(), "set.jsonl")
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	tok := refdata.Path(t, "qwen3", "tokenizer.json")
	out, _, err := clitest.Run(t, clitest.Root(New()), "", "grammar", "bench", "--tokenizer", tok, file, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Schemas, Passing   int
		CompileErrors      map[string]int     `json:"compile_errors"`
		ValidationErrors   int                `json:"validation_errors"`
		InvalidationErrors int                `json:"invalidation_errors"`
		TBM                map[string]float64 `json:"tbm_us"`
		TTFM               map[string]float64 `json:"ttfm_ms"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Schemas != 3 || rep.Passing != 2 || rep.CompileErrors["uniqueItems"] != 1 || rep.ValidationErrors != 0 || rep.InvalidationErrors != 0 {
		t.Fatalf("report %+v, want 3 schemas, 2 passing, uniqueItems refused once, no errors", rep)
	}
	for _, k := range []string{"p50", "p75", "p99", "p999"} {
		if _, ok := rep.TBM[k]; !ok {
			t.Errorf("tbm_us has no %s", k)
		}
		if _, ok := rep.TTFM[k]; !ok {
			t.Errorf("ttfm_ms has no %s", k)
		}
	}
	table, _, err := clitest.Run(t, clitest.Root(New()), "", "grammar", "bench", "--tokenizer", tok, file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| passing | 2 (66.7%) |", "invalidation errors (invalid accepted) | 0 |", "uniqueItems 1"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}
