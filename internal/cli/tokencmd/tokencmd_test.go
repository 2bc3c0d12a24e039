package tokencmd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/tokens"
	"github.com/forgedaemon/forged/internal/cli/clitest"
)

func serve(t *testing.T, st *tokens.Store) string {
	t.Helper()
	path := filepath.Join(clitest.ShortDir(t), "s")
	ln, err := daemon.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := daemon.New(fakeengine.New(fakeengine.Options{}), daemon.Config{Tokens: st})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(context.Background(), ln); close(done) }()
	t.Cleanup(func() { srv.Shutdown(); <-done })
	return path
}

// TestCreateListRevoke: create prints the token once (and the store then
// recognises it), list shows its id and app but never the token, revoke
// makes the store refuse it, and a second revoke names the unknown id.
func TestCreateListRevoke(t *testing.T) {
	st, err := tokens.Open(filepath.Join(t.TempDir(), tokens.FileName))
	if err != nil {
		t.Fatal(err)
	}
	sock := serve(t, st)
	run := func(args ...string) (string, string, error) {
		return clitest.Run(t, clitest.Root(New()), "", append(args, "--socket", sock)...)
	}
	out, errOut, err := run("token", "create", "--app", "editor")
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(out)
	info, ok := st.Lookup(tok)
	if !ok || info.App != "editor" {
		t.Fatalf("create printed %q, which the store does not know (%+v)", tok, info)
	}
	if !strings.Contains(errOut, info.ID) || !strings.Contains(errOut, "shown only now") {
		t.Errorf("create's note: %q", errOut)
	}
	out, _, err = run("token", "list")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, info.ID) || !strings.Contains(out, "editor") || strings.Contains(out, tok) {
		t.Fatalf("list: %q (want the id and app, never the token)", out)
	}
	if _, _, err := run("token", "create"); err == nil || !strings.Contains(err.Error(), "--app") {
		t.Errorf("create without --app: %v", err)
	}
	if _, _, err := run("token", "create", "--app", "bad name"); err == nil || !strings.Contains(err.Error(), "app") {
		t.Errorf("create with a bad app name: %v", err)
	}
	if _, _, err := run("token", "revoke", info.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Lookup(tok); ok {
		t.Fatal("the token still works after revoke")
	}
	if _, _, err := run("token", "revoke", info.ID); err == nil || !strings.Contains(err.Error(), "not_found") {
		t.Errorf("revoking twice: %v", err)
	}
}

// TestUnavailableWithoutStore: a daemon without a token store says so.
func TestUnavailableWithoutStore(t *testing.T) {
	sock := serve(t, nil)
	_, _, err := clitest.Run(t, clitest.Root(New()), "", "token", "list", "--socket", sock)
	if err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Fatalf("token list on a daemon without tokens: %v", err)
	}
}
