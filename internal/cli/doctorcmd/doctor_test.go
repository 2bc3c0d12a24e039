package doctorcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/service"
	"github.com/forgedaemon/forged/internal/synthbundle"
	"github.com/forgedaemon/forged/internal/sysinfo"
	"github.com/forgedaemon/forged/internal/units"
)

// testDoctor checks the real machine with paths in temporary directories and
// a service manager that reports "not installed".
func testDoctor(t *testing.T) *doctor {
	t.Helper()
	dir := shortDir(t)
	d := newDoctor(filepath.Join(dir, "config.json"))
	d.socket = filepath.Join(dir, "run", "s.sock")
	d.dataDir = filepath.Join(dir, "data")
	d.repo = "anemll/doctor-test"
	d.service = func(context.Context) (service.Status, error) {
		return service.Status{Target: service.Systemd, Scope: "user", File: filepath.Join(dir, "forged.service")}, nil
	}
	return d
}

func find(t *testing.T, r doctorReport, name string) doctorCheck {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s check in %+v", name, r)
	return doctorCheck{}
}

// noDecimalUnits fails if a check shows a quantity in decimal units: every
// byte count goes through internal/units (binary prefixes), one formatter.
func noDecimalUnits(t *testing.T, checks []doctorCheck) {
	t.Helper()
	decimal := regexp.MustCompile(`\d\s*[KMGT]B\b`)
	for _, c := range checks {
		if m := decimal.FindString(c.Message + " " + c.Fix); m != "" {
			t.Errorf("%s: %q in %q: byte counts are shown by internal/units", c.Name, m, c.Message+" | fix: "+c.Fix)
		}
	}
}

func wantCheck(t *testing.T, c doctorCheck, status string, msgParts ...string) {
	t.Helper()
	if c.Status != status {
		t.Errorf("%s: status %s, want %s (%s)", c.Name, c.Status, status, c.Message)
	}
	for _, p := range msgParts {
		if !strings.Contains(c.Message+" | fix: "+c.Fix, p) {
			t.Errorf("%s: %q lacks %q", c.Name, c.Message+" | fix: "+c.Fix, p)
		}
	}
}

func TestDoctorOnLinuxReportsReferenceBackendAndMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the real machine")
	}
	d := testDoctor(t)
	if d.goos != "linux" {
		t.Skip("Linux-only expectations")
	}
	d.bridges = []string{filepath.Join(t.TempDir(), "libCoreAIBridge.dylib")}
	r := d.run(context.Background())
	if r.Backend != "none" {
		t.Errorf("backend %q with nothing installed and no daemon", r.Backend)
	}
	wantCheck(t, find(t, r, "bridge"), checkOK, "not needed: Linux serves export/ with the reference engine", d.bridges[0])
	wantCheck(t, find(t, r, "chip"), checkOK, "backend: reference")
	// Memory: the total as /proc/meminfo has it, read here independently.
	data, _ := os.ReadFile("/proc/meminfo")
	total, _, err := sysinfo.ParseMeminfo(data)
	if err != nil {
		t.Fatal(err)
	}
	mem := find(t, r, "memory")
	if !strings.HasPrefix(mem.Message, units.Bytes(total)+" RAM") {
		t.Errorf("memory message %q does not start with the machine's %d bytes", mem.Message, total)
	}
	// Disk: the data directory does not exist yet; the filesystem above it is measured.
	disk := find(t, r, "disk")
	wantCheck(t, disk, disk.Status, d.dataDir, "the bundle (~14.0 GiB)")
	noDecimalUnits(t, r.Checks)
	// No daemon: the socket check fails, names the path and the fix (the
	// service is not installed: install it, or run in the foreground).
	sock := find(t, r, "socket")
	wantCheck(t, sock, checkFail, "no socket at "+d.socket, "forged install", "forged run --config "+d.configPath)
	wantCheck(t, find(t, r, "bundle"), checkWarn, "nothing downloaded yet", "forgectl pull anemll/doctor-test")
	wantCheck(t, find(t, r, "runtimes"), checkWarn, "no installed snapshot of anemll/doctor-test", "forgectl pull anemll/doctor-test")
	wantCheck(t, find(t, r, "backend"), checkWarn, "backend auto: no installed snapshot", "forgectl pull anemll/doctor-test")
	wantCheck(t, find(t, r, "service"), checkWarn, "not installed", "forged install")
	wantCheck(t, find(t, r, "config"), checkOK, "defaults apply")
	if r.Fail != 1 || r.OK+r.Warn+r.Fail != len(r.Checks) {
		t.Errorf("counts %d/%d/%d over %d checks", r.OK, r.Warn, r.Fail, len(r.Checks))
	}
}

func TestDoctorCommandJSONAndExitStatus(t *testing.T) {
	dir := shortDir(t)
	out, _, err := runCtl(t, "", "doctor", "--json", "--config", filepath.Join(dir, "c.json"), "--socket", filepath.Join(dir, "none.sock"), "--data", filepath.Join(dir, "d"))
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != 2 || !strings.Contains(err.Error(), "1 check(s) failed") {
		t.Fatalf("want exit status 2 for the missing socket, got %v", err)
	}
	var r doctorReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if c := find(t, r, "socket"); c.Status != checkFail || !strings.Contains(c.Message, "none.sock") {
		t.Errorf("socket check %+v", c)
	}
}

func TestDoctorSocketStates(t *testing.T) {
	d := testDoctor(t)
	dir := filepath.Dir(d.socket)
	os.MkdirAll(dir, 0o755)

	// A live daemon answers hello.
	ln, err := daemon.Listen(d.socket)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := daemon.New(fakeengine.New(fakeengine.Options{}), daemon.Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(context.Background(), ln); close(done) }()
	wantCheck(t, d.checkSocket(context.Background()), checkOK, d.socket+" answers", "protocol", "state ready", "bundle fake/instant")
	srv.Shutdown()
	<-done

	// A socket file nobody listens on (a crashed daemon's).
	stale := filepath.Join(dir, "stale.sock")
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close()
	d.socket = stale
	d.svc = &service.Status{Target: service.Launchd, Scope: "user", Installed: true, Loaded: true}
	wantCheck(t, d.checkSocket(context.Background()), checkFail, "stale socket at "+stale, "forged restart")

	// Something else at the path.
	d.socket = filepath.Join(dir, "file.sock")
	os.WriteFile(d.socket, []byte("x"), 0o644)
	wantCheck(t, d.checkSocket(context.Background()), checkFail, "is not a socket", "remove it")
}

// The fix for a daemon that is not running follows the service manager:
// start the installed service, install one, or, where there is no
// service manager (a container), run forged in the foreground, never
// "forged start".
func TestDoctorStartFixFollowsTheServiceManager(t *testing.T) {
	for _, tc := range []struct {
		name     string
		st       service.Status
		want     string
		dontWant string
	}{
		{"installed", service.Status{Target: service.Systemd, Scope: "user", Installed: true, Loaded: true, State: "inactive"}, "forged start", ""},
		{"not installed", service.Status{Target: service.Systemd, Scope: "user"}, "forged install", "forged start"},
		{"no service manager", service.Status{Target: service.Systemd, Scope: "user", State: "unknown: systemd is not running (no /run/systemd/system)"},
			"there is no service manager here", "forged start"},
	} {
		d := testDoctor(t)
		st := tc.st
		d.service = func(context.Context) (service.Status, error) { return st, nil }
		d.checkService(context.Background())
		c := d.checkSocket(context.Background())
		wantCheck(t, c, checkFail, "no socket at", tc.want, "forged run --config "+d.configPath)
		if tc.dontWant != "" && strings.Contains(c.Fix, tc.dontWant) {
			t.Errorf("%s: fix %q suggests %q", tc.name, c.Fix, tc.dontWant)
		}
	}
}

// With a daemon answering, doctor looks at what it serves: its bundle
// (unless --repo), its state (unavailable is a warning with the daemon's
// reason, not "socket ok") and its backend (the report's header).
func TestDoctorAsksTheDaemonWhatItServes(t *testing.T) {
	d := testDoctor(t)
	d.bridges = []string{filepath.Join(t.TempDir(), "libCoreAIBridge.dylib")}
	os.MkdirAll(filepath.Dir(d.socket), 0o755)
	os.MkdirAll(d.dataDir, 0o755)
	ln, err := daemon.Listen(d.socket)
	if err != nil {
		t.Fatal(err)
	}
	const served = "0123456789abcdef0123456789abcdef01234567"
	srv, err := daemon.New(described{fakeengine.New(fakeengine.Options{Revision: served}), &wire.BackendInfo{Name: wire.BackendRef, Kernels: "avx2", Why: "forced by config (backend ref)"}}, daemon.Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(context.Background(), ln); close(done) }()
	defer func() { srv.Shutdown(); <-done }()

	r := d.run(context.Background())
	wantCheck(t, find(t, r, "socket"), checkOK, "state ready", "bundle fake/instant", "backend ref")
	if d.repo != "fake/instant" {
		t.Errorf("doctor checks %q, not the daemon's fake/instant", d.repo)
	}
	wantCheck(t, find(t, r, "bundle"), checkWarn, "fake/instant is not installed", "the daemon answering serves it", "forgectl pull fake/instant")
	if r.Backend != wire.BackendRef {
		t.Errorf("report backend %q, want the daemon's ref", r.Backend)
	}

	// A daemon serving a checkpoint (--model: revision "local") serves no
	// repository of the store: the configured one is checked.
	sock2, _ := serveDaemon(t, fakeengine.New(fakeengine.Options{Revision: "local"}))
	d1 := testDoctor(t)
	d1.socket = sock2
	wantCheck(t, d1.checkSocket(context.Background()), checkOK, "bundle fake/instant@local")
	if d1.repo != "anemll/doctor-test" {
		t.Errorf("a --model daemon's bundle replaced the configured repo: %q", d1.repo)
	}

	// --repo wins over the daemon's bundle.
	d2 := testDoctor(t)
	d2.socket, d2.repo, d2.repoGiven = d.socket, "anemll/other", true
	d2.checkSocket(context.Background())
	if d2.repo != "anemll/other" {
		t.Errorf("--repo replaced by %q", d2.repo)
	}

	// The daemon cannot serve its bundle: a warning with its reason.
	const reason = "this bundle carries only Core AI packages; the Core AI bridge is not available on linux: pull with --include-export to serve it on the CPU"
	srv.SetBackend(daemon.Unavailable{Reason: reason, Bundle: wire.Bundle{Repo: "anemll/forge-coreai-only"}})
	srv.SetState(wire.StateUnavailable, reason)
	d3 := testDoctor(t)
	d3.socket = d.socket
	c := d3.checkSocket(context.Background())
	wantCheck(t, c, checkWarn, "state unavailable", "it serves nothing: "+reason, "forgectl load")
}

// stageSnapshots installs one snapshot per kind (coreai/ only, export/
// only, both, neither) in its own data directory, pulled from the test
// hub; export-only and neither lose coreai/manifest.json afterwards.
func stageSnapshots(t *testing.T, repo string) map[string]string {
	t.Helper()
	h := hubtest.New()
	t.Cleanup(h.Close)
	publishBundle(t, h, repo, true, 31)
	dirs := map[string]string{}
	for _, kind := range []string{"coreai", "export", "both", "neither"} {
		data := filepath.Join(t.TempDir(), "data")
		s, err := store.Open(data)
		if err != nil {
			t.Fatal(err)
		}
		s.Client = hub.New(h.URL, "")
		res, err := s.Pull(context.Background(), repo, store.PullOptions{Selection: bundle.Selection{IncludeExport: kind == "export" || kind == "both"}})
		if err != nil {
			t.Fatal(err)
		}
		if kind == "export" || kind == "neither" {
			coreaiDir := filepath.Join(res.Snapshot, bundle.ComponentCoreAI)
			os.Chmod(coreaiDir, 0o755)
			if err := os.Remove(filepath.Join(coreaiDir, bundle.ManifestFile)); err != nil {
				t.Fatal(err)
			}
		}
		dirs[kind] = data
	}
	return dirs
}

// standInBridges returns a stand-in bridge that loads and a copy of it
// that reports the wrong ABI version (TB_ABI_VERSION while it is probed),
// each probed once.
func standInBridges(t *testing.T) (ok, wrongABI modelbackend.Bridge, okPath, wrongPath string) {
	t.Helper()
	lib, err := standin.Shared()
	if errors.Is(err, standin.ErrNoCompiler) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	wrongPath = filepath.Join(t.TempDir(), filepath.Base(lib))
	if err := os.WriteFile(wrongPath, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ok = modelbackend.ProbeBridge(lib)
	if !ok.OK() {
		t.Fatalf("the stand-in bridge does not load: %v", ok.Err)
	}
	t.Setenv("TB_ABI_VERSION", "2")
	wrongABI = modelbackend.ProbeBridge(wrongPath)
	os.Unsetenv("TB_ABI_VERSION")
	return ok, wrongABI, lib, wrongPath
}

// The doctor's bridge, runtimes and backend lines for darwin and linux ×
// a bridge that loads (the stand-in; on darwin also a real-looking one),
// none, or one with the wrong ABI × a snapshot with coreai/, export/,
// both or neither. Every bridge is really probed except the real-looking
// one (no Mac here); the backend line is modelbackend.Choose's answer.
func TestDoctorBridgeRuntimesAndBackendTable(t *testing.T) {
	if testing.Short() {
		t.Skip("pulls four synthetic snapshots and builds the stand-in bridge")
	}
	const repo = "anemll/doctor-table"
	snaps := stageSnapshots(t, repo)
	standinOK, wrong, okPath, wrongPath := standInBridges(t)
	absentPath := filepath.Join(t.TempDir(), "lib", "forged", cai.BridgeName)
	realPath := "/usr/local/lib/forged/" + cai.BridgeName
	bridges := map[string]struct {
		br     modelbackend.Bridge
		paths  []string
		usable bool
	}{
		"stand-in": {standinOK, []string{absentPath, okPath}, true},
		"real":     {modelbackend.Bridge{Path: realPath, Tried: []string{realPath}, Release: "CoreAIBridge 1 (Core AI 27.0)"}, []string{realPath}, true},
		"absent":   {modelbackend.Bridge{Tried: []string{absentPath}, Err: fmt.Errorf("%w: not found", cai.ErrBridgeNotFound)}, []string{absentPath}, false},
		"wrongABI": {wrong, []string{wrongPath}, false},
	}
	type want struct {
		status string
		parts  []string
	}
	bridgeWant := map[string]want{
		"darwin/stand-in": {checkWarn, []string{"found " + okPath + " (candidate 2 of 2)", "ABI version 1 (this build needs 1)", "Linux stand-in bridge", "not Core AI", "packaging/bridge/build.sh"}},
		"darwin/real":     {checkOK, []string{"found " + realPath + " (candidate 1 of 1)", "it loads: ABI version 1 (this build needs 1), CoreAIBridge 1 (Core AI 27.0)"}},
		"darwin/absent":   {checkFail, []string{cai.BridgeName + " not found (looked in " + absentPath + ")", "packaging/bridge/build.sh", cai.BridgeEnv}},
		"darwin/wrongABI": {checkFail, []string{"found " + wrongPath + ", but it cannot be used", "has ABI version 2, this build needs 1", "packaging/bridge/build.sh"}},
		"linux/stand-in":  {checkOK, []string{"found " + okPath, "Linux stand-in bridge", "backend auto does not use it on linux"}},
		"linux/absent":    {checkOK, []string{"not needed: Linux serves export/ with the reference engine", "looked in " + absentPath}},
		"linux/wrongABI":  {checkWarn, []string{"has ABI version 2, this build needs 1", "not needed here", cai.BridgeEnv}},
	}
	runtimesWant := map[string]want{
		"coreai":  {checkOK, []string{"carries coreai/ (the Core AI packages, for the ANE) and no export/"}},
		"export":  {checkOK, []string{"carries export/ (the quantized layers, for the CPU reference engine) and no coreai/"}},
		"both":    {checkOK, []string{"carries coreai/ (the Core AI packages, for the ANE) and export/"}},
		"neither": {checkFail, []string{"carries neither coreai/manifest.json", "forgectl pull " + repo}},
	}
	neither := want{checkFail, []string{"nothing on this machine can serve", "carries neither the Core AI runtime", "forgectl pull " + repo}}
	backendWant := map[string]want{
		"darwin/usable/coreai":    {checkOK, []string{"backend auto chooses coreai", "the bridge at ", " loads"}},
		"darwin/usable/both":      {checkOK, []string{"backend auto chooses coreai"}},
		"darwin/usable/export":    {checkOK, []string{"backend auto chooses ref", "the snapshot has no Core AI runtime; the snapshot carries export/"}},
		"darwin/usable/neither":   neither,
		"darwin/unusable/coreai":  {checkFail, []string{"nothing on this machine can serve", "this bundle carries only Core AI packages and ", "make the bridge load", "--include-export"}},
		"darwin/unusable/both":    {checkOK, []string{"backend auto chooses ref", "bridge"}},
		"darwin/unusable/export":  {checkOK, []string{"backend auto chooses ref", "the snapshot has no Core AI runtime"}},
		"darwin/unusable/neither": neither,
		"linux/coreai": {checkFail, []string{"nothing on this machine can serve", "the Core AI bridge is not available on linux: pull with --include-export to serve it on the CPU",
			"forgectl pull " + repo, "--include-export (when the release publishes export/)"}},
		"linux/both":    {checkOK, []string{"backend auto chooses ref", "Core AI needs macOS (this is linux); the snapshot carries export/"}},
		"linux/export":  {checkOK, []string{"backend auto chooses ref", "the snapshot has no Core AI runtime"}},
		"linux/neither": neither,
	}
	rows := 0
	for _, goos := range []string{"darwin", "linux"} {
		for _, kind := range []string{"stand-in", "real", "absent", "wrongABI"} {
			if goos == "linux" && kind == "real" {
				continue // the real bridge does not exist off macOS
			}
			b := bridges[kind]
			for _, snap := range []string{"coreai", "export", "both", "neither"} {
				name := goos + "/" + kind + "/" + snap
				d := testDoctor(t)
				d.goos, d.bridges, d.repo, d.dataDir = goos, b.paths, repo, snaps[snap]
				br := b.br
				if kind == "real" {
					d.bridge = &br // no such file here: found and loaded as on a Mac
				} else {
					d.probe = func(string) modelbackend.Bridge { return br } // the file is looked for for real
				}
				check := func(c doctorCheck, w want) {
					t.Helper()
					if c.Status != w.status {
						t.Errorf("%s: %s %s, want %s: %s | fix: %s", name, c.Name, c.Status, w.status, c.Message, c.Fix)
					}
					for _, p := range w.parts {
						if !strings.Contains(c.Message+" | fix: "+c.Fix, p) {
							t.Errorf("%s: %s %q lacks %q", name, c.Name, c.Message+" | fix: "+c.Fix, p)
						}
					}
				}
				check(d.checkBridge(context.Background()), bridgeWant[goos+"/"+kind])
				check(d.checkRuntimes(context.Background()), runtimesWant[snap])
				key := goos + "/" + snap
				if goos == "darwin" {
					key = "darwin/unusable/" + snap
					if b.usable {
						key = "darwin/usable/" + snap
					}
				}
				bc := d.checkBackend(context.Background())
				check(bc, backendWant[key])
				if bc.Status == checkFail && bc.Fix == "" {
					t.Errorf("%s: backend fails without a fix", name)
				}
				if rows++; snap == "coreai" {
					t.Logf("%-26s bridge %-4s | backend %-4s %s", name, d.checkBridge(context.Background()).Status, bc.Status, bc.Message)
				}
			}
		}
	}
	if rows != 28 {
		t.Errorf("%d rows", rows)
	}
}

// A forced backend is what doctor judges: coreai on Linux needs the
// stand-in bridge (FORGE_BRIDGE), ref needs export/.
func TestDoctorForcedBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("pulls synthetic snapshots")
	}
	const repo = "anemll/doctor-forced"
	snaps := stageSnapshots(t, repo)
	d := testDoctor(t)
	d.goos, d.repo, d.dataDir, d.backend = "linux", repo, snaps["coreai"], wire.BackendCoreAI
	d.bridges = []string{filepath.Join(t.TempDir(), cai.BridgeName)}
	wantCheck(t, d.checkBridge(context.Background()), checkFail, "not found", "only the stand-in bridge", cai.BridgeEnv)
	wantCheck(t, d.checkBackend(context.Background()), checkFail, "backend coreai: nothing on this machine can serve", "no Core AI bridge was found")

	d = testDoctor(t)
	d.goos, d.repo, d.dataDir, d.backend = "darwin", repo, snaps["coreai"], wire.BackendRef
	d.bridges = []string{filepath.Join(t.TempDir(), cai.BridgeName)}
	wantCheck(t, d.checkBridge(context.Background()), checkOK, "not needed")
	wantCheck(t, d.checkBackend(context.Background()), checkFail, "backend ref: the snapshot has no export/", "--include-export")
	d.dataDir = snaps["both"]
	d.snapshot = ""
	wantCheck(t, d.checkBackend(context.Background()), checkOK, "backend ref chooses ref", "forced by config (backend ref)")
}

// Fake Macs of several sizes against the published wired-memory figures.
func TestDoctorMemoryOnFakeMachines(t *testing.T) {
	d := testDoctor(t)
	d.goos = "darwin"
	const G = 1 << 30
	cases := []struct {
		name           string
		mem            sysinfo.Memory
		reserve        uint64
		status         string
		plain, drafter string
	}{
		{"16 GB", sysinfo.Memory{Total: 16 * G, Available: 10 * G}, 4 * G, checkFail, "no entry", "no entry"},
		{"24 GB", sysinfo.Memory{Total: 24 * G, Available: 20 * G}, 4 * G, checkWarn, "32K", "16K"},
		{"32 GB", sysinfo.Memory{Total: 32 * G, Available: 28 * G}, 4 * G, checkOK, "64K", "64K"},
		{"32 GB, 12 GB reserve", sysinfo.Memory{Total: 32 * G, Available: 28 * G}, 12 * G, checkWarn, "32K", "16K"},
		{"20 GB", sysinfo.Memory{Total: 20 * G, Available: 18 * G}, 2 * G, checkWarn, "8K", "no entry"},
		{"64 GB", sysinfo.Memory{Total: 64 * G, Available: 50 * G}, 4 * G, checkOK, "64K", "64K"},
		{"128 GB in a 20 GB cgroup", sysinfo.Memory{Total: 128 * G, Available: 100 * G, CgroupLimit: 20 * G}, 0, checkWarn, "32K", "16K"},
	}
	t.Logf("%-26s %-6s %s", "machine", "status", "doctor's message")
	for _, tc := range cases {
		d.sys = &sysinfo.Static{Mem: tc.mem, Press: sysinfo.Pressure{Level: sysinfo.Normal}}
		d.cfg = config.Default()
		d.cfg.Memory.Reserve = config.ByteSize(tc.reserve)
		c := d.checkMemory(context.Background())
		t.Logf("%-26s %-6s %s", tc.name, c.Status, c.Message)
		wantCheck(t, c, tc.status, "fits "+tc.drafter+" with the drafter, "+tc.plain+" without")
		if tc.status != checkOK && c.Fix == "" {
			t.Errorf("%s: no fix", tc.name)
		}
	}
}

func TestDoctorMacChecksOnFakeMachines(t *testing.T) {
	d := testDoctor(t)
	d.goos = "darwin"
	d.bridges = []string{filepath.Join(t.TempDir(), "libCoreAIBridge.dylib")}
	for _, tc := range []struct {
		os, brand, model string
		osStatus         string
		chipStatus       string
		chipWant         string
	}{
		{"27.0", "Apple M6 Max", "Mac18,5", checkOK, checkOK, "bonded compile mode 2"},
		{"27.1", "Apple M5 Pro", "Mac17,2", checkOK, checkWarn, "M6"},
		{"26.4", "Apple M4 Pro", "Mac16,8", checkFail, checkFail, "older than M5"},
	} {
		gen, ane := sysinfo.NeuralEngineOf(tc.brand)
		d.sys = &sysinfo.Static{OSInfo: sysinfo.OS{Name: "macOS", Version: tc.os, Kernel: "25.0.0", Arch: "arm64"},
			ChipInfo: sysinfo.Chip{Brand: tc.brand, Model: tc.model, ANEGeneration: gen, NeuralEngine: ane}}
		wantCheck(t, d.checkOS(context.Background()), tc.osStatus, "macOS "+tc.os)
		wantCheck(t, d.checkChip(context.Background()), tc.chipStatus, tc.brand, tc.chipWant)
	}
	wantCheck(t, d.checkBridge(context.Background()), checkFail, "libCoreAIBridge.dylib not found", "packaging/bridge/build.sh")
	d.sys = &sysinfo.Static{DiskInfo: sysinfo.Disk{Free: 20e9}}
	warn := d.checkDisk(context.Background())
	wantCheck(t, warn, checkWarn, "18.6 GiB free", "compile cache (up to 13.0 GiB)", "needs up to 13.0 GiB")
	d.sys = &sysinfo.Static{DiskInfo: sysinfo.Disk{Free: 5e9}}
	fail := d.checkDisk(context.Background())
	wantCheck(t, fail, checkFail, "4.7 GiB free", "free space")
	noDecimalUnits(t, []doctorCheck{warn, fail})
}

func TestDoctorInvalidConfig(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "config.json")
	os.WriteFile(path, []byte(`{"update": {"interval": "5s"}}`), 0o644)
	d := newDoctor(path)
	wantCheck(t, d.checkConfig(context.Background()), checkFail, `update.interval: must be at least 1m, got "5s"`, path)
}

func TestDoctorPermissions(t *testing.T) {
	d := testDoctor(t)
	sockDir := filepath.Dir(d.socket)
	os.MkdirAll(sockDir, 0o755)
	os.MkdirAll(d.dataDir, 0o755)
	wantCheck(t, d.checkPermissions(context.Background()), checkOK, "socket directory")
	os.Chmod(d.dataDir, 0o777)
	wantCheck(t, d.checkPermissions(context.Background()), checkWarn, "data directory "+d.dataDir+" is writable by group or others", "chmod go-w")
	os.Chmod(sockDir, 0o777)
	wantCheck(t, d.checkPermissions(context.Background()), checkFail, "socket directory "+sockDir)
}

// A bundle pulled for real from the test hub verifies; one changed byte in
// the served snapshot makes the check fail, naming the file and the fix.
func TestDoctorCorruptedBundle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and pulls a synthetic bundle")
	}
	src := filepath.Join(t.TempDir(), "src")
	if _, err := synthbundle.Generate(src, synthbundle.Options{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	h := hubtest.New()
	defer h.Close()
	const repo = "anemll/doctor-test"
	if _, err := h.Publish(repo, src, "main"); err != nil {
		t.Fatal(err)
	}
	d := testDoctor(t)
	s, err := store.Open(d.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = hub.New(h.URL, "")
	res, err := s.Pull(context.Background(), repo, store.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantCheck(t, d.checkBundle(context.Background()), checkOK, "integrity PASS")
	wantCheck(t, d.checkDisk(context.Background()), find(t, d.run(context.Background()), "disk").Status, "nothing more (the bundle is installed)")

	// The largest file of the snapshot (a chunk's weights).
	var victim string
	var size int64
	filepath.Walk(res.Snapshot, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > size {
			victim, size = p, fi.Size()
		}
		return nil
	})
	rel, _ := filepath.Rel(res.Snapshot, victim)
	// Files are read-only hard links to blobs; flip one byte in place.
	os.Chmod(victim, 0o644)
	data, _ := os.ReadFile(victim)
	data[len(data)/2] ^= 1
	if err := os.WriteFile(victim, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c := d.checkBundle(context.Background())
	wantCheck(t, c, checkFail, "integrity FAIL", filepath.ToSlash(rel), "forgectl update rollback "+repo)
	t.Logf("corrupted: %s\n fix: %s", c.Message, c.Fix)
}
