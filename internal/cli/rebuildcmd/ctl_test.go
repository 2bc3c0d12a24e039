package rebuildcmd

import (
	"testing"

	"github.com/forgedaemon/forged/internal/cli/clitest"
)

func runCtl(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return clitest.Run(t, clitest.Root(New()), stdin, args...)
}
