package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/cli/clitest"
	"github.com/forgedaemon/forged/internal/synthbundle"
)

// The bundle commands are tested as a real binary (a kill -9 needs a
// separate process), built once per test run.
var (
	bundleCLIOnce sync.Once
	bundleCLIPath string
	bundleCLIErr  error
)

func bundleCLI(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the forgectl binary; skipped with -short")
	}
	bundleCLIOnce.Do(func() {
		dir, err := os.MkdirTemp("", "forgectl-bin-")
		if err != nil {
			bundleCLIErr = err
			return
		}
		bundleCLIPath = filepath.Join(dir, "forgectl")
		out, err := exec.Command("go", "build", "-o", bundleCLIPath, ".").CombinedOutput()
		if err != nil {
			bundleCLIErr = errors.New(string(out))
		}
	})
	if bundleCLIErr != nil {
		t.Fatalf("go build forgectl: %v", bundleCLIErr)
	}
	return bundleCLIPath
}

func bundleCmd(t *testing.T, env []string, args ...string) *exec.Cmd {
	c := exec.Command(bundleCLI(t), args...)
	c.Env = append(os.Environ(), "HF_TOKEN=hf_cli_token", "FORGE_OFFLINE=")
	c.Env = append(c.Env, env...)
	return c
}

const cliRepo = "anemll/forge-cli-test"

// TestPullKill9ThenResume kills `forgectl pull` with SIGKILL in the middle
// of a 64 MiB file and reruns it: it completes, verifies, and re-downloads
// less than one part (8 MiB) of what the first run had received.
func TestPullKill9ThenResume(t *testing.T) {
	bin := bundleCLI(t)
	src := filepath.Join(t.TempDir(), "src")
	// One chunk package with one 64 MiB weight file.
	rel, err := synthbundle.Generate(src, synthbundle.Options{Seed: 5, Layers: 8, ChunkLayers: 8, TotalBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	big := "coreai/" + synthbundle.ChunkName(0, 7) + "/weights/weight-00.bin"
	f, _ := rel.File(big)
	h := hubtest.New()
	defer h.Close()
	h.Token = "hf_cli_token"
	commit, err := h.Publish(cliRepo, src, "main")
	if err != nil {
		t.Fatal(err)
	}
	const part = 8 << 20
	// The hub stalls at 44 MiB (inside the sixth 8 MiB part); the pull
	// fetches 1 MiB segments over 4 streams and checkpoints each one
	// hashed, so the verified prefix stops exactly there. (One stream per
	// file, the default, is covered by the hub package's resume tests.)
	stallAt := int64(44 << 20)
	h.Inject(hubtest.Fault{Kind: hubtest.Stall, Path: big, N: stallAt})
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"pull", "--json", "--config", filepath.Join(t.TempDir(), "none.json"), "--endpoint", h.URL, "--data", data, "--part-size", "8388608", "--streams", "4", cliRepo}

	first := exec.Command(bin, args...)
	first.Env = append(os.Environ(), "HF_TOKEN=hf_cli_token", "FORGE_OFFLINE=")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the checkpoint at the stall point is on disk, then kill -9.
	partial := filepath.Join(data, "partial", f.SHA256+".part")
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := os.Stat(partial)
		var cp struct{ Offset int64 }
		if raw, rerr := os.ReadFile(partial + ".state"); rerr == nil {
			json.Unmarshal(raw, &cp)
		}
		if err == nil && st.Size() >= stallAt && cp.Offset == stallAt {
			break
		}
		if time.Now().After(deadline) {
			first.Process.Kill()
			t.Fatalf("first pull never reached the stall point")
		}
		time.Sleep(20 * time.Millisecond)
	}
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	firstBytes := h.BytesServed(big)
	h.ClearFaults()

	second := exec.Command(bin, args...)
	second.Env = first.Env
	out, err := second.Output()
	if err != nil {
		t.Fatalf("second pull: %v\n%s", err, out)
	}
	var result struct {
		Event  string `json:"event"`
		Result struct {
			Commit       string `json:"commit"`
			ResumedBytes int64  `json:"resumed_bytes"`
			Report       struct {
				Status string `json:"status"`
			} `json:"report"`
		} `json:"result"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &result); err != nil || result.Event != "result" {
		t.Fatalf("last line is not the result: %q (%v)", lines[len(lines)-1], err)
	}
	refetched := firstBytes + (h.BytesServed(big) - firstBytes) - f.Bytes
	t.Logf("hub had sent %d of %d bytes at kill -9; resumed from %d; bytes downloaded again: %d (part size %d)",
		firstBytes, f.Bytes, result.Result.ResumedBytes, refetched, part)
	if result.Result.Commit != commit || result.Result.Report.Status != "PASS" {
		t.Fatalf("second pull result %+v", result.Result)
	}
	if result.Result.ResumedBytes != stallAt || refetched > part || refetched < 0 {
		t.Fatalf("re-downloaded %d bytes (resumed from %d), want at most one part of %d", refetched, result.Result.ResumedBytes, part)
	}
	// And the installed revision verifies in full from the command line.
	if out, err := bundleCmd(t, nil, "verify", "--data", data, "--repo", cliRepo, "--full").CombinedOutput(); err != nil {
		t.Fatalf("verify --full: %v\n%s", err, out)
	}
}

func TestVerifyCommandExitStatusAndJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	if _, err := synthbundle.Generate(dir, synthbundle.Options{Seed: 9}); err != nil {
		t.Fatal(err)
	}
	out, err := bundleCmd(t, nil, "verify", "--bundle", dir, "--json").Output()
	if err != nil {
		t.Fatalf("verify of a good bundle: %v\n%s", err, out)
	}
	var rep struct {
		Status        string `json:"status"`
		InferenceRun  *bool  `json:"inference_run"`
		VerifiedFiles int    `json:"verified_files"`
		Speculative   bool   `json:"speculative"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || rep.Status != "PASS" || rep.InferenceRun == nil || *rep.InferenceRun || !rep.Speculative {
		t.Fatalf("report %s (%v)", out, err)
	}
	// Break one file: exit status 2, and the failure names file and rule.
	p := filepath.Join(dir, "model", "tokenizer_config.json")
	os.WriteFile(p, []byte(`{"chat_template": "changed"}`), 0o644)
	cmd := bundleCmd(t, nil, "verify", "--bundle", dir)
	out, err = cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitVerifyFailed {
		t.Fatalf("exit = %v, want status %d", err, exitVerifyFailed)
	}
	if !strings.Contains(string(out), "FAIL model/tokenizer_config.json") || !strings.Contains(string(out), "[file.size]") {
		t.Fatalf("output does not name the file and rule:\n%s", out)
	}
	if _, err := bundleCmd(t, nil, "verify").Output(); err == nil {
		t.Fatal("verify without --repo or --bundle succeeded")
	}
}

// TestVerifySmokeNeedsMacOS: off macOS, --smoke fails before reading the
// bundle (the directory does not even exist) and says what it needs.
func TestVerifySmokeNeedsMacOS(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("the smoke test can run here")
	}
	missing := filepath.Join(t.TempDir(), "no-such-bundle")
	_, _, err := runCtl(t, "", "verify", "--smoke", "--bundle", missing)
	if err == nil {
		t.Fatal("verify --smoke succeeded on " + runtime.GOOS)
	}
	for _, want := range []string{"verify --smoke", "needs macOS", "bridge dylib libCoreAIBridge.dylib", "this is " + runtime.GOOS, "without --smoke"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), missing) {
		t.Errorf("error %q mentions the bundle: it should fail before reading it", err)
	}
	if smokeSupported("darwin") != nil {
		t.Error("smokeSupported(darwin) refused")
	}
}

func TestUpdateCommands(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	if _, err := synthbundle.Generate(src, synthbundle.Options{Seed: 12}); err != nil {
		t.Fatal(err)
	}
	h := hubtest.New()
	defer h.Close()
	h.Token = "hf_cli_token"
	v1, _ := h.Publish(cliRepo, src, "main")
	data := filepath.Join(t.TempDir(), "data")
	run := func(args ...string) []byte {
		t.Helper()
		out, err := bundleCmd(t, nil, args...).Output()
		if err != nil {
			t.Fatalf("forgectl %v: %v\n%s", args, err, out)
		}
		return out
	}
	noConfig := filepath.Join(t.TempDir(), "none.json")
	if out := string(run("pull", "--config", noConfig, "--endpoint", h.URL, "--data", data, cliRepo)); !strings.Contains(out, cliRepo+"@"+v1+": downloaded ") || !strings.Contains(out, "integrity PASS; installed as the served revision; ") {
		t.Fatalf("pull summary: %q", out)
	}
	changed, v2 := publishChange(t, h, cliRepo, src) // one chunk file changes

	var uc struct {
		UpToDate     bool     `json:"up_to_date"`
		ChangedFiles []string `json:"changed_files"`
	}
	json.Unmarshal(run("update", "check", "--json", "--endpoint", h.URL, "--data", data, cliRepo), &uc)
	if uc.UpToDate || len(uc.ChangedFiles) != 1 || uc.ChangedFiles[0] != changed {
		t.Fatalf("update check: %+v", uc)
	}
	if out := string(run("update", "apply", "--endpoint", h.URL, "--data", data, cliRepo)); !strings.HasPrefix(out, cliRepo+" now serves "+v2+" (previous "+v1+"); downloaded ") {
		t.Fatalf("update apply summary: %q", out)
	}
	var st struct{ Commit, Previous string }
	json.Unmarshal(run("update", "rollback", "--json", "--data", data, cliRepo), &st)
	if st.Commit != v1 || st.Previous != v2 {
		t.Fatalf("rollback: %+v, want %s (previous %s)", st, v1, v2)
	}
	var list []struct {
		Repo      string
		Current   string
		Snapshots []struct{ Commit string }
	}
	json.Unmarshal(run("bundle", "list", "--json", "--data", data), &list)
	if len(list) != 1 || list[0].Current != v1 || len(list[0].Snapshots) != 2 {
		t.Fatalf("bundle list: %+v", list)
	}
	var gc struct {
		Removed []string `json:"removed_snapshots"`
	}
	json.Unmarshal(run("gc", "--json", "--data", data), &gc)
	if len(gc.Removed) != 0 {
		t.Fatalf("gc removed a served or previous snapshot: %v", gc.Removed)
	}
	// Offline: no network; the installed revision is still reachable.
	off := bundleCmd(t, []string{"FORGE_OFFLINE=1"}, "pull", "--config", noConfig, "--endpoint", "http://127.0.0.1:1", "--data", data, "--revision", v1, cliRepo)
	if out, err := off.CombinedOutput(); err != nil || !strings.Contains(string(out), "already installed") {
		t.Fatalf("offline pull: %v\n%s", err, out)
	}
}

// `forgectl gc` while a pull holds the blob lock (taken here, shared, as a
// pull does) says it waits, and finishes once the lock is free.
func TestGCSaysItWaitsForAPull(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if _, err := store.Open(data); err != nil { // an (empty) store: gc refuses a directory that is none
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(data, "locks", "blobs.lock"), os.O_RDWR|os.O_CREATE, 0o600) // as the store makes it: a 0644 one is replaced
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	c := bundleCmd(t, nil, "gc", "--data", data)
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	c.Stdout = &stdout
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "waiting") {
				said <- sc.Text()
			}
		}
		close(said)
	}()
	select {
	case line, ok := <-said:
		if !ok || !strings.Contains(line, "pull") {
			t.Fatalf("gc waiting for the blob lock said %q", line)
		}
	case <-time.After(30 * time.Second):
		c.Process.Kill()
		t.Fatal("gc said nothing while the blob lock was held")
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if err := c.Wait(); err != nil || !strings.HasPrefix(stdout.String(), "removed 0 snapshot(s), 0 blob(s)") {
		t.Fatalf("gc after the lock was freed: %v, %q", err, stdout.String())
	}
}

// publishBundle publishes a synthetic bundle as repo (clitest.PublishBundle).
func publishBundle(t *testing.T, h *hubtest.Hub, repo string, withExport bool, seed uint64) string {
	t.Helper()
	return clitest.PublishBundle(t, h, repo, withExport, seed)
}

// pretendHost makes forgectl pull decide for goos with a bridge probe that
// answers br, until the test ends.
func pretendHost(t *testing.T, goos string, br modelbackend.Bridge) {
	old := testMachine
	testMachine = machine{goos, func(string) modelbackend.Bridge { return br }}
	t.Cleanup(func() { testMachine = old })
}

type pullJSONResult struct {
	Event  string `json:"event"`
	Result struct {
		Commit   string `json:"commit"`
		Snapshot string `json:"snapshot"`
	} `json:"result"`
	Backend string `json:"backend"`
	Why     string `json:"backend_why"`
	Warning string `json:"warning"`
}

func lastPullResult(t *testing.T, out string) pullJSONResult {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var r pullJSONResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || r.Event != "result" {
		t.Fatalf("last line is not the result: %q (%v)", lines[len(lines)-1], err)
	}
	return r
}

func hasExport(snapshot string) bool {
	_, err := os.Stat(filepath.Join(snapshot, "export", ref.SmallFile))
	return err == nil
}

// On Linux a pull takes export/ by default when the release has one, and
// says the reference engine serves it; --include-export=false leaves it
// out and warns with the reason and its fix; a default pull into the same
// store then adds export/.
func TestPullOnLinuxTakesExportAndNamesTheBackend(t *testing.T) {
	pretendHost(t, "linux", modelbackend.Bridge{Err: errors.New("the bridge must not be probed on linux under auto")})
	t.Setenv("FORGE_OFFLINE", "")
	h := hubtest.New()
	defer h.Close()
	const repo = "anemll/forge-export-test"
	commit := publishBundle(t, h, repo, true, 21)
	cfg := filepath.Join(t.TempDir(), "none.json") // no config file: backend auto

	data := filepath.Join(t.TempDir(), "data")
	out, errOut, err := runCtl(t, "", "pull", "--config", cfg, "--endpoint", h.URL, "--data", data, repo)
	if err != nil {
		t.Fatalf("pull: %v\n%s", err, errOut)
	}
	wantSummary := repo + "@" + commit + ": downloaded "
	wantTail := "integrity PASS; installed as the served revision; served here by ref (auto: Core AI needs macOS (this is linux); the snapshot carries export/, served by the reference engine on the CPU)\n"
	if !strings.HasPrefix(out, wantSummary) || !strings.HasSuffix(out, wantTail) {
		t.Fatalf("summary %q, want %q…%q", out, wantSummary, wantTail)
	}
	if strings.Contains(errOut, "warning") {
		t.Errorf("unexpected warning: %s", errOut)
	}
	snap := filepath.Join(data, "snapshots")
	st, err := (&store.Store{Root: data}).ServedDir(repo)
	if err != nil || !hasExport(st) {
		t.Fatalf("served snapshot %q (%v) has no export/%s (under %s)", st, err, ref.SmallFile, snap)
	}

	// Explicitly without export/: the warning names the reason and the fix.
	data2 := filepath.Join(t.TempDir(), "data")
	out, errOut, err = runCtl(t, "", "pull", "--config", cfg, "--endpoint", h.URL, "--data", data2, "--include-export=false", "--json", repo)
	if err != nil {
		t.Fatalf("pull --include-export=false: %v\n%s", err, errOut)
	}
	r := lastPullResult(t, out)
	const reason = "this bundle carries only Core AI packages; the Core AI bridge is not available on linux: pull with --include-export to serve it on the CPU"
	if r.Backend != "" || r.Warning != reason || hasExport(r.Result.Snapshot) {
		t.Fatalf("--include-export=false result: %+v (export present: %v)", r, hasExport(r.Result.Snapshot))
	}
	if !strings.Contains(errOut, "forgectl: warning: nothing on this machine can serve "+repo+"@"+commit+": "+reason) {
		t.Errorf("stderr lacks the warning: %q", errOut)
	}
	// The same store, default selection: export/ is added now.
	out, errOut, err = runCtl(t, "", "pull", "--config", cfg, "--endpoint", h.URL, "--data", data2, "--json", repo)
	if err != nil {
		t.Fatalf("second pull: %v\n%s", err, errOut)
	}
	if r = lastPullResult(t, out); r.Backend != "ref" || r.Warning != "" || !hasExport(r.Result.Snapshot) {
		t.Fatalf("default pull after --include-export=false: %+v", r)
	}
}

// A release without export/: the default pull on Linux does not ask for
// it (the release has none, so that would fail) and warns, adding that
// --include-export cannot help; asking for it explicitly is refused.
func TestPullOnLinuxOfCoreAIOnlyBundleWarns(t *testing.T) {
	pretendHost(t, "linux", modelbackend.Bridge{})
	t.Setenv("FORGE_OFFLINE", "")
	h := hubtest.New()
	defer h.Close()
	const repo = "anemll/forge-coreai-only"
	commit := publishBundle(t, h, repo, false, 22)
	cfg := filepath.Join(t.TempDir(), "none.json")
	data := filepath.Join(t.TempDir(), "data")
	out, errOut, err := runCtl(t, "", "pull", "--config", cfg, "--endpoint", h.URL, "--data", data, repo)
	if err != nil {
		t.Fatalf("pull: %v\n%s", err, errOut)
	}
	if !strings.HasSuffix(out, "integrity PASS; installed as the served revision; nothing on this machine can serve it (see the warning)\n") {
		t.Errorf("summary %q", out)
	}
	for _, want := range []string{"warning: nothing on this machine can serve " + repo + "@" + commit,
		"pull with --include-export to serve it on the CPU", "this release publishes no export/, so only a Mac with the Core AI bridge can serve it"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	_, _, err = runCtl(t, "", "pull", "--config", cfg, "--endpoint", h.URL, "--data", filepath.Join(t.TempDir(), "d"), "--include-export", repo)
	if err == nil || !strings.Contains(err.Error(), "no export component") {
		t.Fatalf("explicit --include-export of a release without export/: %v", err)
	}
}

// On a Mac under auto the export is not downloaded and Core AI serves;
// without a bridge the warning says how to get one; a config that forces
// ref takes export/ on the Mac too.
func TestPullOnMacFollowsTheBackend(t *testing.T) {
	t.Setenv("FORGE_OFFLINE", "")
	h := hubtest.New()
	defer h.Close()
	const repo = "anemll/forge-mac-test"
	publishBundle(t, h, repo, true, 23)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "none.json")
	pull := func(args ...string) pullJSONResult {
		t.Helper()
		args = append([]string{"pull", "--json", "--endpoint", h.URL, "--data", filepath.Join(t.TempDir(), "data")}, append(args, repo)...)
		out, errOut, err := runCtl(t, "", args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut)
		}
		return lastPullResult(t, out)
	}

	pretendHost(t, "darwin", modelbackend.Bridge{Path: "/opt/forged/lib/forged/libCoreAIBridge.dylib", Release: "CoreAIBridge 1"})
	r := pull("--config", cfg)
	if hasExport(r.Result.Snapshot) || r.Backend != "coreai" || !strings.Contains(r.Why, "bridge at /opt/forged/lib/forged/libCoreAIBridge.dylib loads") {
		t.Fatalf("Mac with a bridge: %+v (export present: %v)", r, hasExport(r.Result.Snapshot))
	}

	pretendHost(t, "darwin", modelbackend.Bridge{Tried: []string{"/a/libCoreAIBridge.dylib"}, Err: cai.ErrBridgeNotFound})
	r = pull("--config", cfg)
	if r.Backend != "" || !strings.Contains(r.Warning, "packaging/bridge/build.sh") || !strings.Contains(r.Warning, "looked in /a/libCoreAIBridge.dylib") {
		t.Fatalf("Mac without a bridge: %+v", r)
	}

	forced := filepath.Join(dir, "ref.json")
	os.WriteFile(forced, []byte(`{"backend": "ref"}`), 0o644)
	r = pull("--config", forced)
	if !hasExport(r.Result.Snapshot) || r.Backend != "ref" || r.Why != "forced by config (backend ref)" {
		t.Fatalf("Mac with backend ref: %+v", r)
	}

	// A broken config file is an error naming it, not a silent default.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"backend": "gpu"}`), 0o644)
	if _, _, err := runCtl(t, "", "pull", "--config", bad, "--endpoint", h.URL, "--data", filepath.Join(dir, "d"), repo); err == nil || !strings.Contains(err.Error(), "bad.json") || !strings.Contains(err.Error(), "backend") {
		t.Fatalf("bad config: %v", err)
	}
}

// Commands that read a store never create one: gc, bundle list, verify
// and update rollback on a directory with no store name it and how a store
// is made, and leave nothing behind.
func TestReadersDoNotCreateAStore(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent")
	empty := t.TempDir()
	for _, dir := range []string{missing, empty} {
		for _, args := range [][]string{
			{"gc", "--data", dir},
			{"bundle", "list", "--data", dir},
			{"verify", "--data", dir, "--repo", "a/b"},
			{"update", "rollback", "--local", "--data", dir, "a/b"},
		} {
			_, _, err := runCtl(t, "", args...)
			if err == nil || !strings.Contains(err.Error(), "no bundle store at "+dir) || !strings.Contains(err.Error(), "forgectl pull --data") {
				t.Errorf("%v: %v, want no bundle store at %s with the fix", args, err, dir)
			}
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("%s was created: %v", missing, err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("the empty directory now holds %d entries", len(ents))
	}
}
