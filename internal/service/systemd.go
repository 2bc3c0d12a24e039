package service

import (
	"fmt"
	"sort"
	"strings"
)

func renderUnit(s Spec) ([]byte, error) {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("# forged: the Forge model daemon (%s unit, written by `forged install`).", map[bool]string{true: "system", false: "user"}[s.System])
	line("[Unit]")
	line("Description=Forge model daemon (forged)")
	line("Documentation=https://github.com/forgedaemon/forged/blob/main/docs/SERVICE.md")
	if s.System {
		line("Wants=network-online.target")
		line("After=network-online.target")
	}
	line("")
	line("[Service]")
	line("Type=exec")
	exec := make([]string, len(s.Args()))
	for i, a := range s.Args() {
		q, err := quoteSystemd(a, true)
		if err != nil {
			return nil, err
		}
		exec[i] = q
	}
	line("ExecStart=%s", strings.Join(exec, " "))
	line("ExecReload=/bin/kill -HUP $MAINPID")
	// Like launchd's KeepAlive {SuccessfulExit: false}: restart after a
	// crash, not after `forged stop` or a clean exit.
	line("Restart=on-failure")
	line("RestartSec=%ds", throttleInterval)
	line("TimeoutStopSec=%ds", exitTimeOut)
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q, err := quoteSystemd(k+"="+s.Env[k], false)
		if err != nil {
			return nil, err
		}
		line("Environment=%s", q)
	}
	if s.System {
		// /run/forged for the socket and /var/lib/forged for the data,
		// created by systemd with the right owner.
		line("RuntimeDirectory=forged")
		line("RuntimeDirectoryMode=0755")
		line("StateDirectory=forged")
		line("NoNewPrivileges=yes")
		line("ProtectSystem=full")
	}
	line("")
	line("[Install]")
	// The user manager has no multi-user.target: a user unit wanted by it
	// would never start at login (kardianos/service#415).
	if s.System {
		line("WantedBy=multi-user.target")
	} else {
		line("WantedBy=default.target")
	}
	return []byte(b.String()), nil
}

// quoteSystemd quotes one ExecStart word or Environment assignment: double
// quotes when needed, with \ and " escaped, % doubled (specifiers) and, in
// commands (execLine), $ doubled (variable expansion).
func quoteSystemd(s string, execLine bool) (string, error) {
	if strings.ContainsAny(s, "\n\r\x00") {
		return "", fmt.Errorf("systemd unit: value %q contains a line break or NUL", s)
	}
	s = strings.ReplaceAll(s, "%", "%%")
	if execLine {
		s = strings.ReplaceAll(s, "$", "$$")
	}
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s, nil
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`, nil
}

func (m *Manager) systemctl(args ...string) []string {
	if m.Spec.System {
		return append([]string{"systemctl"}, args...)
	}
	return append([]string{"systemctl", "--user"}, args...)
}

func (m *Manager) systemdInstall() []Step {
	return []Step{
		{Run: m.systemctl("daemon-reload")},
		{Run: m.systemctl("enable", "--now", UnitName)},
		// enable --now does not restart a unit that was already running an
		// older definition.
		{Run: m.systemctl("try-restart", UnitName)},
	}
}

func (m *Manager) systemdUninstall() []Step {
	return []Step{
		{Run: m.systemctl("disable", "--now", UnitName), IgnoreError: true},
		{Remove: m.Spec.Path()},
		{Run: m.systemctl("daemon-reload")},
	}
}

// parseSystemctlShow reads `systemctl show --property=…` output.
func parseSystemctlShow(out string, st *Status) {
	kv := parseKeyValues(out)
	st.Loaded = kv["LoadState"] == "loaded"
	st.State = kv["ActiveState"]
	if sub := kv["SubState"]; sub != "" {
		st.State += " (" + sub + ")"
	}
	st.Running = kv["ActiveState"] == "active"
	if pid := atoiPtr(kv["MainPID"]); pid != nil && *pid > 0 {
		st.PID = *pid
	}
	if code := atoiPtr(kv["ExecMainStatus"]); code != nil && !st.Running && st.Loaded {
		st.LastExit = code
	}
}
