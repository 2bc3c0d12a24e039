package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The one in-process forgectl runner every command test uses, and the
// daemons those tests talk to.

// startDaemon serves the fake engine on a fresh socket for one test.
func startDaemon(t *testing.T) string {
	t.Helper()
	path, _ := serveDaemon(t, fakeengine.New(fakeengine.Options{StopAfter: 30}))
	return path
}

// serveDaemon runs a real daemon over b on a fresh socket until the test ends.
func serveDaemon(t *testing.T, b daemon.Backend) (string, *daemon.Server) {
	t.Helper()
	path := filepath.Join(shortDir(t), "s")
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

// runCtl runs forgectl in-process, resetting every flag of the command first
// (cobra keeps flag values between runs).
func runCtl(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	if sub, _, err := rootCmd.Find(args); err == nil {
		resetFlags(sub)
	}
	var out, errOut bytes.Buffer
	rootCmd.SetIn(strings.NewReader(stdin))
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&errOut)
	rootCmd.SetArgs(args)
	err := rootCmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func resetFlags(c *cobra.Command) {
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			sv.Replace(nil)
		} else {
			f.Value.Set(f.DefValue)
		}
		f.Changed = false
	})
}
