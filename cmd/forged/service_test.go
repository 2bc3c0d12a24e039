package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/internal/service"
	"github.com/spf13/cobra"
	"howett.net/plist"
)

// runService runs one service command on a fresh command tree.
func runService(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := &cobra.Command{Use: "forged", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(serviceCommands()...)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// tree lists every path under dir (to prove nothing was created).
func tree(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		out = append(out, p)
		return nil
	})
	sort.Strings(out)
	return out
}

func isolatedHome(t *testing.T) string {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	return home
}

func TestInstallPrintLaunchdChangesNothing(t *testing.T) {
	home := isolatedHome(t)
	before := tree(t, home)
	out, errOut, err := runService(t, "install", "--print", "--target", "launchd", "--executable", "/usr/local/bin/forged", "--env", "FORGE_OFFLINE=1")
	if err != nil {
		t.Fatal(err)
	}
	var job map[string]any
	if _, err := plist.Unmarshal([]byte(out), &job); err != nil {
		t.Fatalf("stdout is not the plist: %v\n%s", err, out)
	}
	args, _ := job["ProgramArguments"].([]any)
	wantConfig := filepath.Join(home, "Library", "Application Support", "forged", "config.json")
	if len(args) != 4 || args[0] != "/usr/local/bin/forged" || args[3] != wantConfig {
		t.Errorf("ProgramArguments %v", args)
	}
	if env, _ := job["EnvironmentVariables"].(map[string]any); env["FORGE_OFFLINE"] != "1" {
		t.Errorf("--env not in the plist: %v", job["EnvironmentVariables"])
	}
	agent := filepath.Join(home, "Library", "LaunchAgents", service.Label+".plist")
	if !strings.Contains(errOut, "would: launchctl bootstrap gui/") || !strings.Contains(errOut, "would: write "+agent) {
		t.Errorf("plan on stderr lacks bootstrap/write:\n%s", errOut)
	}
	if after := tree(t, home); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("--print changed the disk:\nbefore %v\nafter  %v", before, after)
	}
}

func TestInstallPrintSystemdJSON(t *testing.T) {
	home := isolatedHome(t)
	for _, system := range []bool{false, true} {
		args := []string{"install", "--print", "--json", "--target", "systemd", "--executable", "/usr/bin/forged"}
		if system {
			args = append(args, "--system")
		}
		out, _, err := runService(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var p planJSON
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		wantFile, wantBy := filepath.Join(home, ".config", "systemd", "user", "forged.service"), "WantedBy=default.target"
		if system {
			wantFile, wantBy = "/etc/systemd/system/forged.service", "WantedBy=multi-user.target"
		}
		if p.File != wantFile || !strings.Contains(p.Content, wantBy) || p.Target != service.Systemd || p.System != system {
			t.Errorf("system=%v: %+v", system, p)
		}
		if len(p.Steps) == 0 || !strings.Contains(strings.Join(p.Steps, "\n"), "enable --now forged.service") {
			t.Errorf("steps %q", p.Steps)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("--print created %v", entries)
	}
}

func TestUninstallPrintPurge(t *testing.T) {
	isolatedHome(t)
	out, _, err := runService(t, "uninstall", "--print", "--purge", "--target", "launchd", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var p planJSON
	json.Unmarshal([]byte(out), &p)
	steps := strings.Join(p.Steps, "\n")
	if !strings.Contains(steps, "launchctl bootout gui/") || !strings.Contains(steps, "rm -rf ") {
		t.Errorf("purge plan: %s", steps)
	}
	out, _, _ = runService(t, "uninstall", "--print", "--target", "launchd", "--json")
	if strings.Contains(out, "rm -rf") {
		t.Errorf("uninstall without --purge removes data: %s", out)
	}
}

func TestServiceFlagErrors(t *testing.T) {
	isolatedHome(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"install", "--print", "--target", "upstart"}, "--target: must be launchd or systemd"},
		{[]string{"install", "--print", "--env", "NOEQUALS"}, `--env: want KEY=VALUE, got "NOEQUALS"`},
		{[]string{"install", "--print", "--executable", "forged"}, "--executable: must be an absolute path"},
	} {
		_, _, err := runService(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
}

// Without --print, install refuses on a machine whose service manager is
// not the target's, before touching anything.
func TestInstallRefusesWithoutTheManager(t *testing.T) {
	home := isolatedHome(t)
	if service.CheckManager(service.Launchd) == nil {
		t.Skip("this machine runs launchd: a real install would happen")
	}
	_, _, err := runService(t, "install", "--target", "launchd")
	if err == nil || !strings.Contains(err.Error(), "launchd") || !strings.Contains(err.Error(), "--print") {
		t.Fatalf("want a service-manager error, got %v", err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("a refused install created %v", entries)
	}
}
