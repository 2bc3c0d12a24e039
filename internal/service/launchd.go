package service

import (
	"path/filepath"
	"strconv"
	"strings"

	"howett.net/plist"
)

// launchd job settings, and why:
const (
	// ProcessType Interactive: forged answers apps over a Unix socket, not
	// XPC, so launchd cannot boost an Adaptive job while it serves a request;
	// Adaptive or Background would leave token generation throttled like a
	// background task. Interactive runs it with an app's resource limits.
	processType = "Interactive"
	// ThrottleInterval: a crash loop of a daemon that maps ~15 GB of model
	// must not restart every 10 s (launchd's default).
	throttleInterval = 30
	// ExitTimeOut: seconds between SIGTERM and SIGKILL on stop; enough to
	// cancel generations and snapshot sessions.
	exitTimeOut = 30
)

// launchdJob is the property list; plist tags are launchd.plist(5) keys.
type launchdJob struct {
	Label                string            `plist:"Label"`
	ProgramArguments     []string          `plist:"ProgramArguments"`
	RunAtLoad            bool              `plist:"RunAtLoad"`
	KeepAlive            map[string]bool   `plist:"KeepAlive"`
	ProcessType          string            `plist:"ProcessType"`
	ThrottleInterval     int               `plist:"ThrottleInterval"`
	ExitTimeOut          int               `plist:"ExitTimeOut"`
	StandardOutPath      string            `plist:"StandardOutPath"`
	StandardErrorPath    string            `plist:"StandardErrorPath"`
	EnvironmentVariables map[string]string `plist:"EnvironmentVariables,omitempty"`
}

// LogPath is the file launchd appends forged's stdout and stderr to.
func (s Spec) LogPath() string { return filepath.Join(s.LogDir, "forged.log") }

func renderPlist(s Spec) ([]byte, error) {
	job := launchdJob{
		Label:            Label,
		ProgramArguments: s.Args(),
		RunAtLoad:        true,
		// Restart only after an abnormal exit (crash, signal, non-zero
		// status); `forged stop` or a clean shutdown stays stopped.
		KeepAlive:         map[string]bool{"SuccessfulExit": false},
		ProcessType:       processType,
		ThrottleInterval:  throttleInterval,
		ExitTimeOut:       exitTimeOut,
		StandardOutPath:   s.LogPath(),
		StandardErrorPath: s.LogPath(),
	}
	if len(s.Env) > 0 {
		job.EnvironmentVariables = s.Env
	}
	out, err := plist.MarshalIndent(job, plist.XMLFormat, "\t")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// launchdDomain is gui/<uid> for the user's agent (it must run in the login
// session to reach the Neural Engine) or system for the daemon.
func (m *Manager) launchdDomain() string {
	if m.Spec.System {
		return "system"
	}
	return "gui/" + strconv.Itoa(m.Spec.UID)
}

func (m *Manager) launchdService() string { return m.launchdDomain() + "/" + Label }

// The modern launchctl verbs (bootstrap/bootout/kickstart/print); the
// legacy load/unload that kardianos/service uses fail on recent macOS.
func (m *Manager) launchdInstall() []Step {
	return []Step{
		// Replacing an installed job: take the old definition out first.
		{Run: []string{"launchctl", "bootout", m.launchdService()}, IgnoreError: true},
		// A job disabled earlier (launchctl disable persists) would not load.
		{Run: []string{"launchctl", "enable", m.launchdService()}},
		{Run: []string{"launchctl", "bootstrap", m.launchdDomain(), m.Spec.Path()}},
	}
}

func (m *Manager) launchdUninstall() []Step {
	return []Step{
		{Run: []string{"launchctl", "bootout", m.launchdService()}, IgnoreError: true},
		{Remove: m.Spec.Path()},
	}
}

// Start: bootstrap if the job is not loaded (RunAtLoad starts it), then
// kickstart (a no-op when it is already running).
func (m *Manager) launchdStart() []Step {
	return []Step{
		{Run: []string{"launchctl", "bootstrap", m.launchdDomain(), m.Spec.Path()}, IgnoreError: true},
		{Run: []string{"launchctl", "kickstart", m.launchdService()}},
	}
}

// Stop sends SIGTERM through launchd: forged exits 0, which KeepAlive
// {SuccessfulExit: false} does not restart. The job stays loaded, so it
// starts again at the next login (or `forged start`).
func (m *Manager) launchdStop() []Step {
	return []Step{{Run: []string{"launchctl", "kill", "SIGTERM", m.launchdService()}}}
}

// parseLaunchctlPrint reads the few fields we need from `launchctl print
// <service>` ("state = running", "pid = 123", "last exit code = 0").
func parseLaunchctlPrint(out string, st *Status) {
	kv := parseKeyValues(out)
	st.Loaded = true
	st.State = kv["state"]
	st.Running = st.State == "running"
	if pid := atoiPtr(kv["pid"]); pid != nil {
		st.PID = *pid
	}
	if code, ok := kv["last exit code"]; ok {
		// "(never exited)" when it has not exited yet.
		if n := atoiPtr(strings.Fields(code + " x")[0]); n != nil {
			st.LastExit = n
		}
	}
}
