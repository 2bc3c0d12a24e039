package standin_test

import (
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/standin"
)

// FuzzParseProgram: a standin.json is outside input (it comes with a
// bundle); any bytes give a program of the right format or an error, never
// a panic, and duplicate or unknown keys are refused.
func FuzzParseProgram(f *testing.F) {
	f.Add([]byte(`{"format": "` + standin.ProgramFormat + `", "kind": "head"}`))
	f.Add([]byte(`{"format": "` + standin.ProgramFormat + `", "kind": "head", "kind": "chunk"}`))
	f.Add([]byte(`{"format": "x"}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := standin.ParseProgram(data)
		if err == nil && p.Format != standin.ProgramFormat {
			t.Fatalf("accepted format %q", p.Format)
		}
	})
}

// TestParseProgramRefuses names what is wrong with a bad standin.json.
func TestParseProgramRefuses(t *testing.T) {
	ok := `{"format": "` + standin.ProgramFormat + `", "kind": "head"}`
	if _, err := standin.ParseProgram([]byte(ok)); err != nil {
		t.Fatalf("a valid program: %v", err)
	}
	for doc, want := range map[string]string{
		`{"format": "` + standin.ProgramFormat + `", "kind": "head", "kind": "chunk"}`: "kind",
		`{"format": "` + standin.ProgramFormat + `", "kind": "head", "weights": 1}`:    "weights",
		`{"format": "forged-standin-0", "kind": "head"}`:                               "forged-standin-0",
		ok + ` {}`: "after",
	} {
		if _, err := standin.ParseProgram([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", doc, err, want)
		}
	}
}
