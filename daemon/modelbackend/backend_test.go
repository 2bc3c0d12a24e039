package modelbackend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/text/chat"
	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/refdata"
	"github.com/forgedaemon/forged/internal/synth"

	"github.com/forgedaemon/forged/internal/leakcheck"
)

func qwen3Dir(t *testing.T) string {
	t.Helper()
	return filepath.Dir(refdata.Path(t, "qwen3", "tokenizer.json"))
}

// serve runs a daemon over b on a temporary socket and returns a client.
func serve(t *testing.T, b daemon.Backend) *client.Client {
	t.Helper()
	_, c := serveServer(t, b)
	return c
}

// tokenize and detokenize over the socket match the reference encodings of
// the real Qwen3 tokenizer, line for line.
func TestTokenizeMatchesQwen3Reference(t *testing.T) {
	dir := qwen3Dir(t)
	b, err := modelbackend.Open(dir, modelbackend.Options{TokenizerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, b)
	f, err := os.Open(filepath.Join(dir, "encodings.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var ref struct {
			Text    string   `json:"text"`
			IDs     []uint32 `json:"ids"`
			Decoded string   `json:"decoded"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ref); err != nil {
			t.Fatal(err)
		}
		ids, err := c.Tokenize(context.Background(), ref.Text)
		if err != nil {
			t.Fatal(err)
		}
		if !equal(ids, ref.IDs) {
			t.Fatalf("line %d %q: ids %v, want %v", n+1, ref.Text, ids, ref.IDs)
		}
		text, err := c.Detokenize(context.Background(), ref.IDs)
		if err != nil || text != ref.Decoded {
			t.Fatalf("line %d: decoded %q, want %q (%v)", n+1, text, ref.Decoded, err)
		}
		n++
	}
	if n < 200 {
		t.Fatalf("only %d reference lines", n)
	}
	_, err = c.Detokenize(context.Background(), []uint32{1 << 30})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != wire.CodeBadRequest || !strings.Contains(ce.Message, "ids[0]") {
		t.Fatalf("out-of-vocabulary id: %v", err)
	}
	// Tokenizer only: generation says why it cannot run.
	_, err = c.Generate(context.Background(), wire.GenerateArgs{IDs: []uint32{1}}).Result()
	if !errors.As(err, &ce) || ce.Code != wire.CodeUnavailable {
		t.Fatalf("generate without a model: %v", err)
	}
}

// A chat on the tiny synthetic checkpoint through the socket: greedy output
// streamed equals the reply, and a session's second turn reuses its state.
func TestChatOnTinyModel(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a checkpoint")
	}
	dir := t.TempDir()
	if err := synth.Generate(dir, synth.Options{Preset: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	b, err := modelbackend.Open(dir, modelbackend.Options{Revision: "tiny-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := serve(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := c.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	turn := func(msg string) *wire.GenerationResult {
		max := uint64(8)
		s := c.Chat(ctx, wire.ChatArgs{Session: sess, MaxTokens: &max, Messages: []wire.Message{{Role: "user", Content: msg}}})
		var streamed strings.Builder
		for ev, err := range s.Tokens() {
			if err != nil {
				t.Fatal(err)
			}
			streamed.WriteString(ev.Text)
		}
		res, err := s.Result()
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != streamed.String() || res.Revision != "tiny-1" || res.Context == 0 {
			t.Fatalf("result %+v, streamed %q", res, streamed.String())
		}
		return res
	}
	first := turn("hello")
	second := turn("again")
	if first.Usage.CachedTokens != 0 || second.Usage.CachedTokens == 0 || second.Usage.CachedTokens >= second.Usage.PromptTokens {
		t.Fatalf("cached tokens: first %d, second %d of %d", first.Usage.CachedTokens, second.Usage.CachedTokens, second.Usage.PromptTokens)
	}
	// A thinking budget of 3 closes the open <think> block after three
	// reasoning tokens with the published THINK_STOP text.
	budgetMax := uint64(60)
	stream := c.Chat(ctx, wire.ChatArgs{MaxTokens: &budgetMax, Thinking: "on", ThinkingBudget: 3,
		Messages: []wire.Message{{Role: "user", Content: "think briefly"}}})
	var ids []uint32
	for ev, err := range stream.Tokens() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.IDs...)
	}
	res, err := stream.Result()
	if err != nil {
		t.Fatal(err)
	}
	stop, err := c.Tokenize(ctx, chat.ThinkStop)
	if err != nil {
		t.Fatal(err)
	}
	at := indexOf(ids, stop)
	switch {
	case at < 0 && res.FinishReason == wire.FinishStop && len(ids) <= 3:
		t.Skipf("the tiny model ended before its budget: %q", res.Text)
	case at != 3:
		t.Fatalf("THINK_STOP at token %d, want 3 (budget 3): ids %v, text %q", at, ids, res.Text)
	case !strings.Contains(res.Text, chat.ThinkStop):
		t.Fatalf("text lacks THINK_STOP: %q", res.Text)
	}
	// Greedy decoding is deterministic: a fresh stateless request with the
	// same conversation gives the same first answer.
	max := uint64(8)
	again, err := c.Chat(ctx, wire.ChatArgs{MaxTokens: &max, Messages: []wire.Message{{Role: "user", Content: "hello"}}}).Result()
	if err != nil || again.Text != first.Text {
		t.Fatalf("stateless rerun %q, first %q (%v)", again.Text, first.Text, err)
	}
}

func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func indexOf(s, sub []uint32) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if equal(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// Close releases every session's worker goroutines (a daemon that unloads
// on idle and loads again must not leak them).
func TestCloseReleasesSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a checkpoint")
	}
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("sessions run single-threaded with GOMAXPROCS=1: no worker goroutines to release")
	}
	b, err := modelbackend.Open(tinyDir(t), modelbackend.Options{Revision: "tiny-1"})
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	const sessions = 3
	for i := range sessions {
		req := daemon.GenerateRequest{Prompt: []int{1, 2, 3}, MaxTokens: 2, Session: fmt.Sprint("s", i)}
		if _, err := b.Generate(context.Background(), req, func([]int) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	open := runtime.NumGoroutine()
	if open < before+sessions {
		t.Fatalf("%d goroutines with %d sessions open, %d before: sessions hold no workers?", open, sessions, before)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	leakcheck.Goroutines(t, before, "Close")
}

// The stream decoder the daemon streams with shows no text for the stop
// token that ends a turn, and keeps the chat markers the output parser needs.
func TestStreamDecoderHidesStopTokens(t *testing.T) {
	b, err := modelbackend.Open(qwen3Dir(t), modelbackend.Options{TokenizerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	const text = "<think>\nhm\n</think>\n\n<tool_call>\n{}\n</tool_call>"
	ids, _ := b.Tokenize(text + "<|im_end|><|endoftext|>")
	dec := b.NewStreamDecoder()
	var got strings.Builder
	for _, id := range ids {
		got.WriteString(dec.Add(id))
	}
	got.WriteString(dec.Flush())
	if got.String() != text {
		t.Errorf("streamed %q, want %q", got.String(), text)
	}
	if s, _ := b.Detokenize(ids[len(ids)-2:]); s != "<|im_end|><|endoftext|>" {
		t.Errorf("detokenize %q: it still shows every token", s)
	}
}
