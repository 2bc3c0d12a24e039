package main

import (
	"testing"

	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/internal/cli/clitest"
)

// The one in-process forgectl runner every command test uses, and the
// daemons those tests talk to.

// testMachine is the machine pull decides for in tests (pretendHost).
var testMachine = thisMachine()

// runCtl runs forgectl in-process on a freshly built command tree.
func runCtl(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return clitest.Run(t, newRootCmd(testMachine), stdin, args...)
}

func startDaemon(t *testing.T) string { return clitest.StartDaemon(t) }

func serveDaemon(t *testing.T, b daemon.Backend) (string, *daemon.Server) {
	return clitest.ServeDaemon(t, b)
}

func shortDir(t *testing.T) string { return clitest.ShortDir(t) }
