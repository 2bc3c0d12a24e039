package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/spf13/cobra"
)

// statusCommand builds a command that shows one view of the daemon's
// status reply (status and ps read the same op).
func statusCommand(use, short string, show func(w io.Writer, st *wire.StatusResult, asJSON bool) error) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
	asJSON := cli.JSONFlag(c)
	socket := cli.SocketFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		cl, err := cli.Dial(cmd.Context(), *socket)
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

func newStatusCmd() *cobra.Command {
	return statusCommand("status", "Show the daemon's state, served bundle, queue and memory", showStatus)
}

func showStatus(w io.Writer, st *wire.StatusResult, asJSON bool) error {
	if asJSON {
		return cli.WriteJSON(w, st)
	}
	fmt.Fprintf(w, "daemon      forged %s (protocol %d), up %s\n", st.Daemon, st.Protocol, time.Duration(st.UptimeMS)*time.Millisecond)
	state := st.State
	if st.Reason != "" {
		state += " (" + st.Reason + ")"
	}
	fmt.Fprintf(w, "state       %s\n", state)
	bundle := st.Bundle.Repo
	if st.Bundle.Revision != "" {
		bundle += " @ " + st.Bundle.Revision
	}
	if st.Bundle.Model != "" {
		bundle += " (model " + st.Bundle.Model + ")"
	} else if st.Bundle.Revision == "" {
		bundle += " (no revision loaded)"
	}
	fmt.Fprintf(w, "bundle      %s\n", bundle)
	showBackend(w, st.Backend)
	parked := 0
	for _, s := range st.Sessions {
		if s.Parked {
			parked++
		}
	}
	sessions := fmt.Sprintf("%d sessions", max(uint64(len(st.Sessions)), st.SessionsTotal))
	if st.SessionsTotal > uint64(len(st.Sessions)) {
		sessions += fmt.Sprintf(" (%d listed)", len(st.Sessions))
	}
	if parked > 0 {
		sessions += fmt.Sprintf(" (%d parked)", parked)
	}
	fmt.Fprintf(w, "clients     %d connected, %s\n", st.Connections, sessions)
	for _, s := range st.Sessions {
		where := fmt.Sprintf("context %d", s.Context)
		if s.Parked {
			where = "parked (its state is out of the model's memory; the next turn resumes it without prefilling)"
		}
		fmt.Fprintf(w, "  session   %s uid %d %s: %d tokens, %s\n", s.Session, s.UID, s.Client, s.Tokens, where)
	}
	fmt.Fprintf(w, "generation  %d running / %d slots, %d queued\n", st.Running, st.Slots, st.Queued)
	if st.Speculation != "" {
		fmt.Fprintf(w, "speculation %s\n", st.Speculation)
	}
	fmt.Fprintf(w, "memory      %s\n", memoryLine(st.Memory, true))
	if st.MemoryEstimate != nil {
		fmt.Fprintf(w, "estimate    %s (the memory model's account)\n", memoryLine(*st.MemoryEstimate, false))
	}
	return nil
}

func memoryLine(m wire.Memory, heap bool) string {
	s := fmt.Sprintf("%s total (weights %s, kv %s, state %s, scratch %s",
		units.Bytes(m.Total), units.Bytes(m.Weights), units.Bytes(m.KV), units.Bytes(m.State), units.Bytes(m.Scratch))
	if heap {
		s += "; go heap " + units.Bytes(m.GoHeap)
	}
	return s + ")"
}

// showBackend prints the backend line: the engine and what describes it
// (Core AI: bridge, compute units, chip, KV format, MPSGraph of the OS, then
// each package's MPSGraph version indented; ref: its kernel level), then
// how it was chosen. Nothing when the daemon names no backend (no model
// loaded yet, or an older daemon).
func showBackend(w io.Writer, b *wire.BackendInfo) {
	if b == nil {
		return
	}
	var parts []string
	add := func(label, v string) {
		if v != "" {
			parts = append(parts, label+v)
		}
	}
	switch b.Name {
	case wire.BackendCoreAI:
		bridge := b.BridgeRelease
		if b.BridgePath != "" {
			bridge += " at " + b.BridgePath
		}
		add("bridge ", strings.TrimSpace(bridge))
		add("compute ", b.ComputeUnits)
		add("chip ", b.Chip)
		add("KV ", b.KV)
		add("OS MPSGraph ", b.OSMPSGraph)
	default:
		add("kernels ", b.Kernels)
		add("numerics ", b.Numerics)
	}
	line := b.Name
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, "; ") + ")"
	}
	fmt.Fprintf(w, "backend     %s\n", line)
	if len(b.PackageMPSGraph) > 0 {
		fmt.Fprintf(w, "            package MPSGraph versions:\n")
		for _, p := range b.PackageMPSGraph {
			fmt.Fprintf(w, "              %s\n", p)
		}
	}
	if b.Why != "" {
		fmt.Fprintf(w, "            why: %s\n", b.Why)
	}
}
