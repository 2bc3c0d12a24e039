package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/spf13/cobra"
)

// socketFlag adds --socket to a command that talks to the daemon.
func socketFlag(c *cobra.Command) *string {
	return c.Flags().String("socket", client.DefaultSocketPath(), "path of forged's Unix socket")
}

// dialDaemon connects as "forgectl".
func dialDaemon(ctx context.Context, socket string) (*client.Client, error) {
	return client.Dial(ctx, socket, client.Options{Name: "forgectl"})
}

// statusCommand builds a command that shows one view of the daemon's
// status reply (status and ps read the same op).
func statusCommand(use, short string, show func(w io.Writer, st *wire.StatusResult, asJSON bool) error) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
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
		return show(cmd.OutOrStdout(), st, *asJSON)
	}
	return c
}

func init() {
	addCommand(statusCommand("status", "Show the daemon's state, served bundle, queue and memory", showStatus))
}

func showStatus(w io.Writer, st *wire.StatusResult, asJSON bool) error {
	if asJSON {
		return writeJSON(w, st)
	}
	fmt.Fprintf(w, "daemon      forged %s (protocol %d), up %s\n", st.Daemon, st.Protocol, time.Duration(st.UptimeMS)*time.Millisecond)
	state := st.State
	if st.Reason != "" {
		state += " (" + st.Reason + ")"
	}
	fmt.Fprintf(w, "state       %s\n", state)
	fmt.Fprintf(w, "bundle      %s @ %s (model %s)\n", st.Bundle.Repo, st.Bundle.Revision, st.Bundle.Model)
	fmt.Fprintf(w, "clients     %d connected, %d sessions\n", st.Connections, len(st.Sessions))
	fmt.Fprintf(w, "generation  %d running / %d slots, %d queued\n", st.Running, st.Slots, st.Queued)
	if st.Speculation != "" {
		fmt.Fprintf(w, "speculation %s\n", st.Speculation)
	}
	m := st.Memory
	fmt.Fprintf(w, "memory      %s total (weights %s, kv %s, state %s, scratch %s; go heap %s)\n",
		units.Bytes(m.Total), units.Bytes(m.Weights), units.Bytes(m.KV), units.Bytes(m.State), units.Bytes(m.Scratch), units.Bytes(m.GoHeap))
	return nil
}
