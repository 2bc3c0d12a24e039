package daemon_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/vmihailenco/msgpack/v5"
)

// FuzzServerRequest sends one arbitrary frame body (after hello) to a live
// daemon: whatever it is, the daemon must answer it with a well-formed reply
// or events ending in one (or close the connection after too_large), and
// keep serving other connections.
func FuzzServerRequest(f *testing.F) {
	for _, v := range []map[string]any{
		{"id": 2, "op": "status"},
		{"id": 2, "op": "tokenize", "args": map[string]any{"text": "héllo"}},
		{"id": 2, "op": "detokenize", "args": map[string]any{"ids": []int{104, 195, 169}}},
		{"id": 2, "op": "chat", "args": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_tokens": 3, "stop": []string{"l"}}},
		{"id": 2, "op": "generate", "args": map[string]any{"ids": []int{1, 2}, "max_tokens": 2, "priority": "background"}},
		{"id": 2, "op": "session.open"},
		{"id": 2, "op": "cancel", "args": map[string]any{"id": 9}},
		{"id": 2, "op": "config.get"},
	} {
		b, _ := msgpack.Marshal(v)
		f.Add(b)
	}
	f.Add([]byte{0xdf, 0x80, 0, 0, 0})
	dir, err := os.MkdirTemp("", "fz")
	if err != nil {
		f.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s")
	ln, err := daemon.Listen(path)
	if err != nil {
		f.Fatal(err)
	}
	srv, err := daemon.New(fakeengine.New(fakeengine.Options{}), daemon.Config{Limits: wire.Limits{MaxFrame: 4096}, DefaultMaxTokens: 4})
	if err != nil {
		f.Fatal(err)
	}
	go srv.Serve(f.Context(), ln)
	f.Fuzz(func(t *testing.T, body []byte) {
		nc, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		r := &rawConn{t: t, nc: nc}
		r.hello()
		r.writeBody(body)
		for {
			m, err := r.tryRead(5 * time.Second)
			if err != nil {
				if len(body) > 4096 {
					return // too_large closes the connection
				}
				t.Fatalf("no reply to %x: %v", body, err)
			}
			if _, isEvent := m["event"]; isEvent {
				continue
			}
			if _, ok := m["ok"].(bool); !ok {
				t.Fatalf("malformed reply %v to %x", m, body)
			}
			return // the one reply to the one request
		}
	})
}
