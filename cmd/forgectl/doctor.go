package main

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

	"github.com/forgedaemon/forged/ane/coreai"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/daemon/service"
	"github.com/forgedaemon/forged/internal/sysinfo"
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
	Backend string        `json:"backend"` // coreai (macOS) or reference (elsewhere)
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
	service    func(ctx context.Context) (service.Status, error)
	bridges    []string // candidate bridge dylib paths, in order (coreai.BridgeCandidates)
}

func init() {
	var flags struct{ socket, data, config, repo string }
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check this machine, the service, the socket and the bundle; say how to fix what is wrong",
		Long: `doctor checks the OS, the chip and its Neural Engine, memory against what the model needs
(from the published wired-memory figures), free disk, the Core AI bridge library, the service
(launchd/systemd), the socket, the bundle's integrity (fast verify) and the permissions of the
data and socket directories. Every problem comes with a fix. Exit status 2 when a check fails.`,
		Args: cobra.NoArgs,
	}
	c.Flags().StringVar(&flags.config, "config", config.DefaultPath(), "forged's config file (socket, data directory, repository, memory reserve)")
	c.Flags().StringVar(&flags.socket, "socket", "", "socket to check (default: from the config file)")
	c.Flags().StringVar(&flags.data, "data", "", "data directory to check (default: from the config file)")
	c.Flags().StringVar(&flags.repo, "repo", "", "bundle repository to verify (default: from the config file)")
	asJSON := jsonFlag(c)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		d := newDoctor(flags.config)
		if flags.socket != "" {
			d.socket = flags.socket
		}
		if flags.data != "" {
			d.dataDir = flags.data
		}
		if flags.repo != "" {
			d.repo = flags.repo
		}
		report := d.run(cmd.Context())
		if *asJSON {
			if err := writeJSON(cmd.OutOrStdout(), report); err != nil {
				return err
			}
		} else {
			printDoctor(cmd.OutOrStdout(), report)
		}
		if report.Fail > 0 {
			return &exitError{2, fmt.Errorf("doctor: %d check(s) failed", report.Fail)}
		}
		return nil
	}
	addCommand(c)
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
	d.socket, d.dataDir, d.repo = base.Socket, base.DataDir, base.Repo
	d.service = func(ctx context.Context) (service.Status, error) {
		target, _ := service.ParseTarget("")
		spec, err := service.NewSpec(target, false, "/usr/local/bin/forged")
		if err != nil {
			return service.Status{}, err
		}
		// A system service, when one is installed, is the one that matters.
		if sys, err := service.NewSpec(target, true, "/usr/local/bin/forged"); err == nil {
			if _, err := os.Stat(sys.Path()); err == nil {
				spec = sys
			}
		}
		return (&service.Manager{Spec: spec}).Status(ctx)
	}
	d.bridges = coreai.BridgeCandidates()
	return d
}

func (d *doctor) backend() string {
	if d.goos == "darwin" {
		return "coreai"
	}
	return "reference"
}

func (d *doctor) run(ctx context.Context) doctorReport {
	r := doctorReport{Backend: d.backend()}
	for _, check := range []func(context.Context) doctorCheck{
		d.checkConfig, d.checkOS, d.checkChip, d.checkMemory, d.checkDisk, d.checkBridge,
		d.checkService, d.checkSocket, d.checkBundle, d.checkPermissions,
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
	gen, err := coreai.ParseChip(os.Getenv("COREAI_ARCH"), "", chip.Brand, chip.Model)
	if err != nil {
		c.Status, c.Message = checkWarn, err.Error()
		c.Fix = "set COREAI_ARCH (e.g. h18) to the chip's ANE architecture"
		return c
	}
	desc := fmt.Sprintf("%s (%s), %s, %s", chip.Brand, chip.Model, gen, chip.NeuralEngine)
	mode, err := coreai.CompileMode(gen)
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

// Published wired memory of the target above idle (anemll-forge §5.2, M6,
// mode 2), per context entry, and the drafter's share. Read as GiB, the
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

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

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
		limit = ", cgroup limit " + gib(m.CgroupLimit)
	}
	if budget > reserve {
		budget -= reserve
	} else {
		budget = 0
	}
	plain, withDrafter := contextFit(budget)
	c.Message = fmt.Sprintf("%s RAM (%s available%s); after the %s reserve, %s for the model; fits %s with the drafter, %s without",
		gib(m.Total), gib(m.Available), limit, gib(reserve), gib(budget), ctxName(withDrafter), ctxName(plain))
	if p, err := d.sys.Pressure(); err == nil {
		c.Message += "; memory pressure " + p.Level.String()
	}
	if d.goos != "darwin" {
		c.Message += " (Core AI figures; the reference backend here needs less wired memory)"
	}
	switch {
	case plain == 0:
		c.Status = checkFail
		c.Fix = fmt.Sprintf("the smallest entry (8K) needs %.1f GiB plus the reserve: 32 GB is recommended; lower memory.reserve only if this machine runs little else", wiredByContext[0].gib)
	case withDrafter < 65536:
		c.Status = checkWarn
		c.Fix = "32 GB is recommended for 64K with the drafter; longer requests get context_exceeded, and the drafter is dropped first under pressure"
	default:
		c.Status = checkOK
	}
	return c
}

// Published sizes (anemll-forge §5.1): the paired bundle ~15 GB; the Core
// AI compile cache 11–14 GB per cold compile.
const (
	bundleBytes       = 15e9
	compileCacheBytes = 14e9
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
		parts = append(parts, "the bundle (~15 GB)")
	}
	if d.goos == "darwin" {
		need += compileCacheBytes
		parts = append(parts, "the Core AI compile cache (11-14 GB)")
	}
	what := "nothing more (the bundle is installed)"
	if len(parts) > 0 {
		what = strings.Join(parts, " + ")
	}
	c.Message = fmt.Sprintf("%.1f GB free on the filesystem of %s; needs %s", float64(disk.Free)/1e9, d.dataDir, what)
	switch {
	case disk.Free < need && d.installedCommit() == "" && disk.Free < bundleBytes:
		c.Status = checkFail
		c.Fix = "free space on that disk, or point data_dir (--data) at a disk with room"
	case disk.Free < need:
		c.Status = checkWarn
		c.Fix = "free space: the first load compiles the model into ~/Library/Caches and needs up to 14 GB"
	default:
		c.Status = checkOK
	}
	return c
}

func (d *doctor) checkBridge(context.Context) doctorCheck {
	c := doctorCheck{Name: "bridge"}
	if d.goos != "darwin" {
		c.Status, c.Message = checkOK, "not applicable: reference backend (the Core AI bridge dylib is macOS-only)"
		return c
	}
	p, _, err := coreai.FindBridgeIn(d.bridges)
	if err != nil {
		c.Status, c.Message = checkFail, err.Error()
		c.Fix = "build it with packaging/bridge/build.sh build (Xcode 27), then export " + coreai.BridgeEnv + "=$PWD/build/" + coreai.BridgeName
		return c
	}
	lib, err := coreai.OpenLibrary(p)
	if err != nil {
		c.Status, c.Message = checkFail, err.Error()
		c.Fix = "rebuild the bridge for this forged: packaging/bridge/build.sh build"
		return c
	}
	c.Status = checkOK
	c.Message = fmt.Sprintf("%s: ABI version %d (this build needs %d), %s", p, coreai.ABIVersion, coreai.ABIVersion, lib.Release())
	return c
}

func (d *doctor) checkService(ctx context.Context) doctorCheck {
	c := doctorCheck{Name: "service"}
	st, err := d.service(ctx)
	if err != nil {
		return doctorCheck{Name: "service", Status: checkWarn, Message: err.Error(), Fix: "forged status shows what the service manager says"}
	}
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

func (d *doctor) checkSocket(ctx context.Context) doctorCheck {
	c := doctorCheck{Name: "socket", Status: checkFail}
	fi, err := os.Stat(d.socket)
	switch {
	case errors.Is(err, os.ErrNotExist):
		c.Message = "no socket at " + d.socket + ": forged is not running (or listens elsewhere)"
		c.Fix = "forged start (or forged run --config " + d.configPath + "); --socket checks another path"
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
		c.Fix = "forged restart (forged removes a stale socket when it starts)"
		return c
	case errors.Is(err, syscall.EACCES):
		c.Message = "permission denied connecting to " + d.socket
		c.Fix = "ask the administrator to add you to allowed_users, or use your own agent (forged install)"
		return c
	case err != nil:
		c.Message, c.Fix = err.Error(), "forged restart; if it persists, read the log"
		return c
	}
	defer cl.Close()
	h := cl.Hello()
	c.Status = checkOK
	c.Message = fmt.Sprintf("%s answers: %s, protocol %d, state %s", d.socket, h.Daemon, h.Protocol, h.State)
	if h.Bundle.Repo != "" {
		c.Message += ", bundle " + h.Bundle.Repo
	}
	return c
}

func (d *doctor) checkBundle(context.Context) doctorCheck {
	c := doctorCheck{Name: "bundle"}
	if _, err := os.Stat(d.dataDir); err != nil {
		c.Status, c.Message = checkWarn, "no data directory at "+d.dataDir+": nothing downloaded yet"
		c.Fix = fmt.Sprintf("forgectl pull %s --data %q", d.repo, d.dataDir)
		return c
	}
	commit := d.installedCommit()
	if commit == "" {
		c.Status, c.Message = checkWarn, d.repo+" is not installed in "+d.dataDir
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
