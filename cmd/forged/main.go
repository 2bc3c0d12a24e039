// Command forged is the Forge model daemon: it keeps the ANEMLL Forge bundle
// installed and verified, holds the model resident, and serves local apps
// over a Unix socket.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/forgedaemon/forged/internal/version"
	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:           "forged",
	Short:         "The Forge model daemon",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func init() {
	var asJSON bool
	v := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date of forged",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "forged", info)
			return err
		},
	}
	v.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	rootCmd.AddCommand(v)
}

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "forged: %v\n", err)
		os.Exit(1)
	}
}
