package modelcmd

import (
	"testing"

	"github.com/forgedaemon/forged/internal/cli/clitest"
	"github.com/forgedaemon/forged/internal/cli/rebuildcmd"
)

// runCtl runs the model commands, and rebuild (the drafter test makes its
// drafter with it), on a freshly built tree.
func runCtl(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return clitest.Run(t, clitest.Root(append(Commands(), rebuildcmd.New())...), stdin, args...)
}
