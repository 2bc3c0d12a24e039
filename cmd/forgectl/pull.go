package main

import (
	"fmt"
	"time"

	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/spf13/cobra"
)

func init() {
	c := &cobra.Command{
		Use:   "pull REPO",
		Short: "Download a bundle from the hub, verify every byte and install it",
		Long: `pull resolves --revision (default main) to a commit, reads release.json at
that commit, downloads the selected components into the local store
(resuming partial files, skipping content already stored), verifies the
snapshot and serves it. With FORGE_OFFLINE=1 it only uses what is installed.`,
		Args: cobra.ExactArgs(1),
	}
	var f storeFlags
	var o store.PullOptions
	addDataFlag(c, &f)
	addEndpointFlag(c, &f)
	addSelectionFlags(c, &o, true)
	c.Flags().BoolVar(&o.KeepCurrent, "no-switch", false, "install without serving it (see update apply)")
	asJSON := jsonFlag(c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		return pullAndReport(cmd, &f, args[0], o, *asJSON, func(res *store.PullResult) string {
			how := fmt.Sprintf("downloaded %s in %d files", units.Bytes(res.DownloadedBytes), res.DownloadedFiles)
			if res.AlreadyInstalled {
				how = "already installed"
			}
			return fmt.Sprintf("%s@%s: %s (%d files, %s), integrity PASS; serving %s",
				res.Repo, res.Commit, how, res.Files, units.Bytes(res.Bytes), res.State.Commit)
		})
	}
	addCommand(c)
}

// addSelectionFlags adds what to fetch: --revision, --plain and, when
// downloading, --include-export (pull, update check, update apply).
func addSelectionFlags(c *cobra.Command, o *store.PullOptions, download bool) {
	c.Flags().StringVar(&o.Revision, "revision", "main", "branch, tag or commit")
	c.Flags().BoolVar(&o.Plain, "plain", false, "leave out the drafter (no speculative decoding)")
	if download {
		c.Flags().BoolVar(&o.IncludeExport, "include-export", false, "also download export/ (quantized weights for the reference backend)")
	}
}

// pullAndReport opens the store, pulls with progress and prints the result:
// a final {"event":"result"} JSON line, or the summary line.
func pullAndReport(cmd *cobra.Command, f *storeFlags, repo string, o store.PullOptions, asJSON bool, summary func(*store.PullResult) string) error {
	s, err := f.open(true)
	if err != nil {
		return err
	}
	res, err := pullWithProgress(cmd, s, repo, o, asJSON)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSONLine(cmd.OutOrStdout(), map[string]any{"event": "result", "result": res})
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), summary(res))
	return err
}

// pullWithProgress runs a pull, reporting progress as JSON lines
// (--json), a live bar (terminal) or nothing.
func pullWithProgress(cmd *cobra.Command, s *store.Store, repo string, o store.PullOptions, asJSON bool) (*store.PullResult, error) {
	events, done := progressSink(cmd, asJSON)
	defer done()
	s.Events = events
	return s.Pull(cmd.Context(), repo, o)
}

// progressSink shows download events as JSON lines (--json; progress at
// most every 200 ms), a live bar on a terminal, or not at all; done ends
// the bar's line.
func progressSink(cmd *cobra.Command, asJSON bool) (events func(store.Event), done func()) {
	switch {
	case asJSON:
		var last time.Time
		out := cmd.OutOrStdout()
		return func(e store.Event) {
			if e.Kind == "progress" && time.Since(last) < 200*time.Millisecond && e.Done != e.Total {
				return
			}
			last = time.Now()
			writeJSONLine(out, e)
		}, func() {}
	case writerIsTerminal(cmd.ErrOrStderr()):
		bar := newProgressBar(cmd.ErrOrStderr())
		return bar.event, func() { fmt.Fprintln(cmd.ErrOrStderr()) }
	}
	return func(store.Event) {}, func() {}
}
