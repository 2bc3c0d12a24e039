package main

import (
	"fmt"

	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/spf13/cobra"
)

func init() {
	c := &cobra.Command{Use: "update", Short: "Check for, apply and roll back bundle updates"}

	check := &cobra.Command{
		Use:   "check REPO",
		Short: "Say whether --revision moved and what an update would download",
		Args:  cobra.ExactArgs(1),
	}
	var cf storeFlags
	var co store.PullOptions
	addDataFlag(check, &cf)
	addEndpointFlag(check, &cf)
	addSelectionFlags(check, &co, false)
	checkJSON := jsonFlag(check)
	check.RunE = func(cmd *cobra.Command, args []string) error {
		s, err := cf.open(true)
		if err != nil {
			return err
		}
		uc, err := s.CheckUpdate(cmd.Context(), args[0], co)
		if err != nil {
			return err
		}
		if *checkJSON {
			return writeJSON(cmd.OutOrStdout(), uc)
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
		Use:   "apply REPO",
		Short: "Download and verify the new revision beside the old one, then switch to it",
		Args:  cobra.ExactArgs(1),
	}
	var af storeFlags
	var ao store.PullOptions
	addDataFlag(apply, &af)
	addEndpointFlag(apply, &af)
	addSelectionFlags(apply, &ao, true)
	applyJSON := jsonFlag(apply)
	apply.RunE = func(cmd *cobra.Command, args []string) error {
		return pullAndReport(cmd, &af, args[0], ao, *applyJSON, func(res *store.PullResult) string {
			return fmt.Sprintf("%s now serves %s (previous %s); downloaded %s",
				res.Repo, res.State.Commit, orNone(res.State.Previous), units.Bytes(res.DownloadedBytes))
		})
	}

	rollback := &cobra.Command{
		Use:   "rollback REPO",
		Short: "Serve the previous revision again",
		Args:  cobra.ExactArgs(1),
	}
	var rf storeFlags
	addDataFlag(rollback, &rf)
	rollbackJSON := jsonFlag(rollback)
	rollback.RunE = func(cmd *cobra.Command, args []string) error {
		s, err := rf.open(false)
		if err != nil {
			return err
		}
		st, err := s.Rollback(args[0])
		if err != nil {
			return err
		}
		if *rollbackJSON {
			return writeJSON(cmd.OutOrStdout(), st)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s now serves %s (previous %s)\n", args[0], st.Commit, st.Previous)
		return nil
	}
	c.AddCommand(check, apply, rollback)
	addCommand(c)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
