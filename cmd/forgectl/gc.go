package main

import (
	"fmt"

	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/spf13/cobra"
)

func newGCCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "gc",
		Short: "Remove snapshots that are neither served nor previous, and blobs nothing links to",
		Args:  cobra.NoArgs,
	}
	var f storeFlags
	var partials bool
	addDataFlag(c, &f)
	c.Flags().BoolVar(&partials, "partials", false, "also delete partial downloads (they would otherwise resume)")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		s, err := f.openExisting(false)
		if err != nil {
			return err
		}
		s.Events = func(e store.Event) {
			if e.Kind == "lock_wait" { // a pull is storing files, or holds a repository
				fmt.Fprintln(cmd.ErrOrStderr(), e.Message)
			}
		}
		res, err := s.GC(partials)
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), res)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "removed %d snapshot(s), %d blob(s), %d partial file(s); freed %s\n",
			len(res.Snapshots), res.Blobs, res.Partials, units.Bytes(res.FreedBytes))
		return nil
	}
	return c
}
