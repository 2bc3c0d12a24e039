// Command forgectl is the admin and developer CLI of the Forge daemon.
//
// newRootCmd builds the whole command tree, fresh each call: each command
// group has a constructor (in its own file here, or a package under
// internal/cli), so groups never edit each other's files and no flag state
// lives in a global.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/cli/doctorcmd"
	"github.com/forgedaemon/forged/internal/cli/grammarcmd"
	"github.com/forgedaemon/forged/internal/cli/modelcmd"
	"github.com/forgedaemon/forged/internal/cli/rebuildcmd"
	"github.com/forgedaemon/forged/internal/cli/tokencmd"
	"github.com/spf13/cobra"
)

// newRootCmd builds forgectl's command tree; pull decides for machine m.
func newRootCmd(m machine) *cobra.Command {
	root := &cobra.Command{
		Use:   "forgectl",
		Short: "Administer the Forge model daemon and work with its bundles and models",
		Long: `forgectl talks to forged over its Unix socket, and works directly on bundles,
model checkpoints and exports without the daemon.

Every command that prints something a script may read accepts --json.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// The daemon's clients.
	root.AddCommand(newStatusCmd(), newPsCmd(), newChatCmd(), newGenerateCmd(), newConfigCmd())
	root.AddCommand(newResidencyCmds()...)
	// Bundles: the store directly, or through the daemon.
	root.AddCommand(newPullCmd(m), newUpdateCmd(), newVerifyCmd(), newGCCmd(), newBundleCmd())
	// The machine, the model and the rebuild path, without the daemon.
	root.AddCommand(tokencmd.New())
	root.AddCommand(doctorcmd.New(), newCoreAICmd(), newDemoCmd(), rebuildcmd.New(), newVersionCmd())
	root.AddCommand(modelcmd.Commands()...)
	root.AddCommand(grammarcmd.New())
	return root
}

func main() {
	if err := newRootCmd(thisMachine()).Execute(); err != nil {
		code := 1
		var ee *cli.ExitError
		if errors.As(err, &ee) {
			code = ee.Code
		}
		fmt.Fprintf(os.Stderr, "forgectl: %v\n", err)
		os.Exit(code)
	}
}
