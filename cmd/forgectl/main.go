// Command forgectl is the admin and developer CLI of the Forge daemon.
//
// Each command group lives in its own file and registers itself with
// addCommand from an init function, so groups never edit each other's files.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:   "forgectl",
	Short: "Administer the Forge model daemon and work with its bundles and models",
	Long: `forgectl talks to forged over its Unix socket, and works directly on bundles,
model checkpoints and exports without the daemon.

Every command that prints something a script may read accepts --json.`,
	SilenceUsage:  true,
	SilenceErrors: true,
}

// addCommand registers a top-level command group.
func addCommand(c *cobra.Command) { rootCmd.AddCommand(c) }

// exitError carries an exit status other than 1 (for example verify's
// "ran, but the bundle failed" status) without printing anything more.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	if err := rootCmd.Execute(); err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		fmt.Fprintf(os.Stderr, "forgectl: %v\n", err)
		os.Exit(code)
	}
}
