package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/httpapi"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/refdata"
)

const base = "http://forged"

var listenTCP = httpapi.ListenTCP

// qwen3Scripted is the Qwen3 tokenizer and chat template (the repository's
// reference data) with a scripted engine: known model text through the real
// text side and the daemon's output parser.
func qwen3Scripted(t *testing.T) *fakeengine.Scripted {
	t.Helper()
	dir, err := refdata.Dir()
	if err != nil {
		t.Fatal(err)
	}
	rb, err := modelbackend.Open(filepath.Join(dir, "qwen3"), modelbackend.Options{TokenizerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	end, err := rb.Tokenize("<|im_end|>")
	if err != nil || len(end) != 1 {
		t.Fatalf("<|im_end|> tokenizes to %v, %v", end, err)
	}
	return &fakeengine.Scripted{Backend: rb, Step: 2, EndOfTurn: end}
}

func chatBody(extra map[string]any) map[string]any {
	b := map[string]any{"model": "anything", "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_tokens": 40}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// TestChatMatchesMsgpack: a chat completion over HTTP is the chat op's
// answer, in OpenAI's shape, with its usage.
func TestChatMatchesMsgpack(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{StopAfter: 25}), daemon.Config{})
	max := uint64(40)
	want, err := h.msgpack(t).Chat(context.Background(), wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "hi"}}, MaxTokens: &max}).Result()
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, unixClient(h.httpSock), base, "POST", "/v1/chat/completions", chatBody(nil))
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var got struct {
		SystemFingerprint string `json:"system_fingerprint"`
		Choices           []struct {
			Message struct {
				Role    string  `json:"role"`
				Content *string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			Prompt     uint64 `json:"prompt_tokens"`
			Completion uint64 `json:"completion_tokens"`
			Total      uint64 `json:"total_tokens"`
			Details    struct {
				Cached *uint64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	m := r.json(t)
	if m["object"] != "chat.completion" || !strings.HasPrefix(m["id"].(string), "chatcmpl-") || m["model"] != "fake/instant" {
		t.Errorf("envelope: %s", r.body)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Role != "assistant" || got.Choices[0].Message.Content == nil ||
		*got.Choices[0].Message.Content != want.Text || got.Choices[0].FinishReason != "stop" {
		t.Fatalf("choices %s, want content %q finish stop", r.body, want.Text)
	}
	u := got.Usage
	if u.Prompt != want.Usage.PromptTokens || u.Completion != want.Usage.GeneratedTokens || u.Total != u.Prompt+u.Completion || u.Details.Cached == nil {
		t.Errorf("usage %+v, want prompt %d completion %d", u, want.Usage.PromptTokens, want.Usage.GeneratedTokens)
	}
	if got.SystemFingerprint != want.Revision {
		t.Errorf("system_fingerprint %q, want the revision %q", got.SystemFingerprint, want.Revision)
	}
}

// TestStreamEqualsWhole: for greedy sampling the streamed deltas join to
// the whole answer, the usage chunk comes last before [DONE] and every
// other chunk has usage null.
func TestStreamEqualsWhole(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{}), daemon.Config{})
	c := unixClient(h.httpSock)
	whole := do(t, c, base, "POST", "/v1/chat/completions", chatBody(nil))
	if whole.status != 200 {
		t.Fatalf("status %d: %s", whole.status, whole.body)
	}
	var w struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]any `json:"usage"`
	}
	json.Unmarshal(whole.body, &w)
	r := do(t, c, base, "POST", "/v1/chat/completions", chatBody(map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}))
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %q: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	s := parseStream(t, r.body)
	if s.content != w.Choices[0].Message.Content || s.content == "" {
		t.Fatalf("streamed %q, whole %q", s.content, w.Choices[0].Message.Content)
	}
	if s.finish != "length" || w.Choices[0].FinishReason != "length" {
		t.Errorf("finish: streamed %q whole %q, want length (max_tokens 40, no stop)", s.finish, w.Choices[0].FinishReason)
	}
	if s.usage == nil || s.usage["completion_tokens"] != w.Usage["completion_tokens"] || s.usage["prompt_tokens"] != w.Usage["prompt_tokens"] {
		t.Errorf("usage: streamed %v whole %v", s.usage, w.Usage)
	}
	events := sse(t, r.body)
	for _, e := range events[:len(events)-2] {
		if !strings.Contains(e, `"usage":null`) {
			t.Fatalf("a chunk before the last lacks usage null: %s", e)
		}
	}
	if last := events[len(events)-2]; !strings.Contains(last, `"choices":[]`) {
		t.Errorf("the usage chunk has choices: %s", last)
	}
	// Without include_usage no chunk has a usage key.
	r = do(t, c, base, "POST", "/v1/chat/completions", chatBody(map[string]any{"stream": true}))
	if strings.Contains(string(r.body), `"usage"`) {
		t.Errorf("usage sent without include_usage: %s", r.body)
	}
}

// TestCompletions: /v1/completions is the generate op, streamed or not.
func TestCompletions(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{}), daemon.Config{})
	max := uint64(20)
	prompt := "once upon"
	want, err := h.msgpack(t).Generate(context.Background(), wire.GenerateArgs{Prompt: &prompt, MaxTokens: &max}).Result()
	if err != nil {
		t.Fatal(err)
	}
	c := unixClient(h.httpSock)
	body := map[string]any{"model": "m", "prompt": prompt, "max_tokens": 20}
	r := do(t, c, base, "POST", "/v1/completions", body)
	var got struct {
		Object  string `json:"object"`
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			Prompt uint64 `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if got.Object != "text_completion" || got.Choices[0].Text != want.Text || got.Choices[0].FinishReason != "length" || got.Usage.Prompt != uint64(len(prompt)) {
		t.Fatalf("completion %s, want text %q", r.body, want.Text)
	}
	body["stream"] = true
	s := parseStream(t, do(t, c, base, "POST", "/v1/completions", body).body)
	if s.content != want.Text || s.finish != "length" {
		t.Fatalf("streamed %q (%s), want %q", s.content, s.finish, want.Text)
	}
	body["prompt"] = []int{104, 105}
	body["stream"] = false
	if r := do(t, c, base, "POST", "/v1/completions", body); r.status != 200 {
		t.Fatalf("token-id prompt: %d %s", r.status, r.body)
	}
}

// TestReasoningAndToolCalls: the model's <think> block is
// reasoning_content and a <tool_call> is a tool call (finish_reason
// tool_calls, content null), streamed and whole alike.
func TestReasoningAndToolCalls(t *testing.T) {
	text := "<think>\nweather needs a lookup\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>"
	model := qwen3Scripted(t)
	model.Script(text, text, "It is 18C and sunny in Paris.")
	h := start(t, model, daemon.Config{})
	c := unixClient(h.httpSock)
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}
	body := chatBody(map[string]any{"tools": tools, "max_tokens": 400})
	r := do(t, c, base, "POST", "/v1/chat/completions", body)
	var got struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				Reasoning string  `json:"reasoning_content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	m := got.Choices[0].Message
	if m.Content != nil || m.Reasoning != "weather needs a lookup" || got.Choices[0].FinishReason != "tool_calls" || len(m.ToolCalls) != 1 {
		t.Fatalf("answer %s", r.body)
	}
	tc := m.ToolCalls[0]
	var args map[string]any
	if tc.Type != "function" || tc.Function.Name != "get_weather" || !strings.HasPrefix(tc.ID, "call_") ||
		json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil || args["city"] != "Paris" {
		t.Fatalf("tool call %+v", tc)
	}
	body["stream"] = true
	s := parseStream(t, do(t, c, base, "POST", "/v1/chat/completions", body).body)
	if s.reasoning != m.Reasoning || s.content != "" || s.finish != "tool_calls" || len(s.toolCalls) != 1 {
		t.Fatalf("stream: %+v", s)
	}
	fn := s.toolCalls[0]["function"].(map[string]any)
	if s.toolCalls[0]["index"] != float64(0) || fn["name"] != "get_weather" || fn["arguments"] != tc.Function.Arguments {
		t.Fatalf("streamed tool call %v, whole %+v", s.toolCalls[0], tc)
	}
	// The round trip: the assistant's tool call and the tool's answer go
	// back in, and the model answers.
	body = chatBody(map[string]any{"tools": tools, "messages": []any{
		map[string]any{"role": "user", "content": "weather in Paris?"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": tc.ID, "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": tc.Function.Arguments}}}},
		map[string]any{"role": "tool", "tool_call_id": tc.ID, "content": "18C, sunny"},
	}})
	r = do(t, c, base, "POST", "/v1/chat/completions", body)
	if r.status != 200 || !strings.Contains(string(r.body), `"content":"It is 18C and sunny in Paris."`) || !strings.Contains(string(r.body), `"finish_reason":"stop"`) {
		t.Fatalf("tool round trip: %d %s", r.status, r.body)
	}
	// The call and the tool's answer reached the template as the model
	// sees them.
	prompts := model.Prompts()
	last := prompts[len(prompts)-1]
	for _, want := range []string{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>", "<tool_response>\n18C, sunny\n</tool_response>"} {
		if !strings.Contains(last, want) {
			t.Errorf("the round trip's prompt lacks %q:\n%s", want, last)
		}
	}
}

// TestToolCallIDsReplay: a tool call's id is the turn's, not the
// request's: the same request replayed, whole or streamed, answers with
// the same call_ id (the reply is the same), and another seed with
// another one.
func TestToolCallIDsReplay(t *testing.T) {
	text := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>"
	model := qwen3Scripted(t)
	model.Script(text, text, text, text)
	h := start(t, model, daemon.Config{})
	c := unixClient(h.httpSock)
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}
	body := chatBody(map[string]any{"tools": tools, "max_tokens": 400, "seed": 3, "temperature": 0.5})
	callID := func() string {
		t.Helper()
		r := do(t, c, base, "POST", "/v1/chat/completions", body)
		var got struct {
			Choices []struct {
				Message struct {
					ToolCalls []struct {
						ID string `json:"id"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 || len(got.Choices) != 1 || len(got.Choices[0].Message.ToolCalls) != 1 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		return got.Choices[0].Message.ToolCalls[0].ID
	}
	first := callID()
	if !regexp.MustCompile(`^call_[0-9a-f]{24}$`).MatchString(first) {
		t.Fatalf("tool call id %q is not call_ and 24 hex digits", first)
	}
	if again := callID(); again != first {
		t.Errorf("the replayed request's call id %s, first %s", again, first)
	}
	body["stream"] = true
	s := parseStream(t, do(t, c, base, "POST", "/v1/chat/completions", body).body)
	if len(s.toolCalls) != 1 || s.toolCalls[0]["id"] != first {
		t.Errorf("the streamed replay's calls %v, want the id %s", s.toolCalls, first)
	}
	delete(body, "stream")
	body["seed"] = 4
	if other := callID(); other == first {
		t.Errorf("another seed gave the same call id %s", other)
	}
}

// TestBadFields: every refusal is a 400 invalid_request_error naming the
// field; unknown fields are ignored.
func TestBadFields(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{StopAfter: 3}), daemon.Config{})
	c := unixClient(h.httpSock)
	msgs := func(m ...any) map[string]any { return map[string]any{"messages": m} }
	user := map[string]any{"role": "user", "content": "hi"}
	cases := []struct {
		name  string
		body  any
		param string
		code  string
	}{
		{"temperature type", chatBody(map[string]any{"temperature": "hot"}), "temperature", ""},
		{"temperature range", chatBody(map[string]any{"temperature": 3}), "temperature", ""},
		{"top_p", chatBody(map[string]any{"top_p": 0}), "top_p", ""},
		{"max_tokens", chatBody(map[string]any{"max_tokens": 0}), "max_tokens", ""},
		{"max_completion_tokens", chatBody(map[string]any{"max_completion_tokens": -1}), "max_completion_tokens", ""},
		{"role", msgs(map[string]any{"role": "wizard", "content": "x"}), "messages[0].role", ""},
		{"no messages", msgs(), "messages", ""},
		{"image part", msgs(map[string]any{"role": "user", "content": []any{map[string]any{"type": "image_url"}}}), "messages[0].content[0].type", ""},
		{"tool without id", msgs(user, map[string]any{"role": "tool", "content": "x"}), "messages[1].tool_call_id", ""},
		{"stop count", chatBody(map[string]any{"stop": []string{"a", "b", "c", "d", "e"}}), "stop", ""},
		{"stop empty", chatBody(map[string]any{"stop": []string{"a", ""}}), "stop[1]", ""},
		{"tool type", chatBody(map[string]any{"tools": []any{map[string]any{"type": "retrieval"}}}), "tools[0].type", ""},
		{"tool name", chatBody(map[string]any{"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "has space"}}}}), "tools[0].function.name", ""},
		{"tool_choice unknown", chatBody(map[string]any{"tool_choice": "sometimes"}), "tool_choice", ""},
		{"tool_choice names no tool", chatBody(map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "f"}}}), "tool_choice.function.name", ""},
		{"n", chatBody(map[string]any{"n": 2}), "n", "unsupported"},
		{"format type", chatBody(map[string]any{"response_format": map[string]any{"type": "yaml"}}), "response_format.type", ""},
		{"schema name", chatBody(map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"schema": map[string]any{}}}}), "response_format.json_schema.name", ""},
		{"schema keyword not enforceable", chatBody(map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "strict": true, "schema": map[string]any{"type": "array", "uniqueItems": true}}}}), "response_format", "bad_request"},
		{"tool_choice required without tools", chatBody(map[string]any{"tool_choice": "required"}), "tool_choice", ""},
		{"duplicate key", `{"messages":[{"role":"user","content":"a"}],"max_tokens":1,"max_tokens":2}`, "max_tokens", ""},
	}
	for _, tc := range cases {
		r := do(t, c, base, "POST", "/v1/chat/completions", tc.body)
		if r.status != 400 {
			t.Errorf("%s: status %d: %s", tc.name, r.status, r.body)
			continue
		}
		e := r.apiErr(t)
		if e["type"] != "invalid_request_error" || e["param"] != tc.param || (tc.code != "" && e["code"] != tc.code) {
			t.Errorf("%s: error %v, want param %q code %q", tc.name, e, tc.param, tc.code)
		}
	}
	r := do(t, c, base, "POST", "/v1/completions", map[string]any{"prompt": "x", "echo": true})
	if e := r.apiErr(t); r.status != 400 || e["param"] != "echo" {
		t.Errorf("echo: %d %v", r.status, e)
	}
	// Unknown fields are ignored, as OpenAI-compatible servers do.
	if r := do(t, c, base, "POST", "/v1/chat/completions", chatBody(map[string]any{"frequency_penalty": 0.5, "user": "u1", "metadata": map[string]any{"a": "b"}})); r.status != 200 {
		t.Errorf("unknown fields: %d %s", r.status, r.body)
	}
	if r := do(t, c, base, "POST", "/v1/chat/completions", "{not json"); r.status != 400 {
		t.Errorf("bad JSON: %d %s", r.status, r.body)
	}
	big := strings.Repeat("x", 2<<20)
	if r := do(t, c, base, "POST", "/v1/chat/completions", chatBody(map[string]any{"messages": []any{map[string]any{"role": "user", "content": big}}})); r.status != 413 {
		t.Errorf("a body over the limit: %d %s", r.status, r.body)
	}
}

// TestContextExceeded: more than the largest context entry is
// context_length_exceeded, never a truncation.
func TestContextExceeded(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{ContextSize: []int{64}}), daemon.Config{})
	r := do(t, unixClient(h.httpSock), base, "POST", "/v1/chat/completions", chatBody(map[string]any{"max_tokens": 100}))
	e := r.apiErr(t)
	if r.status != 400 || e["code"] != "context_length_exceeded" || e["param"] != "messages" || !strings.Contains(e["message"].(string), "limit 64") {
		t.Fatalf("status %d error %v", r.status, e)
	}
}

// TestBusyIsSharedWithMsgpack: the HTTP API and the msgpack socket share
// one scheduler: with the one slot taken and the queue full from msgpack,
// an HTTP request is 429 with Retry-After.
func TestBusyIsSharedWithMsgpack(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{TokenDelay: time.Millisecond}), daemon.Config{Slots: 1, MaxQueue: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := fillSlotAndQueue(t, h, ctx)
	r := do(t, unixClient(h.httpSock), base, "POST", "/v1/chat/completions", chatBody(nil))
	e := r.apiErr(t)
	if r.status != 429 || r.header.Get("Retry-After") == "" || e["code"] != "busy" {
		t.Fatalf("status %d Retry-After %q error %v", r.status, r.header.Get("Retry-After"), e)
	}
	cancel()
	<-ended
	<-ended
}

// fillSlotAndQueue takes the one slot and the queue of one (Slots 1,
// MaxQueue 1) with two long generations from the msgpack socket, until ctx
// ends; ended receives once per generation that ended. One at a time: a
// request holds a queue place while it is prepared, so a second one sent
// before the first runs would find the queue full and be refused.
func fillSlotAndQueue(t *testing.T, h *harness, ctx context.Context) <-chan struct{} {
	t.Helper()
	gen, cl := h.msgpack(t), h.msgpack(t)
	max := uint64(60000) // fits the largest entry; at 1 ms a token, longer than the test
	prompt := "p"
	ended := make(chan struct{}, 2)
	for i := range 2 {
		s := gen.Generate(ctx, wire.GenerateArgs{Prompt: &prompt, MaxTokens: &max})
		go func() { s.Result(); ended <- struct{}{} }()
		waitFor(t, cl, func(st *wire.StatusResult) bool { return st.Running == 1 && st.Queued == uint64(i) })
	}
	return ended
}

// waitFor polls status until ok, for at most 30 s (a bound for a broken
// daemon only: a loaded machine can be slow, never that slow).
func waitFor(t *testing.T, cl interface {
	Status(context.Context) (*wire.StatusResult, error)
}, ok func(*wire.StatusResult) bool) *wire.StatusResult {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := cl.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("status not reached within 30 s; last: running %d, queued %d, requests %+v", st.Running, st.Queued, st.Requests)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestDisconnectCancels: closing the connection mid-stream ends the
// generation (the daemon's status shows it gone, long before max_tokens).
func TestDisconnectCancels(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{TokenDelay: time.Millisecond}), daemon.Config{})
	nc, err := net.Dial("unix", h.httpSock)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(chatBody(map[string]any{"stream": true, "max_tokens": 60000}))
	fmt.Fprintf(nc, "POST /v1/chat/completions HTTP/1.1\r\nHost: forged\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	buf := make([]byte, 4096)
	n, err := nc.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "200 OK") {
		t.Fatalf("first read: %v %q", err, buf[:n])
	}
	cl := h.msgpack(t)
	st := waitFor(t, cl, func(st *wire.StatusResult) bool { return len(st.Requests) == 1 && st.Requests[0].Generated > 0 })
	if r := st.Requests[0]; r.Client != "http" || r.Op != wire.OpChat || r.State != "running" {
		t.Errorf("status shows %+v, want a running chat of client http", r)
	}
	nc.Close()
	waitFor(t, cl, func(st *wire.StatusResult) bool { return len(st.Requests) == 0 && st.Running == 0 })
}

// TestModelsHealthNotFound: /v1/models lists the served bundle, /health
// follows the state, and nothing else — no admin op — is served.
func TestModelsHealthNotFound(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{Revision: "abc123"}), daemon.Config{})
	c := unixClient(h.httpSock)
	r := do(t, c, base, "GET", "/v1/models", nil)
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID             string   `json:"id"`
			Object         string   `json:"object"`
			Revision       string   `json:"revision"`
			ContextEntries []uint64 `json:"context_entries"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || list.Object != "list" || len(list.Data) != 1 {
		t.Fatalf("models: %d %s", r.status, r.body)
	}
	if m := list.Data[0]; m.ID != "fake/instant" || m.Object != "model" || m.Revision != "abc123" || len(m.ContextEntries) != 4 || m.ContextEntries[0] != 8192 {
		t.Errorf("model %+v", m)
	}
	if r := do(t, c, base, "GET", "/v1/models/fake/instant", nil); r.status != 200 {
		t.Errorf("the model by id: %d %s", r.status, r.body)
	}
	if r := do(t, c, base, "GET", "/v1/models/other", nil); r.status != 404 || r.apiErr(t)["code"] != "model_not_found" {
		t.Errorf("an unknown model: %d %s", r.status, r.body)
	}
	r = do(t, c, base, "GET", "/health", nil)
	if m := r.json(t); r.status != 200 || m["state"] != "ready" || m["revision"] != "abc123" {
		t.Errorf("health ready: %d %s", r.status, r.body)
	}
	h.srv.SetState(wire.StateUnloaded, "idle")
	r = do(t, c, base, "GET", "/health", nil)
	if m := r.json(t); r.status != 503 || m["state"] != "unloaded" {
		t.Errorf("health unloaded: %d %s, want 503 naming the state", r.status, r.body)
	}
	h.srv.SetState(wire.StateUnavailable, "no bundle")
	r = do(t, c, base, "GET", "/health", nil)
	if m := r.json(t); r.status != 503 || m["state"] != "unavailable" || m["reason"] != "no bundle" {
		t.Errorf("health unavailable: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/v1/shutdown", "/v1/config.set", "/v1/embeddings"} {
		if r := do(t, c, base, "POST", p, "{}"); r.status != 404 || r.apiErr(t)["code"] != "unknown_url" {
			t.Errorf("POST %s: %d %s", p, r.status, r.body)
		}
	}
	if r := do(t, c, base, "GET", "/v1/chat/completions", nil); r.status != 404 {
		t.Errorf("GET on a POST endpoint: %d", r.status)
	}
}

// TestTokensOnTCP: loopback TCP needs a bearer token the store knows; the
// token's app is the caller in status; a revoked, wrong or missing token
// is 401, and the Unix socket needs none.
func TestTokensOnTCP(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{TokenDelay: time.Millisecond}), daemon.Config{})
	cl := h.msgpack(t)
	var created wire.TokenCreateResult
	if err := cl.Admin(context.Background(), wire.OpTokenCreate, wire.TokenCreateArgs{App: "editor"}, &created); err != nil {
		t.Fatal(err)
	}
	tcp := &http.Client{}
	url := "http://" + h.tcp
	for name, hdr := range map[string][]string{
		"missing": nil, "wrong": {"Authorization", "Bearer fgd_wrong"}, "not bearer": {"Authorization", created.Token},
	} {
		r := do(t, tcp, url, "GET", "/v1/models", nil, hdr...)
		if r.status != 401 || r.apiErr(t)["code"] != "invalid_api_key" {
			t.Errorf("%s token: %d %s", name, r.status, r.body)
		}
	}
	auth := []string{"Authorization", "Bearer " + created.Token}
	if r := do(t, tcp, url, "GET", "/v1/models", nil, auth...); r.status != 200 {
		t.Fatalf("with the token: %d %s", r.status, r.body)
	}
	// The app is the caller identity while it generates.
	done := make(chan response, 1)
	go func() {
		done <- do(t, tcp, url, "POST", "/v1/chat/completions", chatBody(map[string]any{"max_tokens": 400}), auth...)
	}()
	st := waitFor(t, cl, func(st *wire.StatusResult) bool { return len(st.Requests) == 1 })
	if st.Requests[0].Client != "editor" {
		t.Errorf("status shows client %q, want the token's app", st.Requests[0].Client)
	}
	if r := <-done; r.status != 200 {
		t.Fatalf("chat with the token: %d %s", r.status, r.body)
	}
	if err := cl.Admin(context.Background(), wire.OpTokenRevoke, wire.TokenRevokeArgs{ID: created.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if r := do(t, tcp, url, "GET", "/v1/models", nil, auth...); r.status != 401 {
		t.Errorf("revoked token: %d %s", r.status, r.body)
	}
	if r := do(t, unixClient(h.httpSock), base, "GET", "/v1/models", nil); r.status != 200 {
		t.Errorf("Unix socket without a token: %d", r.status)
	}
}

// TestHeaderTimeout: a client that never finishes its headers is
// disconnected (slowloris).
func TestHeaderTimeout(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{}), daemon.Config{FrameTimeout: 100 * time.Millisecond})
	nc, err := net.Dial("unix", h.httpSock)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprint(nc, "GET /health HTTP/1.1\r\nHost: forged\r\n") // and never the blank line
	buf := make([]byte, 512)
	for {
		if _, err := nc.Read(buf); err != nil {
			return // closed by the daemon
		}
	}
}

// TestListenTCPRefusesNonLoopback: the TCP listener never binds off the machine.
func TestListenTCPRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.168.1.1:8080", "example.com:80", "127.0.0.1"} {
		if ln, err := listenTCP(addr); err == nil {
			ln.Close()
			t.Errorf("%s: listening", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := listenTCP(addr)
		if err != nil {
			t.Errorf("%s: %v", addr, err)
			continue
		}
		ln.Close()
	}
}

// TestSlowReaderDropped: a client that stops reading a stream is dropped
// once a write blocks for write_timeout, and its generation is cancelled.
func TestSlowReaderDropped(t *testing.T) {
	h := start(t, fakeengine.New(fakeengine.Options{}), daemon.Config{WriteTimeout: 50 * time.Millisecond})
	nc, err := net.Dial("unix", h.httpSock)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	body, _ := json.Marshal(chatBody(map[string]any{"stream": true, "max_tokens": 60000}))
	fmt.Fprintf(nc, "POST /v1/chat/completions HTTP/1.1\r\nHost: forged\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	cl := h.msgpack(t)
	waitFor(t, cl, func(st *wire.StatusResult) bool { return len(st.Requests) == 1 })
	// Never read: the socket's buffers fill, a write blocks, the daemon gives up.
	st := waitFor(t, cl, func(st *wire.StatusResult) bool { return len(st.Requests) == 0 })
	if st.Running != 0 {
		t.Fatalf("status after the drop: %+v", st)
	}
}
