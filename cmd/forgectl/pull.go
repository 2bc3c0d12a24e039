package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/spf13/cobra"
)

// newPullCmd builds pull, deciding for machine m.
func newPullCmd(m machine) *cobra.Command {
	c := &cobra.Command{
		Use:   "pull REPO",
		Short: "Download a bundle from the hub, verify every byte and install it",
		Long: `pull resolves --revision (default main) to a commit, reads release.json at
that commit, downloads the selected components into the local store
(resuming partial files, skipping content already stored), verifies the
snapshot and installs it as the served revision. With FORGE_OFFLINE=1 it
only uses what is installed.

What is downloaded follows what this machine can serve: export/ (the
quantized layers the CPU reference engine reads, gigabytes a Mac never
reads) is taken by default when the release has one and the config file's
backend (auto unless set) would read it: everywhere but macOS under auto,
always under ref, never under coreai. --include-export=true or =false
decides instead. The summary says which backend (coreai or ref) can serve
the installed snapshot here, and why; when none can, a warning on stderr
(and "warning" in the --json result) gives the reason and the fix.`,
		Args: cobra.ExactArgs(1),
	}
	var f storeFlags
	var o store.PullOptions
	addDataFlag(c, &f)
	addEndpointFlag(c, &f)
	addSelectionFlags(c, &o, true)
	c.Flags().Lookup("include-export").Usage = "also download export/ (quantized weights for the reference backend); default: when the release has one and the configured backend reads it (not on macOS under backend auto)"
	c.Flags().BoolVar(&o.KeepCurrent, "no-switch", false, "install without serving it (see update apply)")
	configPath := c.Flags().String("config", config.DefaultPath(), "forged's config file: its backend key (auto, coreai, ref) decides whether export/ is needed")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		return runPull(cmd, pullRun{
			flags: &f, repo: args[0], opts: o, asJSON: *asJSON, configPath: *configPath,
			exportGiven: cmd.Flags().Changed("include-export"),
			goos:        m.goos, probe: m.probe,
		})
	}
	return c
}

// machine is the machine forgectl pull decides for (tests pretend to be
// a Mac, with or without a bridge).
type machine struct {
	goos  string
	probe func(path string) modelbackend.Bridge
}

// thisMachine is the machine forgectl runs on.
func thisMachine() machine { return machine{runtime.GOOS, modelbackend.ProbeBridge} }

// pullRun is one forgectl pull; goos and probe are the machine (tests
// replace them).
type pullRun struct {
	flags       *storeFlags
	repo        string
	opts        store.PullOptions
	asJSON      bool
	configPath  string
	exportGiven bool // --include-export was given: it decides
	goos        string
	probe       func(path string) modelbackend.Bridge
}

// pullServing is which backend can serve the installed snapshot here.
type pullServing struct {
	Backend string `json:"backend,omitempty"`     // coreai or ref; "" when none can
	Why     string `json:"backend_why,omitempty"` // Choose's reason
	Warning string `json:"warning,omitempty"`     // why none can, with the fix
}

func runPull(cmd *cobra.Command, p pullRun) error {
	cfg, err := config.Load(p.configPath)
	if err != nil {
		return fmt.Errorf("pull: the config file decides whether export/ is needed (its backend key): %w; fix it, or give --config", err)
	}
	backend := cfg.Backend
	s, err := p.flags.open(true)
	if err != nil {
		return err
	}
	releaseHasExport := true // unknown: assume the release could provide it
	if !p.exportGiven {
		p.opts.IncludeExport, releaseHasExport, err = defaultIncludeExport(cmd.Context(), s, p.repo, p.opts.Revision, backend, p.goos)
		if err != nil {
			return err
		}
	}
	res, err := pullWithProgress(cmd, s, p.repo, p.opts, p.asJSON)
	if err != nil {
		return err
	}
	serving := servedHere(res.Snapshot, backend, p.goos, p.probe)
	if serving.Warning != "" && !releaseHasExport {
		serving.Warning += " (note: this release publishes no export/, so only a Mac with the Core AI bridge can serve it)"
	}
	if serving.Warning != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "forgectl: warning: nothing on this machine can serve %s@%s: %s\n", res.Repo, res.Commit, serving.Warning)
	}
	if p.asJSON {
		return cli.WriteJSONLine(cmd.OutOrStdout(), struct {
			Event  string            `json:"event"`
			Result *store.PullResult `json:"result"`
			pullServing
		}{"result", res, serving})
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), pullSummary(res, serving))
	return err
}

// defaultIncludeExport is --include-export when it is not given: whether
// backend on goos reads export/ (modelbackend.WantsExport) and the release
// has one. Offline nothing new is fetched, so whatever is installed is
// taken as it is. hasExport is false only when release.json was read and
// publishes no export/.
func defaultIncludeExport(ctx context.Context, s *store.Store, repo, revision, backend, goos string) (include, hasExport bool, err error) {
	if !modelbackend.WantsExport(backend, goos) || s.Client == nil {
		return false, true, nil
	}
	if err := hub.CheckRepo(repo); err != nil {
		return false, true, err
	}
	if revision == "" {
		revision = "main"
	}
	commit := revision
	if !hub.IsCommit(revision) {
		if commit, err = s.Client.ResolveRevision(ctx, repo, revision); err != nil {
			return false, true, err
		}
	}
	raw, err := s.Client.FetchSmall(ctx, repo, commit, bundle.ReleaseFile, 64<<20)
	if err != nil {
		return false, true, err
	}
	rel, err := bundle.ParseRelease(raw)
	if err != nil {
		return false, true, fmt.Errorf("%s@%s: %w", repo, commit, err)
	}
	return rel.ExportPath != "", rel.ExportPath != "", nil
}

// servedHere is which backend (the config's setting, on goos) can serve
// the snapshot in dir: modelbackend.Choose over what it carries, probing
// the bridge only where it could be used (the snapshot has coreai/, and
// this is macOS or the backend is forced to coreai).
func servedHere(dir, backend, goos string, probe func(string) modelbackend.Bridge) pullServing {
	have := modelbackend.SnapshotContents(dir)
	var br modelbackend.Bridge
	if have.CoreAI && (goos == "darwin" && backend != wire.BackendRef || backend == wire.BackendCoreAI) {
		br = probe("")
	}
	choice, err := modelbackend.Choose(backend, goos, br, have)
	if err != nil {
		return pullServing{Warning: err.Error()}
	}
	return pullServing{Backend: choice.Backend, Why: choice.Why}
}

// pullSummary is the line a pull prints: what was installed, whether it is
// the served revision, and which backend can serve it here.
func pullSummary(res *store.PullResult, serving pullServing) string {
	how := fmt.Sprintf("downloaded %s in %d files", units.Bytes(res.DownloadedBytes), res.DownloadedFiles)
	switch {
	case res.AlreadyInstalled:
		how = "already installed (checked)"
	case res.Repaired:
		how = fmt.Sprintf("the installed snapshot failed its check and was repaired: downloaded %s in %d files", units.Bytes(res.DownloadedBytes), res.DownloadedFiles)
	}
	var installed string
	switch res.State.Commit {
	case res.Commit:
		installed = "installed as the served revision"
	case "":
		installed = "installed, not served (no revision is served yet: forgectl update apply serves it)"
	default:
		installed = "installed, not served (the served revision stays " + res.State.Commit + ")"
	}
	served := "served here by " + serving.Backend + " (" + serving.Why + ")"
	if serving.Backend == "" {
		served = "nothing on this machine can serve it (see the warning)"
	}
	return fmt.Sprintf("%s@%s: %s (%d files, %s), integrity PASS; %s; %s",
		res.Repo, res.Commit, how, res.Files, units.Bytes(res.Bytes), installed, served)
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
		return cli.WriteJSONLine(cmd.OutOrStdout(), map[string]any{"event": "result", "result": res})
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
			cli.WriteJSONLine(out, e)
		}, func() {}
	case cli.WriterIsTerminal(cmd.ErrOrStderr()):
		bar := newProgressBar(cmd.ErrOrStderr())
		return bar.event, func() { fmt.Fprintln(cmd.ErrOrStderr()) }
	}
	return func(store.Event) {}, func() {}
}
