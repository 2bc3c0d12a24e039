// Package clitest runs forgectl commands in-process for tests, and serves
// the daemons those tests talk to.
package clitest

import (
	"bytes"
	"context"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/internal/synthbundle"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/spf13/cobra"
)

// Run executes root (a freshly built command tree, so no flag state is
// carried over) with args and stdin, returning stdout and stderr.
func Run(t *testing.T, root *cobra.Command, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	root.SilenceUsage, root.SilenceErrors = true, true
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// Root is a bare root command holding cmds, for a package's own tests.
func Root(cmds ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{Use: "forgectl"}
	root.AddCommand(cmds...)
	return root
}

// ShortDir is a temporary directory with a path short enough for sun_path.
func ShortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dr")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// StartDaemon serves the fake engine on a fresh socket for one test.
func StartDaemon(t *testing.T) string {
	t.Helper()
	path, _ := ServeDaemon(t, fakeengine.New(fakeengine.Options{StopAfter: 30}))
	return path
}

// ServeDaemon runs a real daemon over b on a fresh socket until the test ends.
func ServeDaemon(t *testing.T, b daemon.Backend) (string, *daemon.Server) {
	t.Helper()
	path := filepath.Join(ShortDir(t), "s")
	ln, err := daemon.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := daemon.New(b, daemon.Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(context.Background(), ln); close(done) }()
	t.Cleanup(func() { srv.Shutdown(); <-done })
	return path, srv
}

// PublishBundle publishes a synthetic bundle as repo: withExport adds
// export/ with the file the reference engine opens (small.safetensors,
// which modelbackend.SnapshotContents looks for), inventoried in
// release.json.
func PublishBundle(t *testing.T, h *hubtest.Hub, repo string, withExport bool, seed uint64) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	if _, err := synthbundle.Generate(src, synthbundle.Options{Seed: seed, Export: withExport}); err != nil {
		t.Fatal(err)
	}
	if withExport {
		if err := os.WriteFile(filepath.Join(src, "export", ref.SmallFile), []byte("synthetic small layers"), 0o644); err != nil {
			t.Fatal(err)
		}
		rel, err := bundle.LoadRelease(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := bundle.BuildInventory(src, rel); err != nil {
			t.Fatal(err)
		}
		if err := rel.Write(src); err != nil {
			t.Fatal(err)
		}
	}
	commit, err := h.Publish(repo, src, "main")
	if err != nil {
		t.Fatal(err)
	}
	return commit
}
