package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/residency"
)

// runInBackground starts runDaemon and returns a stop function that cancels
// it (as SIGTERM does) and returns its error.
func runInBackground(t *testing.T, f runFlags) (socket string, stop func() error) {
	t.Helper()
	dir, _ := os.MkdirTemp("", "frun")
	t.Cleanup(func() { os.RemoveAll(dir) })
	f.socket = filepath.Join(dir, "run", "s.sock")
	f.data = filepath.Join(dir, "data")
	f.logLevel = "error"
	f.maxFrame, f.slots, f.perCaller, f.maxQueue, f.frameTimeout = 1<<20, 1, 4, 256, time.Second
	if f.keepAlive == 0 { // the flag's default (0 would unload as soon as idle)
		f.keepAlive = residency.DefaultKeepAlive
	}
	return startDaemon(t, f)
}

// startDaemon runs runDaemon with f until the returned stop is called, and
// returns once the daemon accepts connections: the socket file appears at
// bind, before listen, so a dial is retried until one is accepted.
func startDaemon(t *testing.T, f runFlags) (socket string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runDaemon(ctx, f) }()
	stop = func() error { cancel(); return <-done }
	deadline := time.Now().Add(10 * time.Second)
	for {
		if nc, err := net.Dial("unix", f.socket); err == nil {
			nc.Close()
			return f.socket, stop
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("daemon exited before accepting: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatal("the daemon did not accept a connection within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The daemon listens at once, reports loading then ready, serves the real
// Qwen3 tokenizer, and on stop exits cleanly and removes its socket.
func TestRunServesModelAndStops(t *testing.T) {
	model := tokenizerModel(t)
	sock, stop := runInBackground(t, runFlags{model: model, tokenizerOnly: true, revision: "ref-1"})
	ctx := context.Background()
	c, err := client.Dial(ctx, sock, client.Options{Name: "run-test"})
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for ev, err := range c.Subscribe(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, ev.State)
		if ev.State == wire.StateReady || ev.State == wire.StateUnavailable {
			break
		}
	}
	if states[len(states)-1] != wire.StateReady {
		t.Fatalf("states %v", states)
	}
	ids, err := c.Tokenize(ctx, "hello world")
	if err != nil || len(ids) != 2 || ids[0] != 14990 || ids[1] != 1879 {
		t.Fatalf("tokenize: %v %v", ids, err)
	}
	st, err := c.Status(ctx)
	if err != nil || st.Bundle.Revision != "ref-1" {
		t.Fatalf("status %+v %v", st, err)
	}
	c.Close()
	if err := stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// A repository not installed in the store is unavailable, saying how to
// install it; nothing is served.
func TestRunRepoNotInstalled(t *testing.T) {
	t.Setenv("FORGE_OFFLINE", "1")
	sock, stop := runInBackground(t, runFlags{repo: "anemll/forge"})
	defer stop()
	c, err := client.Dial(context.Background(), sock, client.Options{Name: "run-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Status(context.Background())
	if err != nil || st.State != wire.StateUnavailable || !strings.Contains(st.Reason, "not installed") || !strings.Contains(st.Reason, "pull") {
		t.Fatalf("status %+v %v", st, err)
	}
	if _, err := c.Tokenize(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Fatalf("tokenize: %v", err)
	}
}

func TestRunNeedsSomethingToServe(t *testing.T) {
	err := runDaemon(context.Background(), runFlags{data: t.TempDir(), logLevel: "info"})
	if err == nil || !strings.Contains(err.Error(), "--model DIR or --repo REPO") {
		t.Fatalf("got %v", err)
	}
}

func TestRunDrafterDirNeedsModel(t *testing.T) {
	err := runDaemon(context.Background(), runFlags{repo: "o/n", drafterDir: t.TempDir(), data: t.TempDir(), logLevel: "info"})
	if err == nil || !strings.Contains(err.Error(), "--drafter-dir goes with --model") {
		t.Fatalf("got %v", err)
	}
}
