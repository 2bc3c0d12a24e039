package main

import (
	"fmt"
	"io"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

// newResidencyCmds builds load, unload, pin and shutdown.
func newResidencyCmds() []*cobra.Command {
	load := adminCommand("load", "Load the served model now (waits until it is resident)", wire.OpLoad,
		func() any { return nil })

	var force bool
	unload := adminCommand("unload", "Free the served model's memory (busy while generating unless --force)", wire.OpUnload,
		func() any { return wire.UnloadArgs{Force: force} })
	unload.Flags().BoolVar(&force, "force", false, "cancel running generations instead of refusing")

	var off bool
	pin := adminCommand("pin", "Keep the served model loaded however long it is idle (--off: unpin)", wire.OpPin,
		func() any { pinned := !off; return wire.PinArgs{Pinned: &pinned} })
	pin.Flags().BoolVar(&off, "off", false, "unpin: let keep-alive unload it again")

	shutdown := &cobra.Command{Use: "shutdown", Short: "Stop the daemon (it cancels running work and exits)", Args: cobra.NoArgs}
	socket := cli.SocketFlag(shutdown)
	shutdown.RunE = func(cmd *cobra.Command, _ []string) error {
		cl, err := cli.Dial(cmd.Context(), *socket)
		if err != nil {
			return err
		}
		defer cl.Close()
		if err := cl.Shutdown(cmd.Context()); err != nil {
			return err
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "forged at %s is shutting down\n", *socket)
		return err
	}
	return []*cobra.Command{load, unload, pin, shutdown}
}

// adminCommand builds a command that sends one residency op (load,
// unload, pin) with args() (read when it runs, after flag parsing) and
// prints where the model is afterwards.
func adminCommand(use, short, op string, args func() any) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
	socket := cli.SocketFlag(c)
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		cl, err := cli.Dial(cmd.Context(), *socket)
		if err != nil {
			return err
		}
		defer cl.Close()
		var r wire.ResidencyResult
		if err := cl.Admin(cmd.Context(), op, args(), &r); err != nil {
			return err
		}
		return showResidency(cmd.OutOrStdout(), r, *asJSON)
	}
	return c
}

func showResidency(w io.Writer, r wire.ResidencyResult, asJSON bool) error {
	if asJSON {
		return cli.WriteJSON(w, r)
	}
	line := "model " + r.State
	if r.Reason != "" {
		line += " (" + r.Reason + ")"
	}
	if r.Pinned {
		line += ", pinned"
	}
	_, err := fmt.Fprintln(w, line)
	return err
}
