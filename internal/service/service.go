// Package service installs forged as an operating-system service: a launchd
// LaunchAgent (default) or LaunchDaemon (--system) on macOS, a systemd user or
// system unit on Linux. It renders the service file itself (so the keys that
// matter — restart on crash only, process type, throttling, logs — are ours),
// and drives launchctl or systemctl through a Runner that tests replace.
//
// Every change is first computed as a Plan (files to write, commands to
// run), which `forged install --print` shows without executing.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/internal/atomicfile"
	"github.com/forgedaemon/forged/internal/paths"
)

// Label is the launchd job label; UnitName the systemd unit.
const (
	Label    = "dev.forged.forged"
	UnitName = "forged.service"
)

// Target is a service manager.
type Target string

const (
	Launchd Target = "launchd"
	Systemd Target = "systemd"
)

// ParseTarget reads "launchd" or "systemd"; "" is the platform's own.
func ParseTarget(s string) (Target, error) {
	switch Target(s) {
	case "":
		if runtime.GOOS == "darwin" {
			return Launchd, nil
		}
		return Systemd, nil
	case Launchd, Systemd:
		return Target(s), nil
	}
	return "", fmt.Errorf("--target: must be launchd or systemd, got %q", s)
}

// Spec is one installation: which manager, which scope, and what to run.
type Spec struct {
	Target     Target
	System     bool   // LaunchDaemon / system unit instead of the user's agent / user unit
	Executable string // absolute path of forged
	ConfigPath string
	Config     *config.Config // written to ConfigPath at install if that file does not exist
	LogDir     string         // launchd only (systemd logs go to the journal)
	Env        map[string]string
	Home       string // the user's home (user scope)
	UID        int    // the user's uid (launchd gui/<uid> domain)
}

// NewSpec fills in the defaults for target and scope for the current user.
// executable "" means this program (with a Homebrew Cellar path replaced by
// the stable opt/ path, which survives upgrades).
func NewSpec(target Target, system bool, executable string) (Spec, error) {
	if executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return Spec{}, fmt.Errorf("cannot find the forged executable (give --executable): %w", err)
		}
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		executable = StableExecutable(exe)
	}
	if !filepath.IsAbs(executable) {
		return Spec{}, fmt.Errorf("--executable: must be an absolute path, got %q", executable)
	}
	home, err := os.UserHomeDir()
	if err != nil && !system {
		return Spec{}, fmt.Errorf("user service needs a home directory: %w", err)
	}
	s := Spec{
		Target: target, System: system, Executable: executable, Home: home, UID: os.Getuid(),
		ConfigPath: targetLayout(target, system, home).Config,
		Config:     config.Default(),
		Env:        map[string]string{},
	}
	l := targetLayout(target, system, home)
	if system {
		// The system service runs as root with root's paths, whoever runs install.
		s.Config.Socket = l.Socket
		s.Config.DataDir = l.Data
	}
	if target == Launchd {
		s.LogDir = l.Logs
	}
	return s, nil
}

// targetLayout is the default layout of the target platform (install
// --print --target systemd on a Mac must show Linux paths); the XDG
// variables count only on Linux itself.
func targetLayout(t Target, system bool, home string) paths.Layout {
	e := paths.Env{System: system, Home: home, UID: os.Getuid(), TempDir: os.TempDir()}
	if t == Launchd {
		return paths.Darwin(e)
	}
	if runtime.GOOS == "linux" {
		e.Getenv = os.Getenv
	}
	return paths.Linux(e)
}

var cellar = regexp.MustCompile(`^(.*)/Cellar/([^/]+)/[^/]+/bin/([^/]+)$`)

// StableExecutable maps a Homebrew Cellar path (which changes with every
// upgrade) to the prefix's opt/ path, which always points at the current one.
func StableExecutable(exe string) string {
	if m := cellar.FindStringSubmatch(exe); m != nil {
		return filepath.Join(m[1], "opt", m[2], "bin", m[3])
	}
	return exe
}

// Args is the command the service manager runs.
func (s Spec) Args() []string {
	return []string{s.Executable, "run", "--config", s.ConfigPath}
}

// Path is where the service file is installed.
func (s Spec) Path() string {
	switch {
	case s.Target == Launchd && s.System:
		return filepath.Join("/Library/LaunchDaemons", Label+".plist")
	case s.Target == Launchd:
		return filepath.Join(s.Home, "Library", "LaunchAgents", Label+".plist")
	case s.System:
		return filepath.Join("/etc/systemd/system", UnitName)
	}
	base := filepath.Join(s.Home, ".config")
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" && runtime.GOOS == "linux" {
		base = d
	}
	return filepath.Join(base, "systemd", "user", UnitName)
}

// Render returns the service file's bytes.
func (s Spec) Render() ([]byte, error) {
	if s.Target == Launchd {
		return renderPlist(s)
	}
	return renderUnit(s)
}

// Step is one action of a Plan: write a file, make a directory, remove a
// path, or run a command.
type Step struct {
	Mkdir         string   `json:"mkdir,omitempty"`
	Write         string   `json:"write,omitempty"`
	Content       []byte   `json:"-"`
	OnlyIfMissing bool     `json:"only_if_missing,omitempty"`
	Remove        string   `json:"remove,omitempty"`
	RemoveAll     string   `json:"remove_all,omitempty"`
	Run           []string `json:"run,omitempty"`
	IgnoreError   bool     `json:"ignore_error,omitempty"` // e.g. stopping what is not running
}

func (st Step) String() string {
	switch {
	case st.Mkdir != "":
		return "mkdir -p " + st.Mkdir
	case st.Write != "" && st.OnlyIfMissing:
		return "write " + st.Write + " (only if missing)"
	case st.Write != "":
		return "write " + st.Write
	case st.Remove != "":
		return "rm -f " + st.Remove
	case st.RemoveAll != "":
		return "rm -rf " + st.RemoveAll
	}
	s := strings.Join(st.Run, " ")
	if st.IgnoreError {
		s += " (failure ignored)"
	}
	return s
}

// Runner runs a command and returns its combined output.
type Runner func(ctx context.Context, argv ...string) (string, error)

// ExecRunner runs commands for real.
func ExecRunner(ctx context.Context, argv ...string) (string, error) {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Manager installs and controls one Spec.
type Manager struct {
	Spec Spec
	Run  Runner    // ExecRunner when nil
	Log  io.Writer // each executed step is reported here when set
}

func (m *Manager) runner() Runner {
	if m.Run != nil {
		return m.Run
	}
	return ExecRunner
}

// Execute carries out a plan in order and stops at the first failure that
// is not ignored.
func (m *Manager) Execute(ctx context.Context, plan []Step) error {
	for _, st := range plan {
		if m.Log != nil {
			fmt.Fprintln(m.Log, st)
		}
		var err error
		switch {
		case st.Mkdir != "":
			err = os.MkdirAll(st.Mkdir, 0o755)
		case st.Write != "":
			err = writeFile(st.Write, st.Content, st.OnlyIfMissing)
		case st.Remove != "":
			if err = os.Remove(st.Remove); errors.Is(err, os.ErrNotExist) {
				err = nil
			}
		case st.RemoveAll != "":
			err = os.RemoveAll(st.RemoveAll)
		case len(st.Run) > 0:
			_, err = m.runner()(ctx, st.Run...)
		}
		if err != nil && !st.IgnoreError {
			return err
		}
	}
	return nil
}

// writeFile writes atomically (temp file, fsync, rename, fsync the directory), so launchd or
// systemd never read half a file.
func writeFile(path string, data []byte, onlyIfMissing bool) error {
	if onlyIfMissing {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}

// InstallPlan writes the config (if missing) and the service file, then
// registers and starts the service.
func (m *Manager) InstallPlan() ([]Step, error) {
	unit, err := m.Spec.Render()
	if err != nil {
		return nil, err
	}
	cfg, err := m.Spec.Config.Marshal()
	if err != nil {
		return nil, err
	}
	plan := []Step{{Write: m.Spec.ConfigPath, Content: cfg, OnlyIfMissing: true}}
	if m.Spec.LogDir != "" {
		plan = append(plan, Step{Mkdir: m.Spec.LogDir})
	}
	plan = append(plan, Step{Write: m.Spec.Path(), Content: unit})
	if m.Spec.Target == Launchd {
		return append(plan, m.launchdInstall()...), nil
	}
	return append(plan, m.systemdInstall()...), nil
}

// UninstallPlan stops and unregisters the service and removes its file;
// purge also removes the data directory (never the config or the logs).
func (m *Manager) UninstallPlan(purge bool) ([]Step, error) {
	var plan []Step
	if m.Spec.Target == Launchd {
		plan = m.launchdUninstall()
	} else {
		plan = m.systemdUninstall()
	}
	if purge {
		dataDir := m.Spec.Config.DataDir
		if c, err := config.Load(m.Spec.ConfigPath); err == nil {
			dataDir = c.DataDir // the one actually in use
		}
		if err := checkPurgeable(dataDir, m.Spec.Home); err != nil {
			return nil, err
		}
		plan = append(plan, Step{RemoveAll: dataDir})
	}
	return plan, nil
}

// storeMarkers are directories every bundle store has (bundle/store.Open).
var storeMarkers = []string{"blobs", "snapshots", "current"}

// checkPurgeable refuses to delete a directory that is not a bundle store:
// data_dir comes from an editable file, and "rm -rf" of a mistyped "/" or
// home directory must not happen.
func checkPurgeable(dir, home string) error {
	clean := filepath.Clean(dir)
	if !filepath.IsAbs(clean) || clean == "/" || clean == filepath.Clean(home) {
		return fmt.Errorf("--purge: refusing to delete %q (data_dir must be a dedicated directory)", dir)
	}
	entries, err := os.ReadDir(clean)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--purge: %w", err)
	}
	for _, m := range storeMarkers {
		if fi, err := os.Stat(filepath.Join(clean, m)); err == nil && fi.IsDir() {
			return nil
		}
	}
	return fmt.Errorf("--purge: %s does not look like a forged data directory (none of %s/ in it); delete it by hand if you mean to", dir, strings.Join(storeMarkers, "/, "))
}

// StartPlan, StopPlan and RestartPlan control an installed service.
func (m *Manager) StartPlan() []Step {
	if m.Spec.Target == Launchd {
		return m.launchdStart()
	}
	return []Step{{Run: m.systemctl("start", UnitName)}}
}

func (m *Manager) StopPlan() []Step {
	if m.Spec.Target == Launchd {
		return m.launchdStop()
	}
	return []Step{{Run: m.systemctl("stop", UnitName)}}
}

func (m *Manager) RestartPlan() []Step {
	if m.Spec.Target == Launchd {
		return []Step{{Run: []string{"launchctl", "kickstart", "-k", m.launchdService()}}}
	}
	return []Step{{Run: m.systemctl("restart", UnitName)}}
}

// Status is what the service manager says about forged.
type Status struct {
	Target    Target `json:"target"`
	Scope     string `json:"scope"` // user or system
	File      string `json:"file"`
	Installed bool   `json:"installed"` // the service file exists
	Loaded    bool   `json:"loaded"`    // the manager knows the job
	Running   bool   `json:"running"`
	PID       int    `json:"pid,omitempty"`
	LastExit  *int   `json:"last_exit,omitempty"`
	State     string `json:"state,omitempty"` // the manager's own word: running, waiting, active, failed…
}

// Status asks the service manager.
func (m *Manager) Status(ctx context.Context) (Status, error) {
	st := Status{Target: m.Spec.Target, Scope: "user", File: m.Spec.Path()}
	if m.Spec.System {
		st.Scope = "system"
	}
	_, err := os.Stat(st.File)
	st.Installed = err == nil
	if m.Run == nil { // the real machine: is its manager the one we would ask?
		if err := CheckManager(m.Spec.Target); err != nil {
			st.State = "unknown: " + err.Error()
			return st, nil
		}
	}
	if m.Spec.Target == Launchd {
		out, err := m.runner()(ctx, "launchctl", "print", m.launchdService())
		if err != nil {
			return st, nil // not loaded: print fails with "Could not find service"
		}
		parseLaunchctlPrint(out, &st)
		return st, nil
	}
	out, err := m.runner()(ctx, m.systemctl("show", UnitName, "--property=LoadState,ActiveState,SubState,MainPID,ExecMainStatus")...)
	if err != nil {
		return st, err
	}
	parseSystemctlShow(out, &st)
	return st, nil
}

// parseKeyValues reads "key=value" (systemctl show) or "key = value"
// (launchctl print) lines.
func parseKeyValues(out string) map[string]string {
	kv := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if _, seen := kv[k]; !seen { // launchctl print nests; the job's own keys come first
			kv[k] = strings.TrimSpace(v)
		}
	}
	return kv
}

func atoiPtr(s string) *int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil
	}
	return &n
}
