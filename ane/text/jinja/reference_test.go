package jinja

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestReferenceRenderer replays testdata/reference.jsonl: templates and
// contexts from cases.json rendered by the reference renderer
// (@huggingface/jinja 0.5.11, see gen_reference.mjs), in that renderer's
// mode (Options.JS). Output must match byte for byte, and a case the
// reference rejects must be an error here.
func TestReferenceRenderer(t *testing.T) {
	f, err := os.Open("testdata/reference.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var c struct {
			Name     string          `json:"name"`
			Template string          `json:"template"`
			Context  json.RawMessage `json:"context"`
			Text     *string         `json:"text"`
			Error    bool            `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		ctx, err := ParseJSON(c.Context)
		if err != nil {
			t.Fatalf("%s: context: %v", c.Name, err)
		}
		got, err := renderWith(c.Template, ctx.(*Dict), Options{JS: true})
		switch {
		case c.Error && err == nil:
			t.Errorf("%s: reference rejects this template, we rendered %q", c.Name, got)
		case !c.Error && err != nil:
			t.Errorf("%s: %v", c.Name, err)
		case !c.Error && got != *c.Text:
			t.Errorf("%s:\n got %q\nwant %q", c.Name, got, *c.Text)
		}
	}
	if n < 50 {
		t.Fatalf("only %d reference cases", n)
	}
}

// renderString renders src with the default (Jinja2) semantics.
func renderString(src string, vars *Dict) (string, error) { return renderWith(src, vars, Options{}) }

// renderWith renders src at a fixed clock with o.
func renderWith(src string, vars *Dict, o Options) (string, error) {
	tpl, err := Parse(src)
	if err != nil {
		return "", err
	}
	o.Now = func() time.Time { return time.Date(2026, 3, 7, 9, 5, 0, 0, time.UTC) }
	return tpl.RenderWith(vars, o)
}
