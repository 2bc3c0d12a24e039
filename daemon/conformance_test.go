package daemon_test

// Conformance tests written from docs/PROTOCOL.md with raw frames and
// msgpack; every "§N" below is section N of docs/PROTOCOL.md.

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

// §9: the example bytes in the document are a valid hello.
func TestProtocolDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "PROTOCOL.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(doc), "## 9. Example (bytes)")
	block := strings.Split(after, "```")[1]
	frame, err := hex.DecodeString(strings.Join(strings.Fields(block), ""))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	if _, err := r.nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	res := result(t, r.read())
	if asUint(res["protocol"]) != 1 || res["bundle"].(map[string]any)["repo"] != "fake/instant" {
		t.Fatalf("hello result %v", res)
	}
}

// §4: hello must come first, and only protocol 1 is spoken.
func TestHelloRules(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	expectError(t, r.call(5, "status", nil), 5, "protocol_version")
	expectError(t, r.call(6, "hello", map[string]any{"protocol": 2, "client": "x"}), 6, "protocol_version")
	expectError(t, r.call(7, "hello", map[string]any{"protocol": 1, "client": "bad\nname"}), 7, "bad_request")
	res := result(t, r.call(8, "hello", map[string]any{"protocol": 1, "client": "x"}))
	for _, k := range []string{"daemon", "protocol", "capabilities", "bundle", "state", "max_frame"} {
		if _, ok := res[k]; !ok {
			t.Errorf("hello result lacks %q: %v", k, res)
		}
	}
	if asUint(res["max_frame"]) != 1<<20 || res["state"] != "ready" {
		t.Errorf("hello result %v", res)
	}
	expectError(t, r.call(9, "hello", map[string]any{"protocol": 1, "client": "x"}), 9, "bad_request")
}

// §5: status, models, tokenize, detokenize.
func TestAppOps(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	st := result(t, r.call(2, "status", nil))
	for _, k := range []string{"daemon", "protocol", "state", "reason", "bundle", "uptime_ms", "connections", "queued", "running", "slots", "sessions", "requests", "memory"} {
		if _, ok := st[k]; !ok {
			t.Errorf("status lacks %q", k)
		}
	}
	if asUint(st["connections"]) != 1 {
		t.Errorf("connections = %v", st["connections"])
	}
	models := result(t, r.call(3, "models", map[string]any{}))["models"].([]any)
	if len(models) != 1 || len(models[0].(map[string]any)["context_entries"].([]any)) != 4 {
		t.Errorf("models %v", models)
	}
	ids := result(t, r.call(4, "tokenize", map[string]any{"text": "hé"}))["ids"].([]any)
	if len(ids) != 3 || asUint(ids[0]) != 'h' || asUint(ids[1]) != 0xc3 {
		t.Errorf("tokenize ids %v", ids)
	}
	text := result(t, r.call(5, "detokenize", map[string]any{"ids": ids}))["text"]
	if text != "hé" {
		t.Errorf("detokenize %q", text)
	}
	msg := expectError(t, r.call(6, "detokenize", map[string]any{"ids": []int{1, 999}}), 6, "bad_request")
	if !strings.Contains(msg, "ids[1]") {
		t.Errorf("message does not name the element: %s", msg)
	}
}

// §5: chat streams token events with complete UTF-8, then one reply with usage.
func TestChatStream(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	r.write(map[string]any{"id": 10, "op": "chat", "args": map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_tokens": 40, "speculative": false}})
	var streamed strings.Builder
	var nIDs int
	for {
		m := r.read()
		if asUint(m["id"]) != 10 {
			t.Fatalf("message for another id: %v", m)
		}
		if m["event"] == nil {
			res := result(t, m)
			if res["text"] != streamed.String() {
				t.Errorf("reply text %q, streamed %q", res["text"], streamed.String())
			}
			// The last character is cut mid-sequence: it ends as U+FFFD, never as a partial byte.
			want := strings.ToValidUTF8(strings.Repeat(fakeengine.Reply, 3)[:40], "\uFFFD")
			if res["text"] != want {
				t.Errorf("text %q, want %q", res["text"], want)
			}
			u := res["usage"].(map[string]any)
			if asUint(u["generated_tokens"]) != 40 || asUint(u["prompt_tokens"]) == 0 || nIDs != 40 {
				t.Errorf("usage %v, ids streamed %d", u, nIDs)
			}
			if res["finish_reason"] != "length" || res["revision"] != "0000000000000000000000000000000000000fake" || asUint(res["context"]) != 8192 {
				t.Errorf("reply %v", res)
			}
			for _, k := range []string{"ttft_ms", "tokens_per_s", "acceptance", "cached_tokens"} {
				if _, ok := u[k]; !ok {
					t.Errorf("usage lacks %s", k)
				}
			}
			break
		}
		if m["event"] != "token" {
			t.Fatalf("unexpected event %v", m)
		}
		d := m["data"].(map[string]any)
		s := d["text"].(string)
		if !utf8.ValidString(s) {
			t.Fatalf("event text %q is not valid UTF-8", s)
		}
		streamed.WriteString(s)
		nIDs += len(d["ids"].([]any))
	}
}

// §5: stop strings end generation with finish_reason stop_string, and the
// stop string never appears in the streamed text.
func TestStopString(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	r.write(map[string]any{"id": 3, "op": "generate", "args": map[string]any{"prompt": "x", "max_tokens": 100, "stop": []string{"wörld"}}})
	var streamed string
	for {
		m := r.read()
		if m["event"] != nil {
			streamed += m["data"].(map[string]any)["text"].(string)
			continue
		}
		res := result(t, m)
		if res["finish_reason"] != "stop_string" || res["text"] != "héllo " || streamed != "héllo " {
			t.Fatalf("result %v, streamed %q", res, streamed)
		}
		return
	}
}

// §5: sessions carry state; only the new turn is prefilled; close frees it.
func TestSessions(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	sid := result(t, r.call(2, "session.open", nil))["session"].(string)
	turn := func(id uint64, content string) map[string]any {
		r.write(map[string]any{"id": id, "op": "chat", "args": map[string]any{"session": sid, "max_tokens": 5,
			"messages": []any{map[string]any{"role": "user", "content": content}}}})
		for {
			if m := r.read(); m["event"] == nil {
				return result(t, m)
			}
		}
	}
	first := turn(3, "one")["usage"].(map[string]any)
	second := turn(4, "two")
	u := second["usage"].(map[string]any)
	if asUint(first["cached_tokens"]) != 0 || asUint(u["cached_tokens"]) == 0 || asUint(u["cached_tokens"]) >= asUint(u["prompt_tokens"]) {
		t.Errorf("first %v, second %v", first, u)
	}
	if second["session"] != sid {
		t.Errorf("reply session %v", second["session"])
	}
	st := result(t, r.call(5, "status", nil))
	if ss := st["sessions"].([]any); len(ss) != 1 || asUint(ss[0].(map[string]any)["tokens"]) == 0 {
		t.Errorf("status sessions %v", ss)
	}
	result(t, r.call(6, "session.close", map[string]any{"session": sid}))
	expectError(t, r.call(7, "session.close", map[string]any{"session": sid}), 7, "not_found")
	if ts.engine.OpenSessions() != 0 {
		t.Errorf("engine still holds %d sessions", ts.engine.OpenSessions())
	}
	// A session left open is freed when its connection closes.
	r2 := dialRaw(t, ts.path)
	r2.hello()
	sid2 := result(t, r2.call(2, "session.open", nil))["session"].(string)
	r2.nc.Close()
	waitFor(t, func() bool { return strings.Contains(strings.Join(ts.engine.ClosedSessions(), ","), sid2) })
}

// §5: cancel ends the request with cancelled; unknown ids are not_found.
func TestCancel(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{TokenDelay: time.Millisecond})
	r := dialRaw(t, ts.path)
	r.hello()
	r.write(map[string]any{"id": 20, "op": "generate", "args": map[string]any{"ids": []int{1, 2}, "max_tokens": 5000}})
	if m := r.read(); m["event"] != "token" {
		t.Fatalf("want a token event first, got %v", m)
	}
	expectError(t, r.cancelStream(21, 20), 20, "cancelled")
	expectError(t, r.call(22, "cancel", map[string]any{"id": 20}), 22, "not_found")
}

// §3: several requests in flight on one connection; a duplicate id is refused.
func TestConcurrentRequestsAndDuplicateID(t *testing.T) {
	ts := startServer(t, daemon.Config{Slots: 2}, fakeengine.Options{TokenDelay: time.Millisecond})
	r := dialRaw(t, ts.path)
	r.hello()
	gen := func(id int) map[string]any {
		return map[string]any{"id": id, "op": "generate", "args": map[string]any{"ids": []int{1}, "max_tokens": 30}}
	}
	r.write(gen(30))
	r.write(gen(31))
	r.write(gen(30))
	replies := map[uint64]map[string]any{}
	for len(replies) < 3 {
		m := r.read()
		if m["event"] == nil {
			id := asUint(m["id"])
			if id == 30 && m["ok"] == false {
				expectError(t, m, 30, "bad_request")
				id = 1000
			}
			replies[id] = m
		}
	}
	result(t, replies[30])
	result(t, replies[31])
}

// §5: subscribe sends the current state, then changes, until cancelled.
func TestSubscribe(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	r.write(map[string]any{"id": 40, "op": "subscribe"})
	if d := r.read()["data"].(map[string]any); d["state"] != "ready" {
		t.Fatalf("first state %v", d)
	}
	ts.SetState("updating", "revision abc")
	if d := r.read()["data"].(map[string]any); d["state"] != "updating" || d["reason"] != "revision abc" {
		t.Fatalf("second state %v", d)
	}
	expectError(t, r.cancelStream(41, 40), 40, "cancelled")
}

// §5: a prompt that cannot fit the largest context entry is refused up front.
func TestContextExceeded(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{ContextSize: []int{64}})
	r := dialRaw(t, ts.path)
	r.hello()
	msg := expectError(t, r.call(2, "generate", map[string]any{"prompt": strings.Repeat("a", 60), "max_tokens": 10}), 2, "context_exceeded")
	if !strings.Contains(msg, "64") {
		t.Errorf("message %q does not name the limit", msg)
	}
}

// §5: admin ops for the daemon's own uid; config.get, store ops without a store, shutdown.
func TestAdminOpsAsOwner(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	cfg := result(t, r.call(2, "config.get", nil))["config"].(map[string]any)
	if asUint(cfg["max_frame"]) != 1<<20 || asUint(cfg["per_caller"]) != 4 {
		t.Errorf("config %v", cfg)
	}
	msg := expectError(t, r.call(3, "pull", map[string]any{}), 3, "unavailable")
	if !strings.Contains(msg, "no bundle store") {
		t.Errorf("message %q", msg)
	}
	result(t, r.call(4, "shutdown", nil))
	select {
	case <-ts.done:
	case <-time.After(5 * time.Second):
		t.Fatal("server still running after shutdown")
	}
}

// Bad input, each a test (§2, §3).
func TestBadRequests(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	cases := []struct {
		name   string
		req    map[string]any
		id     uint64
		expect string
	}{
		{"unknown op", map[string]any{"id": 2, "op": "frobnicate"}, 2, `unknown op "frobnicate"`},
		{"wrong type", map[string]any{"id": 3, "op": "tokenize", "args": map[string]any{"text": 5}}, 3, "args.text must be a string"},
		{"unknown arg", map[string]any{"id": 4, "op": "tokenize", "args": map[string]any{"txt": "a"}}, 4, "unknown field args.txt"},
		{"negative", map[string]any{"id": 5, "op": "chat", "args": map[string]any{"max_tokens": -1}}, 5, "must not be negative"},
		{"bad role", map[string]any{"id": 6, "op": "chat", "args": map[string]any{"messages": []any{map[string]any{"role": "robot"}}}}, 6, "messages[0].role"},
		{"no prompt", map[string]any{"id": 7, "op": "generate", "args": map[string]any{}}, 7, "exactly one of args.prompt and args.ids"},
		{"bad priority", map[string]any{"id": 8, "op": "generate", "args": map[string]any{"ids": []int{1}, "priority": "urgent"}}, 8, "args.priority"},
		{"args not map", map[string]any{"id": 9, "op": "status", "args": "x"}, 9, `"args" must be a map`},
		{"id string", map[string]any{"id": "9", "op": "status"}, 0, `"id" must be an unsigned integer`},
	}
	for _, c := range cases {
		r.write(c.req)
		if msg := expectError(t, r.read(), c.id, "bad_request"); !strings.Contains(msg, c.expect) {
			t.Errorf("%s: message %q lacks %q", c.name, msg, c.expect)
		}
	}
	// The connection survives all of them.
	result(t, r.call(50, "status", nil))
}

// §2: a frame over max_frame gets too_large, then the connection closes.
func TestOversizedFrame(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	r.nc.Write([]byte{0x00, 0x10, 0x00, 0x01}) // 1 MiB + 1, body never sent
	expectError(t, r.read(), 0, "too_large")
	if _, err := r.tryRead(2 * time.Second); err == nil {
		t.Fatal("connection still open after too_large")
	}
}

// §2: deep nesting and huge declared counts are refused before decoding,
// without the daemon allocating what they claim.
func TestHostileFramesDoNotAllocate(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	deep := []byte{0x83, 0xa2, 'i', 'd', 0x02, 0xa2, 'o', 'p', 0xa6, 's', 't', 'a', 't', 'u', 's', 0xa4, 'a', 'r', 'g', 's'}
	deep = append(deep, bytes.Repeat([]byte{0x91}, 200_000)...)
	deep = append(deep, 0x01)
	hostile := map[string][]byte{
		"map32 claiming 2^31 entries": {0xdf, 0x80, 0x00, 0x00, 0x00},
		"args array32 claiming 2^32-1": append([]byte{0x83, 0xa2, 'i', 'd', 0x02, 0xa2, 'o', 'p', 0xa6, 'd', 'e', 't', 'o', 'k', 'e', 'n',
			0xa4, 'a', 'r', 'g', 's', 0x81, 0xa3, 'i', 'd', 's', 0xdd}, 0xff, 0xff, 0xff, 0xff),
		"nesting 200000 deep": deep,
	}
	for name, body := range hostile {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r.writeBody(body)
		msg := expectError(t, r.read(), 0, "bad_request")
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
			t.Errorf("%s: daemon allocated %d bytes", name, grew)
		}
		if !strings.Contains(msg, "malformed msgpack") {
			t.Errorf("%s: message %q", name, msg)
		}
	}
	result(t, r.call(3, "status", nil))
}

// §2: a frame that starts and then stalls is closed after frame_timeout.
func TestHalfFrameTimeout(t *testing.T) {
	ts := startServer(t, daemon.Config{FrameTimeout: 200 * time.Millisecond}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	r.nc.Write([]byte{0x00, 0x00, 0x00, 0x20, 0x83}) // 32-byte frame, 1 byte sent
	start := time.Now()
	if _, err := r.tryRead(3 * time.Second); err == nil {
		t.Fatal("got a message instead of a close")
	} else if strings.Contains(err.Error(), "timeout") {
		t.Fatal("connection was not closed within 3s")
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("closed after %v, before the timeout", el)
	}
	// An idle connection between frames is not closed.
	r2 := dialRaw(t, ts.path)
	r2.hello()
	time.Sleep(400 * time.Millisecond)
	result(t, r2.call(2, "status", nil))
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	// A bound for a broken daemon only: a loaded CI machine (or -race)
	// can take seconds to deliver hundreds of frames.
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A panic in a backend fails that request with internal; the daemon lives on.
func TestBackendPanicIsInternal(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{PanicText: "boom"})
	r := dialRaw(t, ts.path)
	r.hello()
	if msg := expectError(t, r.call(2, "tokenize", map[string]any{"text": "boom"}), 2, "internal"); !strings.Contains(msg, "tokenize failed") {
		t.Errorf("message %q", msg)
	}
	r.write(map[string]any{"id": 3, "op": "generate", "args": map[string]any{"prompt": "boom"}})
	expectError(t, r.read(), 3, "internal")
	result(t, r.call(4, "status", nil))
}

// The ops and error codes the issue requires are all in PROTOCOL.md, and
// the daemon knows every op (none answers "unknown op").
func TestProtocolDocCoversOpsAndCodes(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "PROTOCOL.md"))
	if err != nil {
		t.Fatal(err)
	}
	codes := []string{"bad_request", "too_large", "unauthorized", "not_found", "busy", "context_exceeded",
		"unavailable", "cancelled", "protocol_version", "internal"}
	for _, c := range codes {
		if !strings.Contains(string(doc), "| `"+c+"` |") {
			t.Errorf("error code %s is not in the PROTOCOL.md table", c)
		}
	}
	ops := []string{"hello", "status", "models", "tokenize", "detokenize", "chat", "generate", "session.open",
		"session.close", "cancel", "subscribe", "pull", "verify", "update.check", "update.apply",
		"update.rollback", "load", "unload", "pin", "gc", "config.get", "config.set", "shutdown"}
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	for i, op := range ops {
		if !strings.Contains(string(doc), "`"+op) {
			t.Errorf("op %s is not documented", op)
		}
		if op == "shutdown" || op == "subscribe" {
			continue // would stop the server / stream until cancelled
		}
		rep := r.call(uint64(100+i), op, map[string]any{"__probe": true})
		if e, _ := rep["error"].(map[string]any); e != nil && strings.Contains(e["message"].(string), "unknown op") {
			t.Errorf("daemon does not know op %s", op)
		}
	}
}
