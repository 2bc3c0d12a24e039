// Command forged is the Forge model daemon: it keeps the ANEMLL Forge bundle
// installed and verified, holds the model resident, and serves local apps
// over a Unix socket.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/daemon/httpapi"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/daemon/residency"
	"github.com/forgedaemon/forged/daemon/tokens"
	"github.com/forgedaemon/forged/daemon/updater"
	"github.com/forgedaemon/forged/internal/paths"
	"github.com/forgedaemon/forged/internal/sysinfo"
	"github.com/forgedaemon/forged/internal/version"
	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:           "forged",
	Short:         "The Forge model daemon",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func init() {
	var asJSON bool
	v := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date of forged",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "forged", info)
			return err
		},
	}
	v.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	rootCmd.AddCommand(v)
}

// runFlags are forged run's options.
type runFlags struct {
	config                                                    string
	socket, data, model, repo, revision, adminGroup, logLevel string
	httpSocket, httpListen                                    string // the HTTP API (docs/HTTP.md)
	tokenizerOnly                                             bool
	maxFrame, slots, perCaller, maxQueue                      int
	perUID, sessionsPerConn, sessionsPerUID                   int
	frameTimeout                                              time.Duration
	keepAlive                                                 time.Duration
	memoryReserve                                             string
	drafter                                                   string // config drafter: "off" pulls without the drafter
	drafterDir                                                string // with --model: a DFlash2 drafter directory
	backend                                                   string // auto, coreai or ref (--repo)
	contextMax                                                int    // config context.max: 0 = the whole ladder
	allowedUIDs                                               []uint32
	download                                                  config.Download // the slow-drip rule of downloads
	// changed reports whether a flag was given on the command line (it
	// then wins over the config file); nil: none was.
	changed func(name string) bool
}

func init() {
	var f runFlags
	c := &cobra.Command{
		Use:   "run",
		Short: "Run the daemon in the foreground until SIGINT or SIGTERM",
		Long: `Run the daemon in the foreground: listen on the socket at once, load the model in the
background (state "loading", then "ready" or "unavailable" with the reason), and serve until
SIGINT or SIGTERM, which stop accepting, cancel running requests and exit.

--model DIR serves a Hugging Face qwen3_5 checkpoint directory with the pure-Go reference
engine (tokenizer.json, tokenizer_config.json, config.json and safetensors shards).
--repo REPO serves a published bundle from the bundle store in the data directory (the one
forgectl pull --data DIR fills). --backend picks the engine: coreai runs the snapshot's Core
AI packages through the bridge (macOS; on Linux only with the stand-in bridge named by
FORGE_BRIDGE), ref runs its export/ on the CPU, and auto (the default) chooses Core AI on a
Mac whose bridge loads and the reference engine elsewhere. When nothing here can serve the
snapshot the bundle is state "unavailable" with the reason and the fix. Pulls take export/
only where it will be read (not on a Mac under auto). A repository not installed yet is
state "unavailable" until the admin op pull installs it. The served snapshot is watched: a
change stops serving from it and verifies it in full.

--config FILE reads the config file (docs/CONFIG.md); flags given on the command line win
over it. The file is followed: a valid edit (or SIGHUP, or config.set) applies keep_alive,
limits, admin_group, allowed_users and log_level at once and logs other keys as needing a
restart; an invalid edit is refused with a log line and a state event, and the old
configuration stays in force. The installed services run forged run --config FILE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changed = cmd.Flags().Changed
			return runDaemon(cmd.Context(), f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.config, "config", "", "config file to read and follow (JSON, docs/CONFIG.md)")
	fl.StringVar(&f.socket, "socket", paths.Socket(), "Unix socket path")
	fl.StringVar(&f.httpSocket, "http-socket", "", "the OpenAI-compatible HTTP API's Unix socket (default: "+paths.HTTPSocketFile+" beside --socket; \"off\": none)")
	fl.StringVar(&f.httpListen, "http-listen", "", "also serve the HTTP API on this loopback TCP address (127.0.0.1:PORT); every request then needs a token (forgectl token create)")
	fl.StringVar(&f.data, "data", "", "data directory (bundle store, state); created if missing")
	fl.StringVar(&f.model, "model", "", "serve this checkpoint directory")
	fl.StringVar(&f.repo, "repo", "", "serve this bundle repository from the bundle store in --data")
	fl.StringVar(&f.revision, "revision", "", "with --repo: the revision pull and updates track (default main); with --model: the revision reported (default \"local\")")
	fl.BoolVar(&f.tokenizerOnly, "tokenizer-only", false, "with --model: load only the tokenizer and chat template")
	fl.StringVar(&f.backend, "backend", config.BackendAuto, "with --repo: the engine, auto, coreai or ref (docs/CONFIG.md)")
	fl.StringVar(&f.drafterDir, "drafter-dir", "", "with --model: speculate with this DFlash2 drafter directory if it pairs (default: prompt lookup)")
	fl.StringVar(&f.adminGroup, "admin-group", "", "group (name or gid) whose members may use admin operations")
	fl.IntVar(&f.maxFrame, "max-frame", wire.DefaultLimits.MaxFrame, "largest request frame in bytes")
	fl.DurationVar(&f.frameTimeout, "frame-timeout", 10*time.Second, "a started frame must complete within this")
	fl.IntVar(&f.slots, "slots", 1, "generations run at once")
	fl.IntVar(&f.perCaller, "per-caller", 4, "queued-or-running generations per caller (uid + app name)")
	fl.IntVar(&f.perUID, "per-uid", 16, "queued-or-running generations per uid, over all its app names")
	fl.IntVar(&f.sessionsPerConn, "sessions-per-connection", daemon.DefaultSessionsPerConnection, "open sessions per connection")
	fl.IntVar(&f.sessionsPerUID, "sessions-per-uid", daemon.DefaultSessionsPerUID, "open sessions per uid")
	fl.IntVar(&f.maxQueue, "max-queue", 256, "generations waiting in total before busy")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.DurationVar(&f.keepAlive, "keep-alive", residency.DefaultKeepAlive, "unload the model after this long without a request; 0: as soon as it is idle; negative: never (a file's keep_alive cannot say never: it is 0s or more, docs/CONFIG.md)")
	fl.StringVar(&f.memoryReserve, "memory-reserve", defaultReserve, "memory left to the system and other apps; requests that do not fit in the rest wait")
	c.MarkFlagsMutuallyExclusive("model", "repo")
	rootCmd.AddCommand(c)
}

func runDaemon(ctx context.Context, f runFlags) error {
	var fileCfg *config.Config
	if f.config != "" {
		var err error
		if fileCfg, err = config.Load(f.config); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		if err := f.fillFrom(fileCfg); err != nil {
			return err
		}
	}
	var level slog.LevelVar
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: &level}))
	if f.model == "" && f.repo == "" {
		return errors.New("nothing to serve: give --model DIR or --repo REPO")
	}
	switch f.backend {
	case "", config.BackendAuto, config.BackendCoreAI, config.BackendRef:
	default:
		return fmt.Errorf("--backend %q: want auto, coreai or ref", f.backend)
	}
	if f.model != "" && f.backend == config.BackendCoreAI {
		return errors.New("--backend coreai serves a bundle (--repo); --model is a checkpoint directory for the reference engine")
	}
	if f.drafterDir != "" && f.model == "" {
		return errors.New("--drafter-dir goes with --model (a bundle speculates with its own drafter/)")
	}
	if f.data == "" {
		return errors.New("no data directory: give --data DIR or --config FILE")
	}
	if err := os.MkdirAll(f.data, 0o755); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	toks, err := tokens.Open(filepath.Join(f.data, tokens.FileName))
	if err != nil {
		return err
	}
	ln, err := daemon.Listen(f.socket)
	if err != nil {
		return err
	}
	apis, err := listenHTTP(f)
	if err != nil {
		ln.Close()
		return err
	}
	defer func() {
		for _, l := range apis {
			l.Close()
		}
	}()
	waiting := daemon.Unavailable{Reason: "the model is loading", Bundle: wire.Bundle{Repo: f.repo}}
	dcfg := daemon.Config{
		Limits: wire.Limits{MaxFrame: f.maxFrame}, FrameTimeout: f.frameTimeout, Slots: f.slots,
		PerCaller: f.perCaller, PerUID: f.perUID, MaxQueue: f.maxQueue, AdminGroup: f.adminGroup, AllowedUIDs: f.allowedUIDs,
		Sessions:   daemon.SessionLimits{PerConnection: f.sessionsPerConn, PerUID: f.sessionsPerUID},
		SocketPath: f.socket, Tokens: toks, Logger: log,
	}
	if fileCfg != nil { // the connection limits have no flags: the file's, else the defaults
		l := fileCfg.Limits
		dcfg.HelloTimeout, dcfg.IdleTimeout = l.HelloTimeout.D(), l.IdleTimeout.D()
		dcfg.MaxConns, dcfg.MaxConnsPerUID, dcfg.MaxStreams = l.MaxConns, l.ConnsPerUID, l.StreamsPerConn
		dcfg.HTTPIdleTimeout = fileCfg.HTTP.IdleTimeout.D()
	}
	srv, err := daemon.New(waiting, dcfg)
	if err != nil {
		ln.Close()
		return err
	}
	// Listen first, load after: clients see "loading" instead of a refused connection.
	budget, err := memoryBudget(f.memoryReserve)
	if err != nil {
		ln.Close()
		return err
	}
	var res *daemon.Residency
	update := config.Default().Update
	if fileCfg != nil {
		update = fileCfg.Update
	}
	var policy atomic.Pointer[config.Update]
	policy.Store(&update)
	if f.repo != "" {
		var offline bool
		bandwidth := func() int64 { return int64(policy.Load().Bandwidth) }
		if res, offline, err = serveStore(ctx, srv, f, budget, bandwidth, log); err != nil {
			ln.Close()
			return err
		}
		go srv.RunUpdates(ctx, func() updater.Policy { return daemon.UpdatePolicy(*policy.Load(), offline) }, nil)
	} else {
		res = srv.EnableResidency(daemon.ResidencyOptions{
			Bundle: f.model, KeepAlive: f.keepAlive, Budget: budget,
			Load: func(context.Context) (daemon.Backend, error) {
				return modelbackend.Open(f.model, modelbackend.Options{Revision: f.revision, TokenizerOnly: f.tokenizerOnly,
					Ladder: cappedLadder(f.contextMax), Drafter: f.drafterDir, Log: log})
			},
		})
	}
	if st, _ := res.State(); st == residency.Ready {
		go func() {
			if err := res.Load(ctx, "preloading at start"); err != nil {
				log.Error("preload", "err", err)
			}
		}()
	}
	tick := 10 * time.Second // keep-alive and pressure polling
	if f.keepAlive >= 0 && f.keepAlive/4 < tick {
		tick = max(f.keepAlive/4, 100*time.Millisecond)
	}
	go res.Run(ctx, tick, sysinfo.Host())
	if fileCfg != nil {
		w, err := srv.WatchConfig(ctx, f.config, fileCfg, daemon.ConfigHooks{LogLevel: &level,
			Update: func(u config.Update) { policy.Store(&u) }})
		if err != nil {
			ln.Close()
			return fmt.Errorf("--config: %w", err)
		}
		defer w.Close()
		config.NotifySIGHUP(ctx, w)
	}
	log.Info("forged listening", "socket", f.socket, "version", version.Get().Version, "pid", os.Getpid())
	apiCtx, stopAPI := context.WithCancel(ctx)
	var apiWG sync.WaitGroup
	for _, l := range apis {
		log.Info("HTTP API listening", "addr", l.Addr().String())
		apiWG.Go(func() {
			if err := srv.ServeAPI(apiCtx, l); err != nil {
				log.Error("HTTP API", "addr", l.Addr().String(), "err", err)
			}
		})
	}
	err = srv.Serve(ctx, ln)
	stopAPI()
	apiWG.Wait()
	log.Info("forged stopped")
	return err
}

// listenHTTP opens the HTTP API's listeners: its Unix socket (beside
// --socket unless --http-socket says otherwise or "off") and, with
// --http-listen, a loopback TCP address.
func listenHTTP(f runFlags) ([]net.Listener, error) {
	var out []net.Listener
	if path := config.HTTPSocket(f.httpSocket, f.socket); path != "" {
		ln, err := daemon.Listen(path)
		if err != nil {
			return nil, fmt.Errorf("--http-socket: %w", err)
		}
		out = append(out, ln)
	}
	if f.httpListen != "" {
		ln, err := httpapi.ListenTCP(f.httpListen)
		if err != nil {
			for _, l := range out {
				l.Close()
			}
			return nil, err
		}
		out = append(out, ln)
	}
	return out, nil
}

// serveStore serves --repo from the bundle store in the data directory
// with the backend --backend chooses (modelbackend.OpenSnapshot); the hub is
// $HF_ENDPOINT (or huggingface.co), none at all with FORGE_OFFLINE=1.
func serveStore(ctx context.Context, srv *daemon.Server, f runFlags, budget int64, bandwidth func() int64, log *slog.Logger) (res *daemon.Residency, offline bool, err error) {
	s, err := store.Open(f.data)
	if err != nil {
		return nil, false, fmt.Errorf("--data: %w", err)
	}
	// Automatic updates download through a second view of the same store
	// whose hub client is limited to update.bandwidth_limit.
	bg, err := store.Open(f.data)
	if err != nil {
		return nil, false, fmt.Errorf("--data: %w", err)
	}
	if !store.Offline() {
		s.Client = hub.New(hub.EndpointFromEnv(""), hub.TokenFromEnv())
		bg.Client = hub.New(hub.EndpointFromEnv(""), hub.TokenFromEnv())
		bg.Client.HTTP.Transport = updater.NewLimiter(bandwidth).Transport(bg.Client.HTTP.Transport)
		if f.download.RateWindow > 0 { // from the config file (else hub's defaults, the same)
			s.Client.MinRate, s.Client.RateWindow = int64(f.download.MinRate), f.download.RateWindow.D()
			bg.Client.MinRate, bg.Client.RateWindow = s.Client.MinRate, s.Client.RateWindow
		}
		// Under update.bandwidth_limit each background request gets a share
		// of the limit: the minimum is at most half of that share.
		bg.Client.MinRateFunc = func() int64 {
			if limit := bandwidth(); limit > 0 {
				return min(bg.Client.MinRate, limit/int64(2*max(bg.Workers, 1)*max(bg.Client.Streams, 1)))
			}
			return bg.Client.MinRate
		}
	}
	res, err = srv.ServeStore(ctx, daemon.Bundles{
		Store: s, Background: bg, Repo: f.repo, Revision: f.revision,
		Selection: bundle.Selection{ExportIfPresent: modelbackend.WantsExport(f.backend, runtime.GOOS), Plain: f.drafter == config.DrafterOff},
		KeepAlive: f.keepAlive, Budget: budget,
		Open: func(dir, commit string) (daemon.Backend, error) {
			return modelbackend.OpenSnapshot(dir, modelbackend.Options{Repo: f.repo, Revision: commit, TokenizerOnly: f.tokenizerOnly,
				Ladder: cappedLadder(f.contextMax), Backend: f.backend, SpillDir: filepath.Join(f.data, "spill"), Log: log})
		},
	})
	return res, s.Client == nil, err
}

// fillFrom takes every setting not given as a flag from the config file.
func (f *runFlags) fillFrom(c *config.Config) error {
	given := f.changed
	if given == nil {
		given = func(string) bool { return false }
	}
	str := func(flag string, dst *string, v string) {
		if !given(flag) {
			*dst = v
		}
	}
	num := func(flag string, dst *int, v int) {
		if !given(flag) {
			*dst = v
		}
	}
	str("socket", &f.socket, c.Socket)
	str("http-socket", &f.httpSocket, c.HTTP.Socket)
	str("http-listen", &f.httpListen, c.HTTP.Listen)
	str("data", &f.data, c.DataDir)
	if !given("model") && !given("repo") && f.model == "" && f.repo == "" {
		f.repo, f.revision = c.Repo, c.Revision
	}
	f.drafter, f.contextMax, f.download = c.Drafter, c.Context.Max, c.Download
	str("backend", &f.backend, c.Backend)
	str("admin-group", &f.adminGroup, c.AdminGroup)
	str("log-level", &f.logLevel, c.LogLevel)
	str("memory-reserve", &f.memoryReserve, c.Memory.Reserve.String())
	num("max-frame", &f.maxFrame, c.Limits.MaxFrame)
	num("slots", &f.slots, c.Limits.Slots)
	num("per-caller", &f.perCaller, c.Limits.PerCaller)
	num("per-uid", &f.perUID, c.Limits.PerUID)
	num("sessions-per-connection", &f.sessionsPerConn, c.Limits.SessionsPerConnection)
	num("sessions-per-uid", &f.sessionsPerUID, c.Limits.SessionsPerUID)
	num("max-queue", &f.maxQueue, c.Limits.MaxQueue)
	if !given("keep-alive") {
		f.keepAlive = c.KeepAlive.D()
	}
	live, err := daemon.LiveFrom(c)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	f.allowedUIDs = live.Access.AllowedUIDs
	return nil
}

// cappedLadder is the published context ladder without the entries above
// max (context.max); nil (the default ladder) when max is 0.
func cappedLadder(max int) ane.Ladder {
	if max <= 0 {
		return nil
	}
	var l ane.Ladder
	for _, e := range ane.DefaultLadder {
		if e <= max {
			l = append(l, e)
		}
	}
	if len(l) == 0 {
		l = ane.Ladder{max} // a cap below the smallest entry is itself the only entry
	}
	return l
}

const defaultReserve = "4GiB"

// memoryBudget is the machine's memory (or cgroup limit) minus the reserve.
// An empty reserve takes the default.
func memoryBudget(reserve string) (int64, error) {
	if reserve == "" {
		reserve = defaultReserve
	}
	r, err := config.ParseByteSize(reserve)
	if err != nil {
		return 0, fmt.Errorf("--memory-reserve: %w", err)
	}
	m, err := sysinfo.Host().Memory()
	if err != nil {
		return 0, fmt.Errorf("reading the machine's memory: %w", err)
	}
	b, err := residency.Budget(m.Budget(), uint64(r))
	if err != nil {
		return 0, fmt.Errorf("--memory-reserve: %w", err)
	}
	return b, nil
}

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "forged: %v\n", err)
		os.Exit(1)
	}
}
