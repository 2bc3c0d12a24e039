package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/bundle/synthbundle"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/service"
	"github.com/forgedaemon/forged/internal/sysinfo"
)

// shortDir is a temporary directory with a path short enough for sun_path.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dr")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

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
	r := d.run(context.Background())
	if r.Backend != "reference" {
		t.Errorf("backend %q", r.Backend)
	}
	wantCheck(t, find(t, r, "bridge"), checkOK, "not applicable: reference backend")
	wantCheck(t, find(t, r, "chip"), checkOK, "backend: reference")
	// Memory: the total as /proc/meminfo has it, read here independently.
	data, _ := os.ReadFile("/proc/meminfo")
	total, _, err := sysinfo.ParseMeminfo(data)
	if err != nil {
		t.Fatal(err)
	}
	mem := find(t, r, "memory")
	if !strings.HasPrefix(mem.Message, fmt.Sprintf("%.1f GiB RAM", float64(total)/(1<<30))) {
		t.Errorf("memory message %q does not start with the machine's %d bytes", mem.Message, total)
	}
	// Disk: the data directory does not exist yet; the filesystem above it is measured.
	disk := find(t, r, "disk")
	wantCheck(t, disk, disk.Status, d.dataDir, "the bundle (~15 GB)")
	// No daemon: the socket check fails, names the path and the fix.
	wantCheck(t, find(t, r, "socket"), checkFail, "no socket at "+d.socket, "forged start")
	wantCheck(t, find(t, r, "bundle"), checkWarn, "nothing downloaded yet", "forgectl pull anemll/doctor-test")
	wantCheck(t, find(t, r, "service"), checkWarn, "not installed", "forged install")
	wantCheck(t, find(t, r, "config"), checkOK, "defaults apply")
	if r.Fail != 1 || r.OK+r.Warn+r.Fail != len(r.Checks) {
		t.Errorf("counts %d/%d/%d over %d checks", r.OK, r.Warn, r.Fail, len(r.Checks))
	}
}

func TestDoctorCommandJSONAndExitStatus(t *testing.T) {
	dir := shortDir(t)
	out, _, err := runCtl(t, "", "doctor", "--json", "--config", filepath.Join(dir, "c.json"), "--socket", filepath.Join(dir, "none.sock"), "--data", filepath.Join(dir, "d"))
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "1 check(s) failed") {
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
	wantCheck(t, d.checkSocket(context.Background()), checkOK, d.socket+" answers", "protocol")
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
	wantCheck(t, d.checkSocket(context.Background()), checkFail, "stale socket at "+stale, "forged restart")

	// Something else at the path.
	d.socket = filepath.Join(dir, "file.sock")
	os.WriteFile(d.socket, []byte("x"), 0o644)
	wantCheck(t, d.checkSocket(context.Background()), checkFail, "is not a socket", "remove it")
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
	wantCheck(t, d.checkDisk(context.Background()), checkWarn, "20.0 GB free", "compile cache")
	d.sys = &sysinfo.Static{DiskInfo: sysinfo.Disk{Free: 5e9}}
	wantCheck(t, d.checkDisk(context.Background()), checkFail, "5.0 GB free", "free space")
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
