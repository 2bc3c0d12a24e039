package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequests: any body either decodes and validates into the daemon's
// arguments or is refused with a 4xx error object; never a panic.
func FuzzRequests(f *testing.F) {
	for _, seed := range []string{
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stop":["a"],"temperature":0.5}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto"}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{}}}}`,
		`{"prompt":[1,2,3],"max_tokens":2}`, `{"prompt":["x"],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"a":1,"a":2}`, `[]`, `{`,
	} {
		f.Add(seed)
	}
	a := &API{opts: Options{MaxBody: 1 << 16, HeaderTimeout: 1e9}}
	f.Fuzz(func(t *testing.T, body string) {
		check := func(e *apiError) {
			if e != nil && (e.status < 400 || e.status > 499 || e.Message == "" || e.Type == "") {
				t.Fatalf("bad refusal %+v for %q", e, body)
			}
		}
		var q chatRequest
		e := a.decode(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)), &q)
		check(e)
		if e == nil {
			_, e = q.toWire()
			check(e)
		}
		var c completionRequest
		e = a.decode(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)), &c)
		check(e)
		if e == nil {
			_, e = c.toWire()
			check(e)
		}
	})
}
