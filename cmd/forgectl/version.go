package main

import (
	"fmt"

	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/version"
	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date of forgectl",
		Args:  cobra.NoArgs,
	}
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		info := version.Get()
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), info)
		}
		_, err := fmt.Fprintln(cmd.OutOrStdout(), "forgectl", info)
		return err
	}
	return c
}
