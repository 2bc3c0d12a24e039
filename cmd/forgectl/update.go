package main

import (
	"fmt"

	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/spf13/cobra"
)

func newUpdateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "update",
		Short: "Check for, apply and roll back bundle updates",
		Long: `update check, apply and rollback go through the running daemon when one
answers on --socket (REPO may then be left out: it is the served one), so the
switch happens when no generation is running. With --local, any store flag
(--data, --endpoint, --plain, --include-export), or no daemon listening, they
work on the bundle store directly and REPO is required.`,
	}

	check := &cobra.Command{
		Use:   "check [REPO]",
		Short: "Say whether --revision moved and what an update would download",
		Args:  cobra.MaximumNArgs(1),
	}
	var cf storeFlags
	var cd daemonFlags
	var co store.PullOptions
	addDataFlag(check, &cf)
	addEndpointFlag(check, &cf)
	addSelectionFlags(check, &co, false)
	addDaemonFlags(check, &cd)
	checkJSON := cli.JSONFlag(check)
	check.RunE = func(cmd *cobra.Command, args []string) error {
		uc, err := updateCheck(cmd, &cf, &cd, co, args)
		if err != nil {
			return err
		}
		if *checkJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), uc)
		}
		if uc.UpToDate {
			fmt.Fprintf(cmd.OutOrStdout(), "%s is up to date at %s\n", uc.Repo, uc.Latest)
			return nil
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s -> %s, %d changed file(s), %s to download\n",
			uc.Repo, orNone(uc.Current), uc.Latest, len(uc.ChangedFiles), units.Bytes(uc.DownloadBytes))
		for _, p := range uc.ChangedFiles {
			fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", p)
		}
		return nil
	}

	apply := &cobra.Command{
		Use:   "apply [REPO]",
		Short: "Download and verify the new revision beside the old one, then switch to it",
		Args:  cobra.MaximumNArgs(1),
	}
	var af storeFlags
	var ad daemonFlags
	var ao store.PullOptions
	addDataFlag(apply, &af)
	addEndpointFlag(apply, &af)
	addSelectionFlags(apply, &ao, true)
	addDaemonFlags(apply, &ad)
	applyJSON := cli.JSONFlag(apply)
	apply.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := ad.daemon(cmd)
		if err != nil {
			return err
		}
		if cl == nil {
			repo, err := repoArg(args)
			if err != nil {
				return err
			}
			return pullAndReport(cmd, &af, repo, ao, *applyJSON, func(res *store.PullResult) string {
				return fmt.Sprintf("%s now serves %s (previous %s); downloaded %s",
					res.Repo, res.State.Commit, orNone(res.State.Previous), units.Bytes(res.DownloadedBytes))
			})
		}
		defer cl.Close()
		repo, err := servedRepo(cl, ad.socket, cli.OptionalArg(args))
		if err != nil {
			return err
		}
		events, done := progressSink(cmd, *applyJSON)
		res, err := cl.UpdateApply(cmd.Context(), daemonRevision(cmd, ao.Revision), func(e wire.ProgressEvent) {
			events(storeEvent(repo, e))
		})
		done()
		if err != nil {
			return viaDaemon(ad.socket, err)
		}
		if *applyJSON {
			return cli.WriteJSONLine(cmd.OutOrStdout(), map[string]any{"event": "result", "result": res})
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s now serves %s (previous %s); downloaded %s\n",
			res.Repo, res.Serving, orNone(res.Previous), units.Bytes(res.DownloadedBytes))
		return err
	}

	rollback := &cobra.Command{
		Use:   "rollback [REPO]",
		Short: "Serve the previous revision again",
		Args:  cobra.MaximumNArgs(1),
	}
	var rf storeFlags
	var rd daemonFlags
	addDataFlag(rollback, &rf)
	addDaemonFlags(rollback, &rd)
	rollbackJSON := cli.JSONFlag(rollback)
	rollback.RunE = func(cmd *cobra.Command, args []string) error {
		repo, st, err := rollBack(cmd, &rf, &rd, args)
		if err != nil {
			return err
		}
		if *rollbackJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), st)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s now serves %s (previous %s)\n", repo, st.Commit, orNone(st.Previous))
		return nil
	}
	c.AddCommand(check, apply, rollback)
	return c
}

// updateCheck asks the daemon, or the hub through the store directly.
// Both answer in the store's shape, so the output is the same either way.
func updateCheck(cmd *cobra.Command, f *storeFlags, d *daemonFlags, o store.PullOptions, args []string) (*store.UpdateCheck, error) {
	cl, err := d.daemon(cmd)
	if err != nil {
		return nil, err
	}
	if cl == nil {
		repo, err := repoArg(args)
		if err != nil {
			return nil, err
		}
		s, err := f.openExisting(true)
		if err != nil {
			return nil, err
		}
		return s.CheckUpdate(cmd.Context(), repo, o)
	}
	defer cl.Close()
	if _, err := servedRepo(cl, d.socket, cli.OptionalArg(args)); err != nil {
		return nil, err
	}
	var r wire.UpdateCheckResult
	if err := cl.Admin(cmd.Context(), wire.OpUpdateCheck, wire.RevisionArgs{Revision: daemonRevision(cmd, o.Revision)}, &r); err != nil {
		return nil, viaDaemon(d.socket, err)
	}
	return &store.UpdateCheck{Repo: r.Repo, Current: r.Current, Latest: r.Latest, UpToDate: r.UpToDate,
		ChangedFiles: r.ChangedFiles, DownloadBytes: int64(r.DownloadBytes), TotalBytes: int64(r.TotalBytes)}, nil
}

// rollBack serves the previous revision through the daemon or on the store
// directly; both say which revision serves now and which it replaced.
func rollBack(cmd *cobra.Command, f *storeFlags, d *daemonFlags, args []string) (string, store.State, error) {
	cl, err := d.daemon(cmd)
	if err != nil {
		return "", store.State{}, err
	}
	if cl == nil {
		repo, err := repoArg(args)
		if err != nil {
			return "", store.State{}, err
		}
		s, err := f.openExisting(false)
		if err != nil {
			return "", store.State{}, err
		}
		st, err := s.Rollback(repo)
		return repo, st, err
	}
	defer cl.Close()
	repo, err := servedRepo(cl, d.socket, cli.OptionalArg(args))
	if err != nil {
		return "", store.State{}, err
	}
	var r wire.RollbackResult
	if err := cl.Admin(cmd.Context(), wire.OpUpdateRollback, nil, &r); err != nil {
		return "", store.State{}, viaDaemon(d.socket, err)
	}
	return repo, store.State{Commit: r.Revision, Previous: r.Previous}, nil
}

// daemonRevision is --revision for the daemon: "" (the revision it tracks)
// unless given.
func daemonRevision(cmd *cobra.Command, rev string) string {
	if cmd.Flags().Changed("revision") {
		return rev
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// storeEvent is a daemon's progress event in the store's shape, for the
// same progress output as a pull on the store: the daemon's events do not
// name the repository (there is one, the served one), so repo fills it in.
func storeEvent(repo string, e wire.ProgressEvent) store.Event {
	return store.Event{Kind: e.Kind, Repo: repo, Commit: e.Commit, Path: e.Path, Done: e.Done, Total: e.Total, Files: e.Files, Message: e.Message}
}
