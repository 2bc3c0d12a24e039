package chat

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/text/jinja"
	"github.com/forgedaemon/forged/internal/refdata"
)

// Every conversation in the reference renderings (testdata/qwen3) renders byte for
// byte, with Jinja2 semantics (they hold no floats and no text the Qwen3
// template's strip('\n') would treat differently) and in the JavaScript
// renderer's mode.
func TestReferenceRenders(t *testing.T) {
	tpl, err := LoadTemplate(refdata.Path(t, "qwen3", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkRenders(t, tpl, refdata.Path(t, "qwen3", "chat_renders.jsonl"), 8, jinja.Options{})
	checkRenders(t, tpl, refdata.Path(t, "qwen3", "chat_renders.jsonl"), 8, jinja.Options{JS: true})
}

// 150 seeded random conversations (system prompts, reasoning, tool calls
// with object and string arguments, tool responses, non-ASCII, padded and
// multi-line text, thinking on/off/unset) rendered by the same reference
// renderer (testdata/gen_qwen3_renders.mjs) match byte for byte in its mode
// (jinja.Options.JS): the Qwen3 template calls .lstrip('\n') / .strip('\n')
// on text with spaces and tabs at its edges, which that renderer strips and
// Jinja2 (and we, by default) keep.
func TestRandomReferenceRenders(t *testing.T) {
	tpl, err := LoadTemplate(refdata.Path(t, "qwen3", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkRenders(t, tpl, filepath.Join("testdata", "qwen3_renders.jsonl"), 150, jinja.Options{JS: true})
}

// Conversations with floats in tool calls and schemas (300.0, 1.0, -0.0,
// 1e-06, 1e16, 1e21) and with non-ASCII tool text, rendered by Python's
// Jinja2 in transformers' environment (scripts/python-jinja2/render.py),
// match byte for byte in the default mode: tojson is json.dumps with
// ensure_ascii=False.
func TestPythonRenders(t *testing.T) {
	tpl, err := LoadTemplate(refdata.Path(t, "qwen3", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkRenders(t, tpl, refdata.Path(t, "python-jinja2", "qwen3_renders.jsonl"), 3, jinja.Options{})
}

func checkRenders(t *testing.T, tpl *Template, path string, atLeast int, opts jinja.Options) {
	t.Helper()
	f, err := os.Open(path)
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
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		req, err := ParseRequest(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", want.Name, err)
		}
		got, err := tpl.tpl.RenderWith(tpl.variables(req), opts)
		if err != nil {
			t.Errorf("%s: %v", want.Name, err)
			continue
		}
		if got != want.Text {
			t.Errorf("%s:\n got %q\nwant %q", want.Name, got, want.Text)
		}
	}
	if n < atLeast {
		t.Fatalf("%s: read only %d reference renderings", path, n)
	}
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadTemplateForms(t *testing.T) {
	req, err := ParseRequest([]byte(`{"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true, "extra": "X"}`))
	if err != nil {
		t.Fatal(err)
	}
	render := func(tpl *Template) string {
		t.Helper()
		out, err := tpl.Render(req)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// A list of named templates: "default" is used.
	dir := t.TempDir()
	cfg := writeFile(t, dir, TokenizerConfigFile, `{"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
		"chat_template": [{"name": "tool_use", "template": "TOOLS"}, {"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ extra }}{{ eos_token }}{% if add_generation_prompt %}>{% endif %}"}]}`)
	tpl, err := LoadTemplate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(tpl); got != "<s>hiX</s>>" {
		t.Fatalf("list form: %q", got)
	}

	// chat_template.jinja beside it wins, special tokens still come from the config.
	writeFile(t, dir, TemplateFile, "J{{ eos_token }}{{ messages|length }}\n")
	if tpl, err = LoadTemplate(dir); err != nil {
		t.Fatal(err)
	}
	if got := render(tpl); got != "J</s>1" {
		t.Fatalf("jinja file: %q", got)
	}

	// A .jinja file alone.
	only := writeFile(t, t.TempDir(), "x.jinja", "{{ messages[0].role }}")
	if tpl, err = LoadTemplate(only); err != nil || render(tpl) != "user" {
		t.Fatalf("lone .jinja: %v", err)
	}
}

func TestLoadTemplateErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		`{"eos_token": "x"}`:   "no chat_template",
		`{"chat_template": 5}`: "must be a string or a list",
		`{"chat_template": [{"name": "other", "template": "x"}]}`: `no template named "default"`,
		`{"chat_template": "ok\n{% for %}"}`:                      "template line 2",
		`{"chat_template": "{% include 'x' %}"}`:                  "cannot load other templates or files",
		`{"chat_template": "x", "eos_token": 7}`:                  "eos_token must be a string",
		`{"chat_template": "x"`:                                   "unexpected end of JSON",
	}
	for body, msg := range cases {
		p := writeFile(t, dir, TokenizerConfigFile, body)
		_, err := LoadTemplate(p)
		if err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: got %v, want an error naming %s and saying %q", body, err, p, msg)
		}
	}
	if _, err := LoadTemplate(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing path accepted")
	}
	if _, err := LoadTemplate(t.TempDir()); err == nil || !strings.Contains(err.Error(), TokenizerConfigFile) {
		t.Errorf("empty directory: %v", err)
	}
}

func TestParseRequestErrors(t *testing.T) {
	for body, msg := range map[string]string{
		`[]`:                             "must be a JSON object",
		`{}`:                             "messages: missing",
		`{"messages": {}}`:               "messages: must be a list",
		`{"messages": [1]}`:              "messages[0]: must be an object",
		`{"messages": [{"content": 1}]}`: "messages[0].role: missing",
		`{"messages": [{"role": 1}]}`:    "messages[0].role: must be a string",
		`{"messages": [], "tools": {}}`:  "tools: must be a list",
		`{"messages": [], "tools": [1]}`: "tools[0]: must be an object",
		`{"messages": [], "add_generation_prompt": "yes"}`: "add_generation_prompt: must be true or false",
		`{"messages": []`: "json",
	} {
		if _, err := ParseRequest([]byte(body)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: got %v, want %q", body, err, msg)
		}
	}
}

// Like transformers, tools and documents are always variables (none when
// not given), so a Mistral-style "tools is not none" test works unguarded.
func TestToolsAndDocumentsDefaultToNone(t *testing.T) {
	p := writeFile(t, t.TempDir(), TokenizerConfigFile, `{"chat_template": "{% if tools is not none %}{% for t in tools %}{{ t.name }}{% endfor %}{% else %}no tools{% endif %}|{{ documents is none }}"}`)
	tpl, err := LoadTemplate(p)
	if err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]string{
		`{"messages": []}`:                                          "no tools|true",
		`{"messages": [], "tools": null}`:                           "no tools|true",
		`{"messages": [], "tools": [{"name": "a"}, {"name": "b"}]}`: "ab|true",
	} {
		req, err := ParseRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tpl.Render(req); err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", body, got, err, want)
		}
	}
}
