package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/spf13/cobra"
)

func newPsCmd() *cobra.Command {
	return statusCommand("ps", "List the daemon's sessions and queued or running generations", showPs)
}

func showPs(w io.Writer, st *wire.StatusResult, asJSON bool) error {
	if asJSON {
		return cli.WriteJSON(w, struct {
			Sessions []wire.SessionInfo `json:"sessions"`
			Requests []wire.RequestInfo `json:"requests"`
			Memory   wire.Memory        `json:"memory"`
		}{st.Sessions, st.Requests, st.Memory})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tUID\tCLIENT\tTOKENS\tCONTEXT\tSTATE")
	for _, s := range st.Sessions {
		state := "in memory"
		switch {
		case s.Parked:
			state = "parked" // out of the model's memory; resumes without prefill
		case s.Context == 0:
			state = "empty"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\n", s.Session, s.UID, s.Client, s.Tokens, s.Context, state)
	}
	fmt.Fprintln(tw, "\nREQUEST\tUID\tCLIENT\tOP\tSTATE\tGENERATED")
	seen, shared := map[uint64]bool{}, false
	for _, r := range st.Requests {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%d\n", r.ID, r.UID, r.Client, r.Op, r.State, r.Generated)
		shared = shared || seen[r.ID]
		seen[r.ID] = true
	}
	if shared {
		// The status result names no connection (nor a daemon-wide id).
		fmt.Fprintln(tw, "(a REQUEST id is the caller's own, on its connection: the same id on two lines is two connections)")
	}
	fmt.Fprintf(tw, "\nmemory: kv %s, state %s, total %s\n", units.Bytes(st.Memory.KV), units.Bytes(st.Memory.State), units.Bytes(st.Memory.Total))
	return tw.Flush()
}
