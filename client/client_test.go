package client_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

func serve(t *testing.T, opts fakeengine.Options) (string, *daemon.Server) {
	t.Helper()
	dir, _ := os.MkdirTemp("", "fc")
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	ln, err := daemon.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	// PerCaller above the streams TestClientConcurrentStreams opens at
	// once: with the default (4) a stream admitted before an earlier one
	// ended would be refused busy.
	srv, err := daemon.New(fakeengine.New(opts), daemon.Config{Slots: 4, PerCaller: 16})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(context.Background(), ln); close(done) }()
	t.Cleanup(func() { srv.Shutdown(); <-done })
	return path, srv
}

func dial(t *testing.T, path string) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), path, client.Options{Name: "client-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestClientBasics(t *testing.T) {
	path, _ := serve(t, fakeengine.Options{})
	c := dial(t, path)
	ctx := context.Background()
	if h := c.Hello(); h.Protocol != wire.ProtocolVersion || h.Bundle.Repo != "fake/instant" {
		t.Fatalf("hello %+v", h)
	}
	st, err := c.Status(ctx)
	if err != nil || st.State != wire.StateReady || st.Connections != 1 {
		t.Fatalf("status %+v %v", st, err)
	}
	ids, err := c.Tokenize(ctx, "añb")
	if err != nil || len(ids) != 4 {
		t.Fatalf("tokenize %v %v", ids, err)
	}
	text, err := c.Detokenize(ctx, ids)
	if err != nil || text != "añb" {
		t.Fatalf("detokenize %q %v", text, err)
	}
	_, err = c.Detokenize(ctx, []uint32{5000})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != wire.CodeBadRequest {
		t.Fatalf("typed error: %v", err)
	}
	cfg, err := c.ConfigGet(ctx)
	if err != nil || cfg.MaxFrame != 1<<20 {
		t.Fatalf("config.get %+v %v", cfg, err)
	}
	if err := c.Admin(ctx, wire.OpGC, nil, nil); !errors.As(err, &ce) || ce.Code != wire.CodeUnavailable {
		t.Fatalf("gc: %v", err)
	}
}

func TestClientChatStream(t *testing.T) {
	path, _ := serve(t, fakeengine.Options{StopAfter: 25})
	c := dial(t, path)
	sess, err := c.OpenSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := c.Chat(context.Background(), wire.ChatArgs{Session: sess, Messages: []wire.Message{{Role: "user", Content: "hi"}}})
	var text strings.Builder
	n := 0
	for ev, err := range s.Tokens() {
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(ev.Text)
		n += len(ev.IDs)
	}
	res, err := s.Result()
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != text.String() || res.FinishReason != wire.FinishStop || n != 26 || res.Usage.GeneratedTokens != 26 || res.Session != sess {
		t.Fatalf("result %+v, streamed %q (%d ids)", res, text.String(), n)
	}
	if len(res.Usage.Acceptance) == 0 {
		t.Errorf("speculative by default, but no acceptance histogram")
	}
	if err := c.CloseSession(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
}

// Cancelling the context sends cancel; the daemon stops the work.
func TestClientCancel(t *testing.T) {
	path, _ := serve(t, fakeengine.Options{TokenDelay: time.Millisecond})
	c := dial(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{1}}, client.MaxTokens(60000))
	got := 0
	var last error
	for _, err := range s.Tokens() {
		if err != nil {
			last = err
			break
		}
		if got++; got == 5 {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("stream ended with %v", last)
	}
	st, err := c.Status(context.Background())
	if err != nil || len(st.Requests) != 0 || st.Running != 0 {
		t.Fatalf("work still running after cancel: %+v %v", st, err)
	}
}

// Many streams on one connection at once, each getting only its own events.
func TestClientConcurrentStreams(t *testing.T) {
	path, _ := serve(t, fakeengine.Options{})
	c := dial(t, path)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			res, err := c.Generate(context.Background(), wire.GenerateArgs{IDs: []uint32{1}}, client.MaxTokens(uint64(10+i))).Result()
			if err != nil || res.Usage.GeneratedTokens != uint64(10+i) {
				t.Errorf("stream %d: %+v %v", i, res, err)
			}
		})
	}
	wg.Wait()
}

func TestClientSubscribe(t *testing.T) {
	path, srv := serve(t, fakeengine.Options{})
	c := dial(t, path)
	var states []string
	for ev, err := range c.Subscribe(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, ev.State)
		if len(states) == 1 {
			srv.SetState(wire.StateUnavailable, "test")
		} else {
			break
		}
	}
	if strings.Join(states, ",") != "ready,unavailable" {
		t.Fatalf("states %v", states)
	}
	if st, err := c.Status(context.Background()); err != nil || st.State != wire.StateUnavailable {
		t.Fatalf("status after subscribe: %+v %v", st, err)
	}
}

// When the daemon goes away, calls in flight and later calls fail with ErrClosed.
func TestClientDaemonGone(t *testing.T) {
	path, srv := serve(t, fakeengine.Options{TokenDelay: time.Millisecond})
	c := dial(t, path)
	s := c.Generate(context.Background(), wire.GenerateArgs{IDs: []uint32{1}}, client.MaxTokens(60000))
	srv.Shutdown()
	if _, err := s.Result(); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("stream after shutdown: %v", err)
	}
	if _, err := c.Status(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("call after shutdown: %v", err)
	}
}

// Options apply after the args struct's fields: MaxTokens(8) wins over a
// MaxTokens already in the args, and the last option of a kind wins.
func TestGenOptionsOverrideArgs(t *testing.T) {
	path, _ := serve(t, fakeengine.Options{})
	c := dial(t, path)
	ten := uint64(10)
	res, err := c.Generate(context.Background(), wire.GenerateArgs{IDs: []uint32{1}, MaxTokens: &ten}, client.MaxTokens(3), client.MaxTokens(8)).Result()
	if err != nil || res.Usage.GeneratedTokens != 8 {
		t.Fatalf("generated %+v %v, want 8 tokens", res, err)
	}
	res, err = c.Chat(context.Background(), wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "hi"}}}, client.MaxTokens(5), client.Speculative(false)).Result()
	if err != nil || res.Usage.GeneratedTokens != 5 || len(res.Usage.Acceptance) != 0 {
		t.Fatalf("chat %+v %v: want 5 tokens without speculation", res, err)
	}
}
