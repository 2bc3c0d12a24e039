package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/internal/cli"
)

// The line editor tells Ctrl-C from Ctrl-D (x/term ends ReadLine with
// io.EOF on both): Ctrl-C is interrupted, cleared when the line had text.
func TestLineEditorCtrlC(t *testing.T) {
	read := lineEditor(strings.NewReader("half a li\x03\x03hello\r\x04"), io.Discard)
	var in interrupted
	if _, err := read(); !errors.As(err, &in) || !in.cleared {
		t.Fatalf("Ctrl-C on a line with text: %v %+v", err, in)
	}
	if _, err := read(); !errors.As(err, &in) || in.cleared {
		t.Fatalf("Ctrl-C on an empty line: %v %+v", err, in)
	}
	if line, err := read(); err != nil || line != "hello" {
		t.Fatalf("after Ctrl-C the line starts afresh: %q %v", line, err)
	}
	if _, err := read(); err != io.EOF {
		t.Fatalf("Ctrl-D: %v", err)
	}
}

// script is a REPL's input: lines, and Ctrl-C (ctrlCEmpty, ctrlCText).
const (
	ctrlCEmpty = "\x00^C"
	ctrlCText  = "\x00^C text"
)

func scriptedREPL(t *testing.T, sock string, maxTokens uint64, interrupt bool, lines ...string) (out, errOut string, sent int, err error) {
	t.Helper()
	cl, err := cli.Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var o, e bytes.Buffer
	r := &repl{cl: cl, base: wire.ChatArgs{MaxTokens: &maxTokens}, out: &o, errOut: &e,
		readLine: func() (string, error) {
			if len(lines) == 0 {
				return "", io.EOF
			}
			l := lines[0]
			lines = lines[1:]
			switch l {
			case ctrlCEmpty:
				return "", interrupted{}
			case ctrlCText:
				return "", interrupted{cleared: true}
			}
			return l, nil
		},
		interrupts: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 1)
			if interrupt {
				ch <- os.Interrupt // Ctrl-C while the answer streams
			}
			sent++
			return ch, func() {}
		}}
	err = r.run(context.Background())
	return o.String(), e.String(), sent, err
}

// /help and the other commands are not sent to the model; an error keeps
// the REPL; /reset and /system start new conversations.
func TestREPLCommandsAndErrors(t *testing.T) {
	sock, _ := serveDaemon(t, fakeengine.New(fakeengine.Options{StopAfter: 3, ContextSize: []int{256}}))
	long := strings.Repeat("many words here ", 40)
	out, errOut, sent, err := scriptedREPL(t, sock, 4, false,
		"/help", "hello", long, "again", "/system be brief", "/system", "/reset", "/nope", "after reset", "/exit", "never read")
	if err != nil {
		t.Fatalf("REPL ended with %v\n%s", err, errOut)
	}
	if sent != 4 { // hello, the long one, again, after reset
		t.Errorf("%d turns sent, want 4 (commands are not sent)", sent)
	}
	for _, want := range []string{"/reset ", "/system TEXT", "context_exceeded", "/reset starts a new one",
		"system prompt: be brief", "new conversation", "unknown command /nope"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Count(out, "\n") != 3 {
		t.Errorf("three answers (hello, again, after reset) around the error: %q\n%s", out, errOut)
	}
}

// Ctrl-C while the model answers stops the answer, not the REPL; at the
// prompt it clears the line; twice at an empty prompt it leaves.
func TestREPLCtrlC(t *testing.T) {
	// An answer that would take a minute: 60000 tokens, 1 ms each.
	sock, _ := serveDaemon(t, fakeengine.New(fakeengine.Options{TokenDelay: time.Millisecond}))
	_, errOut, sent, err := scriptedREPL(t, sock, 60000, true, "a long answer", ctrlCText, ctrlCEmpty, "next", ctrlCEmpty, ctrlCEmpty, "never read")
	if err != nil {
		t.Fatalf("REPL ended with %v\n%s", err, errOut)
	}
	if sent != 2 || strings.Count(errOut, "[stopped]") != 2 {
		t.Errorf("%d turns, stderr:\n%s", sent, errOut)
	}
	if strings.Count(errOut, "Ctrl-C again or Ctrl-D to leave") != 2 {
		t.Errorf("hint after each first Ctrl-C at an empty prompt:\n%s", errOut)
	}
}

// notifyWriter is a buffer that closes seen the first time what it holds
// contains want.
type notifyWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if w.seen != nil && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
		w.seen = nil
	}
	return n, err
}

func (w *notifyWriter) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.buf.String() }

// A turn that waits for the daemon's one generation slot shows "queued
// (position 1)…" (on a terminal, in place) until its answer starts, then
// clears it: a real daemon, another app's generation holding the slot
// until the REPL has shown the note.
func TestREPLShowsQueuedTurn(t *testing.T) {
	sock, _ := serveDaemon(t, fakeengine.New(fakeengine.Options{TokenDelay: time.Millisecond}))
	other, err := cli.Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hold, release := context.WithCancel(context.Background())
	defer release()
	busy := other.Generate(hold, wire.GenerateArgs{IDs: []uint32{1}}, client.MaxTokens(60000))
	for {
		st, err := other.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Running == 1 {
			break
		}
	}
	cl, err := cli.Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	errOut := &notifyWriter{want: "queued (position 1)…", seen: make(chan struct{})}
	seen := errOut.seen
	go func() { <-seen; release() }() // the note is up: free the slot
	var out bytes.Buffer
	lines := []string{"hello"}
	r := &repl{cl: cl, opts: []client.GenOption{client.MaxTokens(4)}, out: &out, errOut: errOut, tty: true,
		readLine: func() (string, error) {
			if len(lines) == 0 {
				return "", io.EOF
			}
			l := lines[0]
			lines = lines[1:]
			return l, nil
		},
		interrupts: func() (<-chan os.Signal, func()) { return make(chan os.Signal), func() {} }}
	if err := r.run(context.Background()); err != nil {
		t.Fatalf("REPL ended with %v\n%s", err, errOut.String())
	}
	busy.Result()
	e := errOut.String()
	note := strings.LastIndex(e, "queued (position 1)…")
	if note < 0 {
		t.Fatalf("no queued note while the slot was busy:\n%q", e)
	}
	if !strings.Contains(e[note:], "\r\x1b[K") {
		t.Errorf("the queued note was not cleared when the answer started:\n%q", e)
	}
	if strings.TrimSpace(out.String()) == "" {
		t.Errorf("no answer after the wait; stderr %q", e)
	}
}
