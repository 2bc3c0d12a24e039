package httpapi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/testbundle"
)

// openaiDir is the Node project pinning the openai package (npm ci there).
var openaiDir = filepath.Join("..", "..", "test", "openai")

// node returns the node binary, or skips saying what is missing.
func node(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the openai package checks need Node.js 20.18 or later")
	}
	if _, err := os.Stat(filepath.Join(openaiDir, "node_modules", "openai", "package.json")); err != nil {
		t.Skipf("the openai package is not installed: run npm ci in %s (.ci/run does)", openaiDir)
	}
	return bin
}

// runNode runs acceptance.mjs with env and fails with its output unless
// every check passed.
func runNode(t *testing.T, bin string, env ...string) string {
	t.Helper()
	cmd := exec.Command(bin, "acceptance.mjs")
	cmd.Dir = openaiDir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ALL PASS") {
		t.Fatalf("openai package checks failed: %v\n%s", err, out)
	}
	return string(out)
}

func tokensFor(t *testing.T, h *harness) (valid, revoked string) {
	t.Helper()
	cl := h.msgpack(t)
	var a, b wire.TokenCreateResult
	if err := cl.Admin(context.Background(), wire.OpTokenCreate, wire.TokenCreateArgs{App: "node-openai"}, &a); err != nil {
		t.Fatal(err)
	}
	if err := cl.Admin(context.Background(), wire.OpTokenCreate, wire.TokenCreateArgs{App: "revoked"}, &b); err != nil {
		t.Fatal(err)
	}
	if err := cl.Admin(context.Background(), wire.OpTokenRevoke, wire.TokenRevokeArgs{ID: b.ID}, nil); err != nil {
		t.Fatal(err)
	}
	return a.Token, b.Token
}

// TestOpenAIPackage runs the official openai npm package against a daemon
// serving the tiny synthetic bundle, over the Unix socket and over loopback
// TCP with a token: models, chat, streamed chat with usage (equal to the
// whole answer under greedy sampling), completions, a tool-call round
// trip, field errors, response_format, context exceeded, and 401 for a
// wrong, revoked or missing token.
func TestOpenAIPackage(t *testing.T) {
	bin := node(t)
	dir := testbundle.Tiny(t, 4)
	b, err := modelbackend.OpenRefBundle(dir, modelbackend.Options{Repo: "forged/tiny", Revision: "abc", Ladder: []int{512}})
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, b, daemon.Config{})
	valid, revoked := tokensFor(t, h)
	out := runNode(t, bin, "FORGED_HTTP_SOCKET="+h.httpSock, "FORGED_HTTP_URL=http://"+h.tcp, "FORGED_TOKEN="+valid, "FORGED_REVOKED="+revoked)
	t.Log(out)
}

// TestOpenAIPackageBusy: with the one slot and the queue taken from the
// msgpack socket, the openai package sees 429 RateLimitError with
// Retry-After on both HTTP listeners.
func TestOpenAIPackageBusy(t *testing.T) {
	bin := node(t)
	h := start(t, fakeengine.New(fakeengine.Options{TokenDelay: time.Millisecond}), daemon.Config{Slots: 1, MaxQueue: 1})
	valid, _ := tokensFor(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := fillSlotAndQueue(t, h, ctx)
	runNode(t, bin, "FORGED_MODE=busy", "FORGED_HTTP_SOCKET="+h.httpSock, "FORGED_HTTP_URL=http://"+h.tcp, "FORGED_TOKEN="+valid)
	cancel()
	<-ended
	<-ended
}
