package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/forgedaemon/forged/internal/service"
	"github.com/spf13/cobra"
)

// Service lifecycle commands: install, uninstall, start, stop, restart, status.
// The logic is in internal/service; these only parse flags and print.

func init() {
	for _, c := range serviceCommands() {
		rootCmd.AddCommand(c)
	}
}

// serviceFlags are shared by every service command.
type serviceFlags struct {
	system     bool
	target     string
	print      bool
	asJSON     bool
	executable string
	config     string
	env        []string
	purge      bool
}

func (f *serviceFlags) common(c *cobra.Command, withPrint bool) {
	c.Flags().BoolVar(&f.system, "system", false, "the system service (LaunchDaemon / system unit, needs root) instead of your user agent")
	c.Flags().StringVar(&f.target, "target", "", "service manager: launchd or systemd (default: this platform's)")
	if withPrint {
		c.Flags().BoolVar(&f.print, "print", false, "print what would be done (and the service file) and change nothing")
	}
	c.Flags().BoolVar(&f.asJSON, "json", false, "print machine-readable JSON")
}

// manager builds the Manager for the flags; live means it will really run.
func (f *serviceFlags) manager(live bool, log io.Writer) (*service.Manager, error) {
	target, err := service.ParseTarget(f.target)
	if err != nil {
		return nil, err
	}
	spec, err := service.NewSpec(target, f.system, f.executable)
	if err != nil {
		return nil, err
	}
	if f.config != "" {
		spec.ConfigPath = f.config
	}
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env: want KEY=VALUE, got %q", kv)
		}
		spec.Env[k] = v
	}
	if live {
		if err := service.CheckManager(target); err != nil {
			return nil, err
		}
		if f.system && os.Geteuid() != 0 {
			return nil, errors.New("--system changes the system service: run with sudo")
		}
		if !f.system && os.Geteuid() == 0 {
			return nil, errors.New("the user agent belongs to a user: run without sudo, or give --system for the system service")
		}
	}
	return &service.Manager{Spec: spec, Log: log}, nil
}

// planJSON is what --print --json writes.
type planJSON struct {
	Target  service.Target `json:"target"`
	System  bool           `json:"system"`
	File    string         `json:"file,omitempty"`
	Content string         `json:"content,omitempty"`
	Config  string         `json:"config_file,omitempty"`
	Steps   []string       `json:"steps"`
}

// runPlan prints or executes a plan.
func runPlan(cmd *cobra.Command, f *serviceFlags, build func(*service.Manager) ([]service.Step, error), showFile bool) error {
	m, err := f.manager(!f.print, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	plan, err := build(m)
	if err != nil {
		return err
	}
	if !f.print {
		return m.Execute(cmd.Context(), plan)
	}
	out := planJSON{Target: m.Spec.Target, System: m.Spec.System}
	for _, st := range plan {
		out.Steps = append(out.Steps, st.String())
	}
	var content []byte
	if showFile {
		if content, err = m.Spec.Render(); err != nil {
			return err
		}
		out.File, out.Content, out.Config = m.Spec.Path(), string(content), m.Spec.ConfigPath
	}
	if f.asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	// The file itself goes to stdout (so it can be piped to plutil or
	// systemd-analyze); the plan to stderr.
	for _, s := range out.Steps {
		fmt.Fprintln(cmd.ErrOrStderr(), "would:", s)
	}
	if showFile {
		_, err = cmd.OutOrStdout().Write(content)
	}
	return err
}

func serviceCommands() []*cobra.Command {
	var inst, uninst, start, stop, restart, status serviceFlags

	installCmd := &cobra.Command{
		Use:   "install",
		Short: "Install forged as a service (launchd LaunchAgent by default; systemd on Linux) and start it",
		Long: `install writes the config file (only if it does not exist), the launchd property list or
systemd unit, then registers and starts the service (launchctl bootstrap / systemctl enable --now).
Installing again replaces the service file and restarts the service. --print shows what it would
write and run and changes nothing, on any platform.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlan(cmd, &inst, func(m *service.Manager) ([]service.Step, error) { return m.InstallPlan() }, true)
		},
	}
	inst.common(installCmd, true)
	installCmd.Flags().StringVar(&inst.executable, "executable", "", "forged binary the service runs (default: this one; Homebrew Cellar paths become opt/ paths)")
	installCmd.Flags().StringVar(&inst.config, "config", "", "config file the service reads (default: the scope's standard path)")
	installCmd.Flags().StringArrayVar(&inst.env, "env", nil, "KEY=VALUE environment for the service (repeatable)")

	uninstallCmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and remove the service; --purge also deletes the data directory",
		Long: `uninstall stops the service, unregisters it and removes its service file. The data
directory (downloaded bundles) and the config file are kept unless --purge, which deletes the
data directory named by the config file. Logs are never removed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlan(cmd, &uninst, func(m *service.Manager) ([]service.Step, error) { return m.UninstallPlan(uninst.purge) }, false)
		},
	}
	uninst.common(uninstallCmd, true)
	uninstallCmd.Flags().BoolVar(&uninst.purge, "purge", false, "also delete the data directory (bundles, state)")

	control := func(use, short string, f *serviceFlags, plan func(*service.Manager) []service.Step) *cobra.Command {
		c := &cobra.Command{
			Use: use, Short: short, Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runPlan(cmd, f, func(m *service.Manager) ([]service.Step, error) { return plan(m), nil }, false)
			},
		}
		f.common(c, true)
		return c
	}
	startCmd := control("start", "Start the installed service", &start, (*service.Manager).StartPlan)
	stopCmd := control("stop", "Stop the service (it stays installed and starts again at login or boot)", &stop, (*service.Manager).StopPlan)
	restartCmd := control("restart", "Restart the service (launchctl kickstart -k / systemctl restart)", &restart, (*service.Manager).RestartPlan)

	statusCmd := &cobra.Command{
		Use:   "status",
		Short: "Ask the service manager whether forged is installed and running",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := status.manager(false, nil)
			if err != nil {
				return err
			}
			st, err := m.Status(cmd.Context())
			if err != nil {
				return err
			}
			if status.asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s %s service, file %s (installed: %v)\n", st.Target, st.Scope, st.File, st.Installed)
			switch {
			case st.Running:
				fmt.Fprintf(w, "running, pid %d (%s)\n", st.PID, st.State)
			case st.Loaded:
				fmt.Fprintf(w, "loaded, not running (%s)", st.State)
				if st.LastExit != nil {
					fmt.Fprintf(w, ", last exit status %d", *st.LastExit)
				}
				fmt.Fprintln(w)
			case st.State != "":
				fmt.Fprintln(w, st.State)
			default:
				fmt.Fprintln(w, "not loaded")
			}
			return nil
		},
	}
	status.common(statusCmd, false)
	return []*cobra.Command{installCmd, uninstallCmd, startCmd, stopCmd, restartCmd, statusCmd}
}
