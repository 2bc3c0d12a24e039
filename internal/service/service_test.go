package service

import (
	"context"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/daemon/config"
	"howett.net/plist"
)

// testSpec is a spec rooted in a temporary home, with awkward characters in
// the paths to exercise quoting.
func testSpec(t *testing.T, target Target, system bool) Spec {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home of ada & co")
	s, err := NewSpec(target, system, "/opt/homebrew/opt/forged/bin/forged")
	if err != nil {
		t.Fatal(err)
	}
	s.Home, s.UID = home, 501
	s.ConfigPath = filepath.Join(home, "Library", "Application Support", "forged", "config.json")
	s.Config.DataDir = filepath.Join(home, "data")
	if target == Launchd && !system {
		s.LogDir = filepath.Join(home, "Library", "Logs", "forged")
	}
	return s
}

func TestPlistParsesWithExpectedKeys(t *testing.T) {
	for _, system := range []bool{false, true} {
		s := testSpec(t, Launchd, system)
		s.Env = map[string]string{"FORGE_OFFLINE": "1", "NOTE": "a<b & c>d"}
		data, err := s.Render()
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		format, err := plist.Unmarshal(data, &got)
		if err != nil {
			t.Fatalf("rendered plist does not parse: %v\n%s", err, data)
		}
		if format != plist.XMLFormat {
			t.Errorf("format %d, want XML", format)
		}
		logPath := filepath.Join(s.LogDir, "forged.log")
		want := map[string]any{
			"Label":                Label,
			"ProgramArguments":     []any{"/opt/homebrew/opt/forged/bin/forged", "run", "--config", s.ConfigPath},
			"RunAtLoad":            true,
			"KeepAlive":            map[string]any{"SuccessfulExit": false},
			"ProcessType":          "Interactive",
			"ThrottleInterval":     uint64(30),
			"ExitTimeOut":          uint64(30),
			"StandardOutPath":      logPath,
			"StandardErrorPath":    logPath,
			"EnvironmentVariables": map[string]any{"FORGE_OFFLINE": "1", "NOTE": "a<b & c>d"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("system=%v plist:\n got  %#v\n want %#v", system, got, want)
		}
		checkPlistXML(t, data)
	}
}

// checkPlistXML walks the document with encoding/xml, independently of the
// plist library: the DOCTYPE launchd expects, a <plist version="1.0"> root
// holding one <dict>, and key/value pairs with no key repeated.
func checkPlistXML(t *testing.T, data []byte) {
	t.Helper()
	if !strings.Contains(string(data), `<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">`) {
		t.Error("missing the plist DOCTYPE")
	}
	type node struct {
		XMLName  xml.Name
		Attrs    []xml.Attr `xml:",any,attr"`
		Children []node     `xml:",any"`
		Text     string     `xml:",chardata"`
	}
	var root node
	if err := xml.Unmarshal(data, &root); err != nil {
		t.Fatalf("not well-formed XML: %v", err)
	}
	if root.XMLName.Local != "plist" || len(root.Attrs) != 1 || root.Attrs[0].Value != "1.0" || len(root.Children) != 1 || root.Children[0].XMLName.Local != "dict" {
		t.Fatalf("root is not <plist version=\"1.0\"><dict>: %+v", root.XMLName)
	}
	kids := root.Children[0].Children
	if len(kids)%2 != 0 {
		t.Fatalf("dict has %d children, want key/value pairs", len(kids))
	}
	seen := map[string]bool{}
	for i := 0; i < len(kids); i += 2 {
		if kids[i].XMLName.Local != "key" {
			t.Fatalf("child %d is <%s>, want <key>", i, kids[i].XMLName.Local)
		}
		if seen[kids[i].Text] {
			t.Fatalf("key %s twice", kids[i].Text)
		}
		seen[kids[i].Text] = true
	}
	for _, k := range []string{"Label", "ProgramArguments", "KeepAlive", "RunAtLoad", "ProcessType", "ThrottleInterval"} {
		if !seen[k] {
			t.Errorf("key %s missing from the XML", k)
		}
	}
}

func TestSystemdUnits(t *testing.T) {
	for _, system := range []bool{false, true} {
		s := testSpec(t, Systemd, system)
		s.Env = map[string]string{"FORGE_OFFLINE": "1", "PRICE": "100% $5"}
		data, err := s.Render()
		if err != nil {
			t.Fatal(err)
		}
		unit := string(data)
		wantBy := "WantedBy=default.target"
		if system {
			wantBy = "WantedBy=multi-user.target"
		}
		for _, want := range []string{
			"\n" + wantBy + "\n",
			"\nRestart=on-failure\n",
			"\nExecReload=/bin/kill -HUP $MAINPID\n",
			"\nExecStart=/opt/homebrew/opt/forged/bin/forged run --config \"" + s.ConfigPath + "\"\n",
			"\nEnvironment=FORGE_OFFLINE=1\n",
			"\nEnvironment=\"PRICE=100%% $5\"\n",
		} {
			if !strings.Contains(unit, want) {
				t.Errorf("system=%v unit lacks %q:\n%s", system, want, unit)
			}
		}
		if strings.Contains(unit, "multi-user.target") != system {
			t.Errorf("system=%v: multi-user.target in a user unit never starts it", system)
		}
	}
}

// systemd-analyze verify is the real parser; every warning counts as a failure.
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed; the unit text is still checked by TestSystemdUnits")
	}
	exe, err := os.Executable() // verify insists that ExecStart exists
	if err != nil {
		t.Fatal(err)
	}
	for _, system := range []bool{false, true} {
		s := testSpec(t, Systemd, system)
		s.Executable = exe
		s.Env = map[string]string{"FORGE_OFFLINE": "1"}
		data, err := s.Render()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, UnitName)
		os.WriteFile(path, data, 0o644)
		args := []string{"verify", path}
		cmd := exec.Command(analyze, args...)
		if !system {
			rt := t.TempDir() // the user manager needs a runtime directory
			os.Chmod(rt, 0o700)
			cmd = exec.Command(analyze, append([]string{"--user"}, args...)...)
			cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt)
		}
		out, err := cmd.CombinedOutput()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("system=%v: systemd-analyze verify: %v\n%s\n--- unit ---\n%s", system, err, out, data)
		}
	}
}

func TestQuoteSystemd(t *testing.T) {
	for in, want := range map[string]string{
		"plain":      "plain",
		"with space": `"with space"`,
		`quo"te`:     `"quo\"te"`,
		`back\slash`: `"back\\slash"`,
		"100%":       "100%%",
		"$HOME":      "$$HOME",
		"":           `""`,
		"semi;colon": `"semi;colon"`,
	} {
		if got, err := quoteSystemd(in, true); err != nil || got != want {
			t.Errorf("quoteSystemd(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := quoteSystemd("a\nb", true); err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("newline accepted: %v", err)
	}
}

func TestStableExecutable(t *testing.T) {
	for in, want := range map[string]string{
		"/opt/homebrew/Cellar/forged/0.3.1/bin/forged": "/opt/homebrew/opt/forged/bin/forged",
		"/usr/local/Cellar/forged/1.0_1/bin/forged":    "/usr/local/opt/forged/bin/forged",
		"/usr/local/bin/forged":                        "/usr/local/bin/forged",
		"/home/ada/go/bin/forged":                      "/home/ada/go/bin/forged",
	} {
		if got := StableExecutable(in); got != want {
			t.Errorf("StableExecutable(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestSpecPathsAndErrors(t *testing.T) {
	if _, err := ParseTarget("upstart"); err == nil || !strings.Contains(err.Error(), "--target: must be launchd or systemd") {
		t.Errorf("bad target: %v", err)
	}
	if _, err := NewSpec(Systemd, false, "relative/forged"); err == nil || !strings.Contains(err.Error(), "--executable: must be an absolute path") {
		t.Errorf("relative executable: %v", err)
	}
	s, _ := NewSpec(Launchd, true, "/usr/local/bin/forged")
	if s.Path() != "/Library/LaunchDaemons/dev.forged.forged.plist" || s.ConfigPath != "/Library/Application Support/forged/config.json" ||
		s.LogDir != "/Library/Logs/forged" || s.Config.Socket != "/var/run/forged/forged.sock" || s.Config.DataDir != "/Library/Application Support/forged/data" {
		t.Errorf("system launchd spec: %+v", s)
	}
	u, _ := NewSpec(Launchd, false, "/usr/local/bin/forged")
	if !strings.HasSuffix(u.Path(), "/Library/LaunchAgents/dev.forged.forged.plist") {
		t.Errorf("agent path %s", u.Path())
	}
	y, _ := NewSpec(Systemd, true, "/usr/local/bin/forged")
	if y.Path() != "/etc/systemd/system/forged.service" || y.ConfigPath != "/etc/forged/config.json" || y.Config.DataDir != "/var/lib/forged" {
		t.Errorf("system unit spec: %+v", y)
	}
	// The config file install writes must be one the daemon accepts.
	for _, spec := range []Spec{s, u, y} {
		data, err := spec.Config.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := config.Parse(data)
		if err != nil || back.DataDir != spec.Config.DataDir || back.Socket != spec.Config.Socket {
			t.Errorf("config written by install does not parse back: %v\n%s", err, data)
		}
	}
}

// fakeRunner records commands and fails the ones listed.
type fakeRunner struct {
	calls [][]string
	fail  map[string]bool // joined argv
	out   map[string]string
}

func (f *fakeRunner) run(_ context.Context, argv ...string) (string, error) {
	f.calls = append(f.calls, argv)
	key := strings.Join(argv, " ")
	if f.fail[key] {
		return "", errors.New(key + ": exit status 3")
	}
	return f.out[key], nil
}

func (f *fakeRunner) commands() []string {
	var out []string
	for _, c := range f.calls {
		out = append(out, strings.Join(c, " "))
	}
	return out
}

func TestLaunchdInstallUninstall(t *testing.T) {
	s := testSpec(t, Launchd, false)
	svc := "gui/501/" + Label
	fr := &fakeRunner{fail: map[string]bool{"launchctl bootout " + svc: true}} // not loaded yet
	m := &Manager{Spec: s, Run: fr.run}
	// An existing config file must survive the install untouched.
	os.MkdirAll(filepath.Dir(s.ConfigPath), 0o755)
	os.WriteFile(s.ConfigPath, []byte(`{"drafter": "off"}`), 0o600)
	plan, err := m.InstallPlan()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Execute(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	want := []string{"launchctl bootout " + svc, "launchctl enable " + svc, "launchctl bootstrap gui/501 " + s.Path()}
	if !reflect.DeepEqual(fr.commands(), want) {
		t.Errorf("commands:\n got  %q\n want %q", fr.commands(), want)
	}
	written, err := os.ReadFile(s.Path())
	rendered, _ := s.Render()
	if err != nil || string(written) != string(rendered) {
		t.Fatalf("plist not written as rendered: %v", err)
	}
	if cfg, _ := os.ReadFile(s.ConfigPath); string(cfg) != `{"drafter": "off"}` {
		t.Errorf("install overwrote the config: %s", cfg)
	}
	if fi, err := os.Stat(s.LogDir); err != nil || !fi.IsDir() {
		t.Errorf("log directory not created: %v", err)
	}

	// Uninstall without --purge keeps the data; with it, removes the data
	// directory named in the config file in force.
	dataDir := filepath.Join(s.Home, "data")
	os.MkdirAll(filepath.Join(dataDir, "blobs"), 0o755)
	fr.calls = nil
	plan, err = m.UninstallPlan(false)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Execute(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Error("plist still there after uninstall")
	}
	if _, err := os.Stat(dataDir); err != nil {
		t.Error("uninstall without --purge removed the data directory")
	}
	if got := fr.commands(); len(got) != 1 || got[0] != "launchctl bootout "+svc {
		t.Errorf("uninstall commands %q", got)
	}
	custom := filepath.Join(s.Home, "custom-data")
	os.MkdirAll(filepath.Join(custom, "snapshots"), 0o755)
	os.WriteFile(s.ConfigPath, []byte(`{"data_dir": "`+custom+`"}`), 0o600)
	plan, err = m.UninstallPlan(true)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Execute(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(custom); !errors.Is(err, os.ErrNotExist) {
		t.Error("--purge left the configured data directory")
	}
	if _, err := os.Stat(dataDir); err != nil {
		t.Error("--purge removed a directory the config does not name")
	}
	if _, err := os.Stat(s.ConfigPath); err != nil {
		t.Error("--purge removed the config file")
	}
}

// --purge deletes only what looks like a bundle store.
func TestPurgeRefusesForeignDirectories(t *testing.T) {
	s := testSpec(t, Launchd, false)
	m := &Manager{Spec: s}
	os.MkdirAll(filepath.Dir(s.ConfigPath), 0o755)
	docs := filepath.Join(s.Home, "Documents")
	os.MkdirAll(docs, 0o755)
	os.WriteFile(filepath.Join(docs, "thesis.tex"), []byte("precious"), 0o644)
	for dir, want := range map[string]string{
		"/":    `refusing to delete "/"`,
		s.Home: "refusing to delete",
		docs:   "does not look like a forged data directory",
	} {
		os.WriteFile(s.ConfigPath, []byte(`{"data_dir": "`+dir+`"}`), 0o600)
		if _, err := m.UninstallPlan(true); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("purge of %s: %v, want %q", dir, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(docs, "thesis.tex")); err != nil {
		t.Fatal("a refused purge deleted a file")
	}
	// A missing or empty directory is fine to "delete".
	os.WriteFile(s.ConfigPath, []byte(`{"data_dir": "`+filepath.Join(s.Home, "never-created")+`"}`), 0o600)
	if _, err := m.UninstallPlan(true); err != nil {
		t.Errorf("missing data directory: %v", err)
	}
}

func TestSystemdPlansUseUserManager(t *testing.T) {
	user := &Manager{Spec: testSpec(t, Systemd, false)}
	sys := &Manager{Spec: testSpec(t, Systemd, true)}
	plan, _ := user.InstallPlan()
	var runs []string
	for _, st := range plan {
		if st.Run != nil {
			runs = append(runs, strings.Join(st.Run, " "))
		}
	}
	want := []string{"systemctl --user daemon-reload", "systemctl --user enable --now forged.service", "systemctl --user try-restart forged.service"}
	if !reflect.DeepEqual(runs, want) {
		t.Errorf("user install runs %q", runs)
	}
	if got := sys.StopPlan()[0].Run; strings.Join(got, " ") != "systemctl stop forged.service" {
		t.Errorf("system stop %q", got)
	}
	if got := user.RestartPlan()[0].Run; strings.Join(got, " ") != "systemctl --user restart forged.service" {
		t.Errorf("user restart %q", got)
	}
}

func TestExecuteStopsAtFirstFailure(t *testing.T) {
	fr := &fakeRunner{fail: map[string]bool{"launchctl enable gui/501/" + Label: true}}
	m := &Manager{Spec: testSpec(t, Launchd, false), Run: fr.run}
	plan, _ := m.InstallPlan()
	err := m.Execute(context.Background(), plan)
	if err == nil || !strings.Contains(err.Error(), "launchctl enable") {
		t.Fatalf("want the enable failure, got %v", err)
	}
	for _, c := range fr.commands() {
		if strings.Contains(c, "bootstrap") {
			t.Fatal("ran bootstrap after a failed step")
		}
	}
}

func TestStatusParsing(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	svc := "gui/501/" + Label
	for _, tc := range []struct {
		target          Target
		file            string
		loaded, running bool
		pid             int
		exit            int // -1: none
		state           string
	}{
		{Launchd, "launchctl_print_running.txt", true, true, 4242, 1, "running"},
		{Launchd, "launchctl_print_stopped.txt", true, false, 0, 0, "not running"},
		{Systemd, "systemctl_show_active.txt", true, true, 777, -1, "active (running)"},
		{Systemd, "systemctl_show_failed.txt", true, false, 0, 2, "failed (failed)"},
		{Systemd, "systemctl_show_missing.txt", false, false, 0, -1, "inactive (dead)"},
	} {
		fr := &fakeRunner{out: map[string]string{
			"launchctl print " + svc: read(tc.file),
			"systemctl --user show forged.service --property=LoadState,ActiveState,SubState,MainPID,ExecMainStatus": read(tc.file),
		}}
		m := &Manager{Spec: testSpec(t, tc.target, false), Run: fr.run}
		st, err := m.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		exit := -1
		if st.LastExit != nil {
			exit = *st.LastExit
		}
		if st.Loaded != tc.loaded || st.Running != tc.running || st.PID != tc.pid || exit != tc.exit || st.State != tc.state || st.Installed {
			t.Errorf("%s: %+v (exit %d)", tc.file, st, exit)
		}
	}
	// launchctl print fails for a job that is not loaded.
	fr := &fakeRunner{fail: map[string]bool{"launchctl print " + svc: true}}
	st, err := (&Manager{Spec: testSpec(t, Launchd, false), Run: fr.run}).Status(context.Background())
	if err != nil || st.Loaded || st.Running {
		t.Errorf("unloaded job: %+v %v", st, err)
	}
}

func TestCheckManagerNamesWhatItFound(t *testing.T) {
	err := CheckManager(Launchd)
	if err == nil {
		t.Skip("running on macOS with launchd")
	}
	if !strings.Contains(err.Error(), "not launchd") && !strings.Contains(err.Error(), "no service manager") {
		t.Errorf("unclear error: %v", err)
	}
	if !strings.Contains(err.Error(), "--print") {
		t.Errorf("error does not say what to do: %v", err)
	}
}
