package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/schematest"
	"github.com/forgedaemon/forged/internal/testbundle"
)

// tinyDaemon serves the tiny synthetic model (the reference engine, which
// masks tokens with a constraint) on a real socket.
func tinyDaemon(t *testing.T) string {
	t.Helper()
	b, err := modelbackend.OpenRefBundle(testbundle.Tiny(t, 4), modelbackend.Options{Repo: "forged/tiny", Revision: "abc", Ladder: []int{1024}})
	if err != nil {
		t.Fatal(err)
	}
	sock, _ := serveDaemon(t, b)
	return sock
}

// chatResult runs forgectl chat --json with args and returns the final
// reply.
func chatResult(t *testing.T, args ...string) wire.GenerationResult {
	t.Helper()
	out, _, err := runCtl(t, "", append([]string{"chat", "--json", "--thinking", "off"}, args...)...)
	if err != nil {
		t.Fatalf("chat %v: %v", args, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last struct {
		Event  string                `json:"event"`
		Result wire.GenerationResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Event != "done" {
		t.Fatalf("chat %v: last line %q (%v)", args, lines[len(lines)-1], err)
	}
	return last.Result
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// chat --format @FILE, an inline schema or json: sampled at temperature 1
// with several seeds on the tiny model, the answer always validates (an
// independent validator) and its properties come in the schema's order,
// which is not alphabetical (so the file's key order reached the daemon).
func TestChatFormatFlag(t *testing.T) {
	sock := tinyDaemon(t)
	const schema = `{"type":"object","properties":{"zeta":{"type":"integer","minimum":0,"maximum":9},"alpha":{"enum":["a","b"]}},"required":["zeta","alpha"],"additionalProperties":false}`
	file := writeFile(t, "reply.json", schema)
	v := schematest.Compile(t, schema)
	for seed := 1; seed <= 3; seed++ {
		res := chatResult(t, "--socket", sock, "--format", "@"+file, "--temperature", "1", "--seed", fmt.Sprint(seed), "--max-tokens", "200", "answer")
		what := fmt.Sprintf("--format @FILE seed %d", seed)
		if res.FinishReason != wire.FinishStop {
			t.Fatalf("%s: finished by %s: %q", what, res.FinishReason, res.Content)
		}
		schematest.Valid(t, v, res.Content, what)
		dec := json.NewDecoder(strings.NewReader(res.Content))
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		if key, err := dec.Token(); err != nil || key != "zeta" {
			t.Errorf("%s: first key %v (%v) in %q, want zeta (the schema's order)", what, key, err, res.Content)
		}
	}
	inline := `{"enum":["yes","no"]}`
	iv := schematest.Compile(t, inline)
	for seed := 1; seed <= 2; seed++ {
		res := chatResult(t, "--socket", sock, "--format", inline, "--temperature", "1", "--seed", fmt.Sprint(seed), "--max-tokens", "50", "yes or no?")
		schematest.Valid(t, iv, res.Content, fmt.Sprintf("inline seed %d", seed))
	}
	res := chatResult(t, "--socket", sock, "--format", "json", "--max-tokens", "600", "JSON")
	if !json.Valid([]byte(res.Content)) {
		t.Errorf("--format json answered %q", res.Content)
	}
}

// chat --tool-choice NAME forces one call of that tool with arguments
// following its schema; required forces a call of one of the tools.
func TestChatToolChoiceFlag(t *testing.T) {
	sock := tinyDaemon(t)
	params := `{"type":"object","properties":{"city":{"type":"string","maxLength":8}},"required":["city"],"additionalProperties":false}`
	tools := writeFile(t, "tools.json", `[{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}},`+
		`{"type":"function","function":{"name":"get_weather","parameters":`+params+`}}]`)
	v := schematest.Compile(t, params)
	for seed := 1; seed <= 2; seed++ {
		res := chatResult(t, "--socket", sock, "--tools", tools, "--tool-choice", "get_weather", "--temperature", "1", "--seed", fmt.Sprint(seed), "--max-tokens", "200", "weather?")
		if res.FinishReason != wire.FinishToolCalls || len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "get_weather" {
			t.Fatalf("seed %d: finish %s, calls %+v, content %q", seed, res.FinishReason, res.ToolCalls, res.Content)
		}
		args, _ := res.ToolCalls[0].Arguments.MarshalJSON()
		schematest.Valid(t, v, string(args), fmt.Sprintf("seed %d arguments", seed))
	}
	res := chatResult(t, "--socket", sock, "--tools", tools, "--tool-choice", "required", "--max-tokens", "200", "weather?")
	if res.FinishReason != wire.FinishToolCalls || len(res.ToolCalls) != 1 {
		t.Fatalf("required: finish %s, calls %+v, content %q", res.FinishReason, res.ToolCalls, res.Content)
	}
	if _, _, err := runCtl(t, "", "chat", "--socket", sock, "--tools", tools, "--tool-choice", "get_news", "hi"); err == nil || !strings.Contains(err.Error(), `"get_news"`) {
		t.Errorf("--tool-choice naming no tool: %v", err)
	}
}

// A schema file that is missing, not JSON or not an object is refused
// before the daemon is asked, naming the file; an inline schema that is
// not JSON names the flag; what the daemon cannot enforce comes back as
// its bad_request naming the keyword.
func TestChatFormatErrors(t *testing.T) {
	sock := tinyDaemon(t)
	missing := filepath.Join(t.TempDir(), "none.json")
	notJSON := writeFile(t, "broken.json", `{"type":`)
	notObject := writeFile(t, "array.json", `[{"type":"string"}]`)
	for _, tc := range []struct{ flag, want string }{
		{"@" + missing, missing},
		{"@" + notJSON, "--format " + notJSON},
		{"@" + notObject, "--format " + notObject},
		{`{"type":`, "--format: want"},
		{"yaml", "--format: want"},
		{`{"type":"array","uniqueItems":true}`, "uniqueItems"},
	} {
		_, _, err := runCtl(t, "", "chat", "--socket", sock, "--format", tc.flag, "hi")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--format %s: %v, want an error saying %q", tc.flag, err, tc.want)
		}
	}
}
