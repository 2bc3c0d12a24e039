// Package doctorcmd is forgectl doctor: it checks the machine, the service,
// the socket and the bundle, and says how to fix what is wrong.
package doctorcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/service"
	"github.com/forgedaemon/forged/internal/sysinfo"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/spf13/cobra"
)

// Check statuses.
const (
	checkOK   = "ok"
	checkWarn = "warn"
	checkFail = "fail"
)

// doctorCheck is one line of the doctor's report.
type doctorCheck struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// doctorReport is what --json prints.
type doctorReport struct {
	// Backend is what serves here: the running daemon's backend when one
	// answers, else what the configured backend (auto unless set) would
	// choose for the installed snapshot; coreai, ref, or none.
	Backend string        `json:"backend"`
	Checks  []doctorCheck `json:"checks"`
	OK      int           `json:"ok"`
	Warn    int           `json:"warn"`
	Fail    int           `json:"fail"`
}

// doctor holds what the checks look at; tests replace the machine and the OS.
type doctor struct {
	goos       string
	sys        sysinfo.Source
	configPath string
	cfg        *config.Config // nil when the config file is invalid
	cfgErr     error
	socket     string
	dataDir    string
	repo       string
	repoGiven  bool   // --repo was given: check it even if the daemon serves another
	backend    string // the configured backend: auto, coreai or ref
	service    func(ctx context.Context) (service.Status, error)
	bridges    []string                              // candidate bridge dylib paths, in order (cai.BridgeCandidates)
	probe      func(path string) modelbackend.Bridge // opens a found bridge (modelbackend.ProbeBridge)

	// What earlier checks learned, for the later ones.
	svc      *service.Status    // the service manager's answer (nil: it could not be asked)
	served   *wire.StatusResult // the running daemon's status (nil: none answered)
	bridge   *modelbackend.Bridge
	snapshot string               // the installed snapshot's directory ("" if none)
	choice   *modelbackend.Choice // what the configured backend chooses for it
}

// New builds forgectl doctor.
func New() *cobra.Command {
	var flags struct{ socket, data, config, repo string }
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check this machine, the service, the socket and the bundle; say how to fix what is wrong",
		Long: `doctor checks the OS, the chip and its Neural Engine, memory against what the model needs
(from the published wired-memory figures), the Core AI bridge library (where it was found, whether
it loads, its ABI version), the service (launchd/systemd), the socket and what the daemon answering
there serves, free disk, the bundle's integrity (fast verify), which runtimes the installed
snapshot carries (coreai/, export/), which backend the configured one (auto unless set) would
choose for it and why, and the permissions of the data and socket directories. When a daemon
answers, its bundle is the one checked (unless --repo). Every problem comes with a fix. Exit
status 2 when a check fails.`,
		Args: cobra.NoArgs,
	}
	c.Flags().StringVar(&flags.config, "config", config.DefaultPath(), "forged's config file (socket, data directory, repository, memory reserve)")
	c.Flags().StringVar(&flags.socket, "socket", "", "socket to check (default: from the config file)")
	c.Flags().StringVar(&flags.data, "data", "", "data directory to check (default: from the config file)")
	c.Flags().StringVar(&flags.repo, "repo", "", "bundle repository to verify (default: from the config file)")
	asJSON := cli.JSONFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		d := newDoctor(flags.config)
		if flags.socket != "" {
			d.socket = flags.socket
		}
		if flags.data != "" {
			d.dataDir = flags.data
		}
		if flags.repo != "" {
			d.repo, d.repoGiven = flags.repo, true
		}
		report := d.run(cmd.Context())
		if *asJSON {
			if err := cli.WriteJSON(cmd.OutOrStdout(), report); err != nil {
				return err
			}
		} else {
			printDoctor(cmd.OutOrStdout(), report)
		}
		if report.Fail > 0 {
			return &cli.ExitError{Code: 2, Err: fmt.Errorf("doctor: %d check(s) failed", report.Fail)}
		}
		return nil
	}
	return c
}

// newDoctor reads the config file (keeping its error for the config check)
// and sets up the real machine.
func newDoctor(configPath string) *doctor {
	d := &doctor{goos: runtime.GOOS, sys: sysinfo.Host(), configPath: configPath}
	d.cfg, d.cfgErr = config.Load(configPath)
	base := d.cfg
	if base == nil {
		base = config.Default()
	}
	d.socket, d.dataDir, d.repo, d.backend = base.Socket, base.DataDir, base.Repo, base.Backend
	d.service = cli.ServiceStatus
	d.bridges = cai.BridgeCandidates()
	d.probe = modelbackend.ProbeBridge
	return d
}

// servingBackend is what serves here, for the report's header.
func (d *doctor) servingBackend() string {
	switch {
	case d.served != nil && d.served.Backend != nil:
		return d.served.Backend.Name
	case d.choice != nil:
		return d.choice.Backend
	}
	return "none"
}

func (d *doctor) run(ctx context.Context) doctorReport {
	var r doctorReport
	// The socket check asks the daemon what it serves before the bundle
	// checks look at it.
	for _, check := range []func(context.Context) doctorCheck{
		d.checkConfig, d.checkOS, d.checkChip, d.checkMemory, d.checkBridge,
		d.checkService, d.checkSocket, d.checkDisk, d.checkBundle, d.checkRuntimes,
		d.checkBackend, d.checkPermissions,
	} {
		c := check(ctx)
		r.Checks = append(r.Checks, c)
		switch c.Status {
		case checkOK:
			r.OK++
		case checkWarn:
			r.Warn++
		default:
			r.Fail++
		}
	}
	r.Backend = d.servingBackend()
	return r
}

func printDoctor(w io.Writer, r doctorReport) {
	fmt.Fprintf(w, "forgectl doctor (backend: %s): %d ok, %d warn, %d fail\n", r.Backend, r.OK, r.Warn, r.Fail)
	for _, c := range r.Checks {
		fmt.Fprintf(w, "%-5s %-12s %s\n", strings.ToUpper(c.Status), c.Name, c.Message)
		if c.Fix != "" && c.Status != checkOK {
			fmt.Fprintf(w, "%-5s %-12s fix: %s\n", "", "", c.Fix)
		}
	}
}

func (d *doctor) checkConfig(context.Context) doctorCheck {
	c := doctorCheck{Name: "config", Status: checkOK}
	switch _, statErr := os.Stat(d.configPath); {
	case d.cfgErr != nil:
		c.Status, c.Message = checkFail, d.cfgErr.Error()
		c.Fix = "correct the key named above in " + d.configPath + " (docs/CONFIG.md); a running forged keeps its previous configuration"
	case statErr != nil:
		c.Message = "no config file at " + d.configPath + ": defaults apply"
	default:
		c.Message = d.configPath + " is valid"
	}
	return c
}

func (d *doctor) checkOS(context.Context) doctorCheck {
	c := doctorCheck{Name: "os"}
	o, err := d.sys.OS()
	if err != nil {
		return doctorCheck{Name: "os", Status: checkWarn, Message: "cannot read the OS version: " + err.Error()}
	}
	name := o.Name
	if o.Version != "" && !strings.Contains(name, o.Version) {
		name += " " + o.Version
	}
	desc := fmt.Sprintf("%s (kernel %s, %s)", name, o.Kernel, o.Arch)
	if d.goos != "darwin" {
		c.Status, c.Message = checkOK, desc+": Core AI is macOS-only, the pure-Go reference backend serves here"
		return c
	}
	major, _ := strconv.Atoi(strings.SplitN(o.Version, ".", 2)[0])
	if major < 27 {
		c.Status, c.Message = checkFail, desc+": Core AI needs macOS 27 or later"
		c.Fix = "update macOS (System Settings > General > Software Update)"
		return c
	}
	c.Status, c.Message = checkOK, desc
	return c
}

func (d *doctor) checkChip(context.Context) doctorCheck {
	c := doctorCheck{Name: "chip"}
	chip, err := d.sys.Chip()
	if err != nil {
		return doctorCheck{Name: "chip", Status: checkWarn, Message: "cannot read the chip: " + err.Error()}
	}
	if d.goos != "darwin" {
		c.Status, c.Message = checkOK, chip.Brand+": no Neural Engine; backend: reference (pure Go on the CPU, for development and tests)"
		return c
	}
	gen, err := cai.ParseChip(os.Getenv("COREAI_ARCH"), "", chip.Brand, chip.Model)
	if err != nil {
		c.Status, c.Message = checkWarn, err.Error()
		c.Fix = "set COREAI_ARCH (e.g. h18) to the chip's ANE architecture"
		return c
	}
	desc := fmt.Sprintf("%s (%s), %s, %s", chip.Brand, chip.Model, gen, chip.NeuralEngine)
	mode, err := cai.CompileMode(gen)
	if err != nil {
		c.Status, c.Message = checkFail, desc+": "+err.Error()
		c.Fix = "the published bundle runs on M5 or later; use a newer Mac"
		return c
	}
	c.Status, c.Message = checkOK, fmt.Sprintf("%s; bonded compile mode %d", desc, mode)
	if gen == 17 {
		c.Status = checkWarn
		c.Message += "; the published speeds are for M6 (M5 runs at about half)"
	}
	return c
}

// Published wired memory of the target above idle (Anemll/anemll-forge
// COREAI_PORT_NOTES.md, M6, mode 2), per context entry, and the drafter's share. Read as GiB, the
// larger reading of "GB", so the estimate errs on the safe side.
var (
	wiredByContext = []struct {
		ctx int
		gib float64
	}{{8192, 17.5}, {16384, 18.1}, {32768, 19.0}, {49152, 20.1}, {65536, 21.1}}
	drafterGiB = 1.5
)

// contextFit returns the largest context entry that fits in budget bytes,
// without and with the drafter (0: none fits).
func contextFit(budget uint64) (plain, drafter int) {
	for _, e := range wiredByContext {
		need := uint64(e.gib * (1 << 30))
		if need <= budget {
			plain = e.ctx
		}
		if need+uint64(drafterGiB*(1<<30)) <= budget {
			drafter = e.ctx
		}
	}
	return plain, drafter
}

// recommendedRAM is the Mac the published figures were measured on (sold
// as "32 GB", which is 32 GiB).
const recommendedRAM = 32 << 30

func ctxName(n int) string {
	if n == 0 {
		return "no entry"
	}
	return strconv.Itoa(n/1024) + "K"
}

func (d *doctor) reserve() uint64 {
	if d.cfg != nil {
		return uint64(d.cfg.Memory.Reserve)
	}
	return uint64(config.Default().Memory.Reserve)
}

func (d *doctor) checkMemory(context.Context) doctorCheck {
	c := doctorCheck{Name: "memory"}
	m, err := d.sys.Memory()
	if err != nil {
		return doctorCheck{Name: "memory", Status: checkWarn, Message: "cannot read memory: " + err.Error()}
	}
	reserve := d.reserve()
	budget := m.Budget()
	limit := ""
	if m.CgroupLimit != 0 {
		limit = ", cgroup limit " + units.Bytes(m.CgroupLimit)
	}
	if budget > reserve {
		budget -= reserve
	} else {
		budget = 0
	}
	plain, withDrafter := contextFit(budget)
	c.Message = fmt.Sprintf("%s RAM (%s available%s); after the %s reserve, %s for the model; fits %s with the drafter, %s without",
		units.Bytes(m.Total), units.Bytes(m.Available), limit, units.Bytes(reserve), units.Bytes(budget), ctxName(withDrafter), ctxName(plain))
	if p, err := d.sys.Pressure(); err == nil {
		c.Message += "; memory pressure " + p.Level.String()
	}
	if d.goos != "darwin" {
		c.Message += " (Core AI figures; the reference backend here needs less wired memory)"
	}
	switch {
	case plain == 0:
		c.Status = checkFail
		c.Fix = fmt.Sprintf("the smallest entry (8K) needs %s plus the reserve: %s of RAM is recommended; lower memory.reserve only if this machine runs little else",
			units.Bytes(uint64(wiredByContext[0].gib*(1<<30))), units.Bytes(recommendedRAM))
	case withDrafter < 65536:
		c.Status = checkWarn
		c.Fix = units.Bytes(recommendedRAM) + " of RAM is recommended for 64K with the drafter; longer requests get context_exceeded, and the drafter is dropped first under pressure"
	default:
		c.Status = checkOK
	}
	return c
}

// Published sizes (Anemll/anemll-forge README.md): the paired bundle ~15 GB; the Core
// AI compile cache 11–14 GB per cold compile.
const (
	bundleBytes       uint64 = 15e9
	compileCacheBytes uint64 = 14e9
)

func (d *doctor) installedCommit() string {
	s := &store.Store{Root: d.dataDir}
	st, err := s.Current(d.repo)
	if err != nil {
		return ""
	}
	return st.Commit
}

func (d *doctor) checkDisk(context.Context) doctorCheck {
	c := doctorCheck{Name: "disk"}
	disk, err := d.sys.Disk(d.dataDir)
	if err != nil {
		return doctorCheck{Name: "disk", Status: checkWarn, Message: err.Error()}
	}
	var need uint64
	var parts []string
	if d.installedCommit() == "" {
		need += bundleBytes
		parts = append(parts, "the bundle (~"+units.Bytes(bundleBytes)+")")
	}
	if d.goos == "darwin" {
		need += compileCacheBytes
		parts = append(parts, "the Core AI compile cache (up to "+units.Bytes(compileCacheBytes)+")")
	}
	what := "nothing more (the bundle is installed)"
	if len(parts) > 0 {
		what = strings.Join(parts, " + ")
	}
	c.Message = fmt.Sprintf("%s free on the filesystem of %s; needs %s", units.Bytes(disk.Free), d.dataDir, what)
	switch {
	case disk.Free < need && d.installedCommit() == "" && disk.Free < bundleBytes:
		c.Status = checkFail
		c.Fix = "free space on that disk, or point data_dir (--data) at a disk with room"
	case disk.Free < need:
		c.Status = checkWarn
		c.Fix = "free space: the first load compiles the model into ~/Library/Caches and needs up to " + units.Bytes(compileCacheBytes)
	default:
		c.Status = checkOK
	}
	return c
}

// probeBridge finds the bridge among d.bridges and opens it (once).
func (d *doctor) probeBridge() modelbackend.Bridge {
	if d.bridge != nil {
		return *d.bridge
	}
	var br modelbackend.Bridge
	p, tried, err := cai.FindBridgeIn(d.bridges)
	if err != nil {
		br = modelbackend.Bridge{Tried: tried, Err: err}
	} else {
		br = d.probe(p)
		br.Path, br.Tried = p, tried
	}
	d.bridge = &br
	return br
}

// isStandIn reports whether a bridge's release says it is the Linux
// stand-in (ane/coreai/standin), which computes on the CPU.
func isStandIn(release string) bool { return strings.Contains(release, "stand-in") }

// bridgeNeeded reports whether this machine's configured backend would
// use the Core AI bridge: a Mac (unless ref is forced), or coreai forced.
func (d *doctor) bridgeNeeded() bool {
	return d.backend == wire.BackendCoreAI || d.goos == "darwin" && d.backend != wire.BackendRef
}

func (d *doctor) checkBridge(context.Context) doctorCheck {
	c := doctorCheck{Name: "bridge"}
	br := d.probeBridge()
	needed := d.bridgeNeeded()
	install := "build it with packaging/bridge/build.sh (Xcode 27) and install it beside forged (<bin>/../lib/forged/" + cai.BridgeName + ", docs/COREAI.md) or export " + cai.BridgeEnv + "=PATH"
	if d.goos != "darwin" {
		install = "on " + d.goos + " only the stand-in bridge (ane/coreai/standin, built with cc) runs: point " + cai.BridgeEnv + " at it, or set backend auto"
	}
	switch {
	case br.Path == "":
		c.Message = fmt.Sprintf("%s not found (looked in %s)", cai.BridgeName, strings.Join(br.Tried, ", "))
		if !needed {
			c.Status = checkOK
			c.Message = "not needed: " + capitalized(d.goos) + " serves export/ with the reference engine (" + c.Message + ")"
			return c
		}
		c.Status, c.Fix = checkFail, install
		return c
	case br.Err != nil:
		c.Message = fmt.Sprintf("found %s, but it cannot be used: %v", br.Path, br.Err)
		fix := "install the bridge built with this forged: packaging/bridge/build.sh, then docs/COREAI.md says where it goes"
		if d.goos != "darwin" {
			fix = "point " + cai.BridgeEnv + " at the stand-in bridge built from this tree (ane/coreai/standin), or unset it"
		}
		if !needed {
			c.Status, c.Message, c.Fix = checkWarn, c.Message+"; not needed here: "+capitalized(d.goos)+" serves export/ with the reference engine", fix
			return c
		}
		c.Status, c.Fix = checkFail, fix
		return c
	}
	where := br.Path
	for i, p := range br.Tried {
		if p == br.Path {
			where = fmt.Sprintf("%s (candidate %d of %d", br.Path, i+1, len(d.bridges))
			if i == 0 && os.Getenv(cai.BridgeEnv) == br.Path {
				where += ", $" + cai.BridgeEnv
			}
			where += ")"
		}
	}
	c.Status = checkOK
	c.Message = fmt.Sprintf("found %s; it loads: ABI version %d (this build needs %d), %s", where, cai.ABIVersion, cai.ABIVersion, br.Release)
	if isStandIn(br.Release) {
		c.Message += "; this is the Linux stand-in bridge: it runs the Core AI packages' functions on the CPU (tests), not Core AI or the ANE"
		if d.goos == "darwin" {
			c.Status, c.Fix = checkWarn, install
		} else if !needed {
			c.Message += "; backend auto does not use it on " + d.goos + " (backend coreai would)"
		}
	}
	return c
}

func capitalized(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "macOS"
	}
	return goos
}

// startFix is how to start forged here: through the service manager when
// forged is installed as a service, else in the foreground (no service
// manager, or no service installed).
func (d *doctor) startFix(verb string) string {
	return cli.StartFix(d.svc, d.configPath, verb)
}

func (d *doctor) checkService(ctx context.Context) doctorCheck {
	c := doctorCheck{Name: "service"}
	st, err := d.service(ctx)
	if err != nil {
		return doctorCheck{Name: "service", Status: checkWarn, Message: err.Error(), Fix: "forged status shows what the service manager says"}
	}
	d.svc = &st
	where := fmt.Sprintf("%s %s service (%s)", st.Target, st.Scope, st.File)
	switch {
	case st.Running:
		c.Status, c.Message = checkOK, fmt.Sprintf("%s running, pid %d", where, st.PID)
	case strings.HasPrefix(st.State, "unknown"):
		c.Status, c.Message = checkWarn, strings.TrimPrefix(st.State, "unknown: ")
		c.Fix = "run the daemon in the foreground: forged run --config " + d.configPath
	case st.Loaded:
		c.Status, c.Message = checkWarn, where+" loaded but not running ("+st.State+")"
		if st.LastExit != nil {
			c.Message += fmt.Sprintf(", last exit status %d", *st.LastExit)
		}
		c.Fix = "forged start; if it keeps exiting, read its log (docs/SERVICE.md: Logs)"
	case st.Installed:
		c.Status, c.Message, c.Fix = checkWarn, where+" installed but not loaded", "forged start"
	default:
		c.Status, c.Message = checkWarn, "forged is not installed as a service"
		c.Fix = "forged install (or, with Homebrew, brew services start forged)"
	}
	return c
}

// checkSocket connects to the daemon and asks what it serves (status): a
// daemon whose bundle is unavailable is a warning with its reason, and
// the bundle checks then look at the repository it serves.
func (d *doctor) checkSocket(ctx context.Context) doctorCheck {
	c := doctorCheck{Name: "socket", Status: checkFail}
	fi, err := os.Stat(d.socket)
	switch {
	case errors.Is(err, os.ErrNotExist):
		c.Message = "no socket at " + d.socket + ": forged is not running (or listens elsewhere)"
		c.Fix = d.startFix("start") + "; --socket checks another path"
		return c
	case err != nil:
		c.Message, c.Fix = err.Error(), "check the permissions of "+filepath.Dir(d.socket)
		return c
	case fi.Mode()&os.ModeSocket == 0:
		c.Message = d.socket + " exists but is not a socket (" + fi.Mode().String() + ")"
		c.Fix = "remove it or set socket in the config to another path; forged never replaces it"
		return c
	}
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cl, err := client.Dial(dctx, d.socket, client.Options{Name: "forgectl-doctor"})
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		c.Message = "stale socket at " + d.socket + ": nothing is listening (forged exited without cleaning up)"
		c.Fix = d.startFix("restart") + "; forged removes a stale socket when it starts"
		return c
	case errors.Is(err, syscall.EACCES):
		c.Message = "permission denied connecting to " + d.socket
		c.Fix = "ask the administrator to add you to allowed_users, or use your own agent (forged install)"
		return c
	case err != nil:
		c.Message, c.Fix = err.Error(), d.startFix("restart")+"; if it persists, read the log"
		return c
	}
	defer cl.Close()
	h := cl.Hello()
	st, err := cl.Status(dctx)
	if err != nil {
		c.Status = checkWarn
		c.Message = fmt.Sprintf("%s answers (%s, protocol %d, state %s) but status failed: %v", d.socket, h.Daemon, h.Protocol, h.State, err)
		c.Fix = d.startFix("restart") + "; if it persists, read the log"
		return c
	}
	d.served = st
	if !d.repoGiven && servedFromStore(st.Bundle) {
		d.repo = st.Bundle.Repo
	}
	c.Message = fmt.Sprintf("%s answers: %s, protocol %d, state %s", d.socket, st.Daemon, st.Protocol, st.State)
	if st.Bundle.Repo != "" {
		c.Message += ", bundle " + st.Bundle.Repo
		if st.Bundle.Revision != "" {
			c.Message += fmt.Sprintf("@%.12s", st.Bundle.Revision)
		}
	}
	if st.Backend != nil {
		c.Message += ", backend " + st.Backend.Name
	}
	if st.State == wire.StateUnavailable {
		c.Status = checkWarn
		c.Message += ": it serves nothing"
		if st.Reason != "" {
			c.Message += ": " + st.Reason
		}
		c.Fix = "do what the reason says, then forgectl load (or " + d.startFix("restart") + ")"
		return c
	}
	if st.Reason != "" {
		c.Message += " (" + st.Reason + ")"
	}
	c.Status = checkOK
	return c
}

func (d *doctor) checkBundle(context.Context) doctorCheck {
	c := doctorCheck{Name: "bundle"}
	if _, err := os.Stat(d.dataDir); err != nil {
		c.Status, c.Message = checkWarn, "no data directory at "+d.dataDir+": nothing downloaded yet"
		if d.servesRepo() {
			c.Message += " (the daemon answering serves " + d.repo + ": it may use another data_dir; --data checks that one)"
		}
		c.Fix = fmt.Sprintf("forgectl pull %s --data %q", d.repo, d.dataDir)
		return c
	}
	commit := d.installedCommit()
	if commit == "" {
		c.Status, c.Message = checkWarn, d.repo+" is not installed in "+d.dataDir
		if d.servesRepo() {
			c.Message += " (the daemon answering serves it: it may use another data_dir; --data checks that one)"
		}
		c.Fix = fmt.Sprintf("forgectl pull %s --data %q", d.repo, d.dataDir)
		return c
	}
	report, err := (&store.Store{Root: d.dataDir}).Verify(d.repo, false)
	if err != nil {
		c.Status, c.Message = checkFail, err.Error()
		c.Fix = fmt.Sprintf("forgectl pull %s --data %q", d.repo, d.dataDir)
		return c
	}
	if !report.Passed() {
		c.Status = checkFail
		c.Message = fmt.Sprintf("%s@%.12s: integrity FAIL, %d problem(s); first: %s", d.repo, commit, len(report.Failures), report.Failures[0])
		c.Fix = fmt.Sprintf("forgectl verify --repo %s --full lists them all; forgectl update rollback %s serves the previous revision if it is intact, otherwise pull it again", d.repo, d.repo)
		return c
	}
	c.Status = checkOK
	c.Message = fmt.Sprintf("%s@%.12s: integrity PASS, %d files (fast verify: unchanged files trusted from the install record)", d.repo, commit, report.VerifiedFiles)
	if d.servesRepo() && d.served.Bundle.Revision != "" && d.served.Bundle.Revision != commit {
		c.Message += fmt.Sprintf("; the daemon serves %.12s", d.served.Bundle.Revision)
	}
	return c
}

// servedFromStore reports whether a daemon's bundle comes from a bundle
// store (forged run --repo): its revision is the served commit, or empty
// while none is installed. A checkpoint served with --model reports its
// --revision ("local" by default) and is no repository to check.
func servedFromStore(b wire.Bundle) bool {
	return b.Repo != "" && hub.CheckRepo(b.Repo) == nil && (b.Revision == "" || hub.IsCommit(b.Revision))
}

// servesRepo reports whether the daemon that answered serves d.repo.
func (d *doctor) servesRepo() bool { return d.served != nil && d.served.Bundle.Repo == d.repo }

// pullFix is the pull that installs d.repo with what this machine serves.
func (d *doctor) pullFix() string {
	return fmt.Sprintf("forgectl pull %s --data %q", d.repo, d.dataDir)
}

// installedSnapshot is the served snapshot of d.repo in the data
// directory ("" when none is installed).
func (d *doctor) installedSnapshot() string {
	if d.snapshot == "" && d.installedCommit() != "" {
		if dir, err := (&store.Store{Root: d.dataDir}).ServedDir(d.repo); err == nil {
			d.snapshot = dir
		}
	}
	return d.snapshot
}

// describeContents names what a snapshot carries for the backends.
func describeContents(have modelbackend.Contents) string {
	switch {
	case have.CoreAI && have.Export:
		return "coreai/ (the Core AI packages, for the ANE) and export/ (the quantized layers, for the CPU reference engine)"
	case have.CoreAI:
		return "coreai/ (the Core AI packages, for the ANE) and no export/ (the CPU reference engine's layers)"
	case have.Export:
		return "export/ (the quantized layers, for the CPU reference engine) and no coreai/ (the Core AI packages)"
	}
	return "neither coreai/" + bundle.ManifestFile + " (the Core AI runtime) nor export/" + ref.SmallFile + " (the CPU reference engine's layers)"
}

// checkRuntimes says which runtimes the installed snapshot carries.
func (d *doctor) checkRuntimes(context.Context) doctorCheck {
	c := doctorCheck{Name: "runtimes"}
	dir := d.installedSnapshot()
	if dir == "" {
		c.Status, c.Message, c.Fix = checkWarn, "no installed snapshot of "+d.repo+" in "+d.dataDir+" to look at", d.pullFix()
		return c
	}
	have := modelbackend.SnapshotContents(dir)
	c.Message = fmt.Sprintf("%s@%.12s carries %s", d.repo, filepath.Base(dir), describeContents(have))
	if !have.CoreAI && !have.Export {
		c.Status, c.Fix = checkFail, d.pullFix()+" (again: nothing in it can be served)"
		return c
	}
	c.Status = checkOK
	return c
}

// checkBackend says which backend the configured one (auto unless set)
// chooses for the installed snapshot here and why (modelbackend.Choose,
// as the daemon does), or fails with the reason none can.
func (d *doctor) checkBackend(context.Context) doctorCheck {
	c := doctorCheck{Name: "backend"}
	setting := d.backend
	if setting == "" {
		setting = modelbackend.Auto
	}
	dir := d.installedSnapshot()
	if dir == "" {
		c.Status, c.Message, c.Fix = checkWarn, "backend "+setting+": no installed snapshot of "+d.repo+" to choose for", d.pullFix()
		return c
	}
	have := modelbackend.SnapshotContents(dir)
	choice, err := modelbackend.Choose(setting, d.goos, d.probeBridge(), have)
	if err != nil {
		c.Status = checkFail
		c.Message = fmt.Sprintf("backend %s: nothing on this machine can serve %s@%.12s: %v", setting, d.repo, filepath.Base(dir), err)
		switch {
		case !have.CoreAI && !have.Export, setting == wire.BackendCoreAI && !have.CoreAI:
			c.Fix = d.pullFix()
		case !have.Export && (d.goos != "darwin" || setting == wire.BackendRef):
			c.Fix = d.pullFix() + " --include-export (when the release publishes export/), or serve it on a Mac with the Core AI bridge"
		default:
			c.Fix = "make the bridge load (the bridge check above says how), or " + d.pullFix() + " --include-export to serve it on the CPU"
		}
		return c
	}
	d.choice = &choice
	c.Status = checkOK
	c.Message = fmt.Sprintf("backend %s chooses %s for %s@%.12s: %s", setting, choice.Backend, d.repo, filepath.Base(dir), choice.Why)
	if d.servesRepo() && d.served.Backend != nil {
		if d.served.Backend.Name != choice.Backend {
			c.Status = checkWarn
			c.Message += fmt.Sprintf("; but the running daemon serves it with %s (%s)", d.served.Backend.Name, d.served.Backend.Why)
			c.Fix = "the backend setting applies at start: " + d.startFix("restart")
		} else {
			c.Message += "; the running daemon serves it with " + d.served.Backend.Name
		}
	}
	return c
}

// checkPermissions applies the daemon's own rule to the socket directory
// (it refuses one writable by group or others) and warns about a data
// directory others could write into.
func (d *doctor) checkPermissions(context.Context) doctorCheck {
	c := doctorCheck{Name: "permissions", Status: checkOK}
	var problems, fixes, fine []string
	for _, dir := range []struct {
		path, what string
		fatal      bool
	}{{filepath.Dir(d.socket), "socket directory", true}, {d.dataDir, "data directory", false}} {
		fi, err := os.Stat(dir.path)
		if err != nil {
			fine = append(fine, dir.what+" not created yet")
			continue
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case fi.Mode().Perm()&0o022 != 0:
			problems = append(problems, fmt.Sprintf("%s %s is writable by group or others (%v)", dir.what, dir.path, fi.Mode().Perm()))
			fixes = append(fixes, "chmod go-w "+strconv.Quote(dir.path))
			if dir.fatal {
				c.Status = checkFail
			} else if c.Status == checkOK {
				c.Status = checkWarn
			}
		case st != nil && st.Uid != 0 && int(st.Uid) != os.Geteuid():
			problems = append(problems, fmt.Sprintf("%s %s belongs to uid %d, not you (uid %d) or root", dir.what, dir.path, st.Uid, os.Geteuid()))
			fixes = append(fixes, fmt.Sprintf("sudo chown %d %q", os.Geteuid(), dir.path))
			if dir.fatal {
				c.Status = checkFail
			} else if c.Status == checkOK {
				c.Status = checkWarn
			}
		default:
			fine = append(fine, fmt.Sprintf("%s %s %v", dir.what, dir.path, fi.Mode().Perm()))
		}
	}
	if len(problems) > 0 {
		c.Message, c.Fix = strings.Join(problems, "; "), strings.Join(fixes, "; ")
	} else {
		c.Message = strings.Join(fine, "; ")
	}
	return c
}
