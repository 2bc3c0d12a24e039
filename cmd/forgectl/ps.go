package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/spf13/cobra"
)

func init() {
	c := &cobra.Command{
		Use:   "ps",
		Short: "List the daemon's sessions and queued or running generations",
		Args:  cobra.NoArgs,
	}
	asJSON := jsonFlag(c)
	socket := socketFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		cl, err := dialDaemon(cmd.Context(), *socket)
		if err != nil {
			return err
		}
		defer cl.Close()
		st, err := cl.Status(cmd.Context())
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(cmd.OutOrStdout(), struct {
				Sessions []wire.SessionInfo `json:"sessions"`
				Requests []wire.RequestInfo `json:"requests"`
				Memory   wire.Memory        `json:"memory"`
			}{st.Sessions, st.Requests, st.Memory})
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tUID\tCLIENT\tTOKENS\tCONTEXT")
		for _, s := range st.Sessions {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\n", s.Session, s.UID, s.Client, s.Tokens, s.Context)
		}
		fmt.Fprintln(tw, "\nREQUEST\tUID\tCLIENT\tOP\tSTATE\tGENERATED")
		for _, r := range st.Requests {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%d\n", r.ID, r.UID, r.Client, r.Op, r.State, r.Generated)
		}
		fmt.Fprintf(tw, "\nmemory: kv %s, state %s, total %s\n", units.Bytes(st.Memory.KV), units.Bytes(st.Memory.State), units.Bytes(st.Memory.Total))
		return tw.Flush()
	}
	addCommand(c)
}
