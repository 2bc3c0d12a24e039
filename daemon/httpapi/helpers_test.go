package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/httpapi"
	"github.com/forgedaemon/forged/daemon/tokens"
)

// harness is a real daemon serving msgpack on one Unix socket, the HTTP API
// on another and on loopback TCP.
type harness struct {
	srv      *daemon.Server
	sock     string // msgpack
	httpSock string
	tcp      string // host:port
	tokens   *tokens.Store
}

func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fh")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func start(t testing.TB, b daemon.Backend, cfg daemon.Config) *harness {
	t.Helper()
	dir := shortDir(t)
	st, err := tokens.Open(filepath.Join(dir, tokens.FileName))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tokens = st
	h := &harness{sock: filepath.Join(dir, "s"), httpSock: filepath.Join(dir, "h"), tokens: st}
	ln, err := daemon.Listen(h.sock)
	if err != nil {
		t.Fatal(err)
	}
	hln, err := daemon.Listen(h.httpSock)
	if err != nil {
		t.Fatal(err)
	}
	tln, err := httpapi.ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.tcp = tln.Addr().String()
	if h.srv, err = daemon.New(b, cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 3)
	go func() { h.srv.Serve(ctx, ln); done <- struct{}{} }()
	go func() { h.srv.ServeAPI(ctx, hln); done <- struct{}{} }()
	go func() { h.srv.ServeAPI(ctx, tln); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		for range 3 {
			<-done
		}
	})
	return h
}

// unixClient speaks HTTP over the harness's HTTP Unix socket.
func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
}

func (h *harness) msgpack(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), h.sock, client.Options{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d, body not JSON: %v\n%s", r.status, err, r.body)
	}
	return m
}

// apiErr returns the error object's fields (type, param, code, message).
func (r response) apiErr(t testing.TB) map[string]any {
	t.Helper()
	e, ok := r.json(t)["error"].(map[string]any)
	if !ok {
		t.Fatalf("status %d without an error object: %s", r.status, r.body)
	}
	return e
}

func do(t testing.TB, c *http.Client, base, method, path string, body any, header ...string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// sse splits an event stream into its data payloads (the last is [DONE]).
func sse(t testing.TB, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("stream line %q is not a data line", line)
		}
		out = append(out, data)
	}
	return out
}

// streamed is a chat stream's deltas joined, its finish reason and usage.
type streamed struct {
	content, reasoning string
	toolCalls          []map[string]any
	finish             string
	usage              map[string]any
	chunks             int
}

func parseStream(t testing.TB, body []byte) streamed {
	t.Helper()
	events := sse(t, body)
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %s", body)
	}
	var s streamed
	for _, e := range events[:len(events)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content   *string          `json:"content"`
					Reasoning *string          `json:"reasoning_content"`
					ToolCalls []map[string]any `json:"tool_calls"`
				} `json:"delta"`
				Text         *string `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("chunk %q: %v", e, err)
		}
		s.chunks++
		if c.Usage != nil {
			s.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if d := ch.Delta.Content; d != nil {
				s.content += *d
			}
			if d := ch.Text; d != nil {
				s.content += *d
			}
			if d := ch.Delta.Reasoning; d != nil {
				s.reasoning += *d
			}
			s.toolCalls = append(s.toolCalls, ch.Delta.ToolCalls...)
			if ch.FinishReason != nil {
				s.finish = *ch.FinishReason
			}
		}
	}
	return s
}
