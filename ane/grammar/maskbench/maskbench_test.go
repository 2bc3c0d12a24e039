package maskbench

import (
	"os"
	"strconv"
	"testing"

	"github.com/forgedaemon/forged/ane/grammar"
	"github.com/forgedaemon/forged/ane/grammar/jsonschema"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/refdata"
)

func load(t testing.TB, limit int) ([]Case, *grammar.Vocab, Encoder) {
	tok, err := tokenizer.Load(refdata.Path(t, "qwen3", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(refdata.Path(t, "jsonschemabench", "maskbench-public.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := Read(f, limit)
	if err != nil {
		t.Fatal(err)
	}
	return cases, grammar.TokenizerVocab(tok), tok.Encode
}

func TestSliceHasNoInvalidationErrors(t *testing.T) {
	n := 100
	if testing.Short() {
		n = 40
	}
	cases, v, enc := load(t, n)
	rep, err := Run(cases, v, enc, jsonschema.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d schemas: %d passing, compile errors %v, validation errors %d, invalidation errors %d, masks %d",
		rep.Schemas, rep.Passing, rep.CompileErrors, rep.ValidationErrors, rep.InvalidationErrors, rep.Masks)
	if rep.InvalidationErrors != 0 {
		t.Errorf("%d invalid instances accepted (schemas %v)", rep.InvalidationErrors, rep.Invalidated)
	}
	if rep.Disagreements != 0 {
		t.Errorf("mask and Accept disagreed on %d tokens", rep.Disagreements)
	}
	if rep.Passing == 0 || rep.Masks == 0 {
		t.Errorf("nothing passed (%d) or no mask was computed (%d): the run did not exercise the engine", rep.Passing, rep.Masks)
	}
}

// BenchmarkMaskBench runs the whole method over the first MASKBENCH_LIMIT
// schemas (all when unset).
func BenchmarkMaskBench(b *testing.B) {
	limit, _ := strconv.Atoi(os.Getenv("MASKBENCH_LIMIT"))
	cases, v, enc := load(b, limit)
	for b.Loop() {
		rep, err := Run(cases, v, enc, jsonschema.Options{}, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.Passing)/float64(rep.Schemas)*100, "%passing")
		b.ReportMetric(float64(rep.InvalidationErrors), "invalidation-errors")
		b.ReportMetric(rep.TBM.P50, "tbm-p50-µs")
		b.ReportMetric(rep.TBM.P99, "tbm-p99-µs")
		b.ReportMetric(rep.TTFM.P50, "ttfm-p50-ms")
		b.ReportMetric(rep.TTFM.P99, "ttfm-p99-ms")
	}
}
