package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

// exampleDaemon starts an in-process forged on a socket in a temporary
// directory, serving the fake engine (it "generates" fakeengine.Reply,
// one byte a token) with one generation slot; stop shuts it down.
func exampleDaemon(opts fakeengine.Options) (socket string, stop func()) {
	dir, err := os.MkdirTemp("", "fex")
	if err != nil {
		panic(err)
	}
	socket = filepath.Join(dir, "forged.sock")
	ln, err := daemon.Listen(socket)
	if err != nil {
		panic(err)
	}
	srv, err := daemon.New(fakeengine.New(opts), daemon.Config{Slots: 1})
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(context.Background(), ln); close(done) }()
	return socket, func() { srv.Shutdown(); <-done; os.RemoveAll(dir) }
}

// exampleClient is a connection to a fresh exampleDaemon.
func exampleClient(opts fakeengine.Options) (*client.Client, func()) {
	socket, stop := exampleDaemon(opts)
	c, err := client.Dial(context.Background(), socket, client.Options{Name: "example"})
	if err != nil {
		panic(err)
	}
	return c, func() { c.Close(); stop() }
}

var user = []wire.Message{{Role: "user", Content: "Hi"}}

func ExampleDial() {
	socket, stop := exampleDaemon(fakeengine.Options{})
	defer stop()
	// "" dials DefaultSocketPath, where an installed forged listens.
	c, err := client.Dial(context.Background(), socket, client.Options{Name: "myapp"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println("connected to", c.Hello().Bundle.Repo)
	// Output: connected to fake/instant
}

func ExampleDefaultSocketPath() {
	// Per user (or /var/run/forged/forged.sock for root); internal/paths decides.
	fmt.Println(filepath.Base(client.DefaultSocketPath()))
	// Output: forged.sock
}

func ExampleClient_Hello() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	h := c.Hello()
	fmt.Println(h.Protocol, h.State, h.Bundle.Model)
	// Output: 1 ready fake-bytes
}

func ExampleClient_Close() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	c.Close()
	_, err := c.Status(context.Background())
	fmt.Println(errors.Is(err, client.ErrClosed))
	// Output: true
}

func ExampleClient_Status() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	st, err := c.Status(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.State, st.Connections, "connection(s),", st.Running, "running,", st.Slots, "slot(s)")
	// Output: ready 1 connection(s), 0 running, 1 slot(s)
}

func ExampleClient_Models() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	models, err := c.Models(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range models {
		fmt.Println(m.Model, m.Repo, m.ContextEntries)
	}
	// Output: fake-bytes fake/instant [8192 16384 32768 65536]
}

func ExampleClient_Tokenize() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	ids, err := c.Tokenize(context.Background(), "Hi")
	fmt.Println(ids, err)
	// Output: [72 105] <nil>
}

func ExampleClient_Detokenize() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	text, err := c.Detokenize(context.Background(), []uint32{72, 105})
	fmt.Printf("%q %v\n", text, err)
	// Output: "Hi" <nil>
}

func ExampleClient_OpenSession() {
	c, done := exampleClient(fakeengine.Options{StopAfter: 4})
	defer done()
	ctx := context.Background()
	sess, err := c.OpenSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseSession(ctx, sess)
	// Each turn sends only the new messages; the daemon keeps the rest.
	for range 2 {
		res, err := c.Chat(ctx, wire.ChatArgs{Session: sess, Messages: user}).Result()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Session == sess, res.Usage.GeneratedTokens)
	}
	// Output:
	// true 5
	// true 5
}

func ExampleClient_CloseSession() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	ctx := context.Background()
	sess, _ := c.OpenSession(ctx)
	fmt.Println(c.CloseSession(ctx, sess))
	var e *client.Error
	if err := c.CloseSession(ctx, sess); errors.As(err, &e) {
		fmt.Println(e.Code)
	}
	// Output:
	// <nil>
	// not_found
}

func ExampleClient_ConfigGet() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	cfg, err := c.ConfigGet(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Slots, cfg.MaxFrame, cfg.KeepAliveMS == nil) // no residency: no keep-alive
	// Output: 1 1048576 true
}

func ExampleClient_Shutdown() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	fmt.Println(c.Shutdown(context.Background()))
	// Output: <nil>
}

func ExampleClient_Admin() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	var r wire.GCResult
	err := c.Admin(context.Background(), wire.OpGC, wire.GCArgs{Partials: true}, &r)
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code) // this daemon has no bundle store to collect
	}
	fmt.Println(c.Admin(context.Background(), wire.OpStatus, nil, nil))
	// Output:
	// unavailable
	// "status" is not an admin op
}

func ExampleClient_Chat() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	s := c.Chat(context.Background(), wire.ChatArgs{Messages: user}, client.MaxTokens(6))
	for ev, err := range s.Tokens() {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Print(ev.Text)
	}
	res, err := s.Result()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("|", res.FinishReason, res.Usage.GeneratedTokens)
	// Output: héllo| length 6
}

func ExampleClient_Generate() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	res, err := c.Generate(context.Background(), wire.GenerateArgs{IDs: []uint32{72, 105}}, client.MaxTokens(3)).Result()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q %d prompt tokens\n", res.Text, res.Usage.PromptTokens)
	// Output: "hé" 2 prompt tokens
}

func ExampleStream_Tokens() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	s := c.Generate(context.Background(), wire.GenerateArgs{IDs: []uint32{1}}, client.MaxTokens(60000), client.Speculative(false))
	n := 0
	for ev, err := range s.Tokens() {
		if err != nil { // a failure, or the Stream's context ending
			fmt.Println(err)
			return
		}
		fmt.Printf("%q ", ev.Text) // one byte a token here: "é" takes two
		if n++; n == 3 {
			break // stopping early cancels the request
		}
	}
	var e *client.Error
	if _, err := s.Result(); errors.As(err, &e) {
		fmt.Println(e.Code)
	}
	// Output: "h" "" "é" cancelled
}

func ExampleStream_Result() {
	c, done := exampleClient(fakeengine.Options{StopAfter: 5})
	defer done()
	res, err := c.Chat(context.Background(), wire.ChatArgs{Messages: user}).Result()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q %s %d\n", res.Text, res.FinishReason, res.Usage.GeneratedTokens)
	// Output: "héll" stop 6
}

func ExampleClient_Subscribe() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	for ev, err := range c.Subscribe(context.Background()) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(ev.State) // the current state first, then each change
		break
	}
	// Output: ready
}

func ExampleClient_Pull() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	progress := func(ev wire.ProgressEvent) { fmt.Println(ev.Kind, ev.Path) }
	_, err := c.Pull(context.Background(), "", progress)
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code) // a daemon serving a model directory, not a bundle store
	}
	// Output: unavailable
}

func ExampleClient_UpdateApply() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	_, err := c.UpdateApply(context.Background(), "", nil)
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code)
	}
	// Output: unavailable
}

func ExampleMaxTokens() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	res, _ := c.Chat(context.Background(), wire.ChatArgs{Messages: user}, client.MaxTokens(8)).Result()
	fmt.Println(res.Usage.GeneratedTokens, res.FinishReason)
	// Output: 8 length
}

func ExampleSampling() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	s := c.Chat(context.Background(), wire.ChatArgs{Messages: user},
		client.Sampling(wire.Sampling{Temperature: 0.7, TopP: 0.9, Seed: 42}), client.MaxTokens(4))
	res, err := s.Result()
	fmt.Println(res.Usage.GeneratedTokens, err)
	// Output: 4 <nil>
}

func ExampleSpeculative() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	res, _ := c.Chat(context.Background(), wire.ChatArgs{Messages: user}, client.Speculative(false), client.MaxTokens(4)).Result()
	fmt.Println(len(res.Usage.Acceptance)) // no speculative cycles, no acceptance histogram
	// Output: 0
}

func ExamplePrompt() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	res, err := c.Generate(context.Background(), wire.GenerateArgs{}, client.Prompt("Once upon a time"), client.MaxTokens(2)).Result()
	fmt.Println(res.Usage.PromptTokens, err)
	_, err = c.Chat(context.Background(), wire.ChatArgs{Messages: user}, client.Prompt("x")).Result()
	fmt.Println(err)
	// Output:
	// 16 <nil>
	// client.Prompt is an option of Generate; Chat takes wire.ChatArgs.Messages
}

func ExampleOnQueued() {
	c, done := exampleClient(fakeengine.Options{})
	defer done()
	// Another request holds the daemon's one generation slot (its stream
	// read on its own goroutine: events wait for their reader).
	hold, release := context.WithCancel(context.Background())
	busy := make(chan struct{})
	go func() {
		c.Generate(hold, wire.GenerateArgs{IDs: []uint32{1}}, client.MaxTokens(60000)).Result()
		close(busy)
	}()
	for st, _ := c.Status(context.Background()); st.Running == 0; st, _ = c.Status(context.Background()) {
	}
	s := c.Chat(context.Background(), wire.ChatArgs{Messages: user}, client.MaxTokens(3),
		client.OnQueued(func(ev wire.QueuedEvent) {
			fmt.Printf("queued (position %d): %s\n", ev.Position, ev.Reason)
			release() // (here: free the slot)
		}))
	res, err := s.Result()
	<-busy
	fmt.Printf("%q %v\n", res.Text, err)
	// Output:
	// queued (position 1): waiting for a generation slot (all are running)
	// "hé" <nil>
}

func ExampleError() {
	c, done := exampleClient(fakeengine.Options{ContextSize: []int{1024}})
	defer done()
	long := strings.Repeat("word ", 400)
	_, err := c.Chat(context.Background(), wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: long}}}).Result()
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code)
	}
	// Output: context_exceeded
}
