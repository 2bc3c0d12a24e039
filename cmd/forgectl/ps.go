package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

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
	// REQUEST is the daemon-wide number; ID the caller's own, unique only
	// on its connection (what its cancel names).
	fmt.Fprintln(tw, "\nREQUEST\tID\tUID\tPID\tCLIENT\tOP\tPRIORITY\tSTATE\tAGE\tGENERATED")
	for _, r := range st.Requests {
		pid := "-"
		if r.PID != 0 {
			pid = strconv.Itoa(int(r.PID))
		}
		age := (time.Duration(r.AgeMS) * time.Millisecond).Round(100 * time.Millisecond)
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", r.Seq, r.ID, r.UID, pid, r.Client, r.Op, r.Priority, r.State, age, r.Generated)
	}
	fmt.Fprintf(tw, "\nmemory: kv %s, state %s, total %s\n", units.Bytes(st.Memory.KV), units.Bytes(st.Memory.State), units.Bytes(st.Memory.Total))
	return tw.Flush()
}
