package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/synthbundle"
)

// configDaemon runs a real daemon following a config file, as forged run
// --config does.
func configDaemon(t *testing.T, content string) (sock, cfgPath string) {
	t.Helper()
	cfgPath = filepath.Join(shortDir(t), "config.json")
	if err := os.WriteFile(cfgPath, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	sock, srv := serveDaemon(t, fakeengine.New(fakeengine.Options{}))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// Started with the defaults: the file's differences apply at once.
	if _, err := srv.WatchConfig(ctx, cfgPath, config.Default(), daemon.ConfigHooks{}); err != nil {
		t.Fatal(err)
	}
	return sock, cfgPath
}

func TestConfigGetAndSet(t *testing.T) {
	sock, cfgPath := configDaemon(t, `{"keep_alive": "10m", "limits": {"per_caller": 3}}`)
	out, _, err := runCtl(t, "", "config", "get", "--socket", sock)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`limits\.max_frame +1048576\n`, `limits\.per_caller +3\n`, `limits\.per_uid +16\n`, `file +` + regexp.QuoteMeta(cfgPath) + `\n`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("config get lacks %q:\n%s", want, out)
		}
	}
	// The file's name (what config set takes), or the protocol's.
	for _, key := range []string{"limits.per_caller", "per_caller"} {
		if out, _, err = runCtl(t, "", "config", "get", key, "--socket", sock); err != nil || out != "3\n" {
			t.Fatalf("config get %s: %v %q", key, err, out)
		}
	}
	if out, _, err = runCtl(t, "", "config", "get", "file", "--json", "--socket", sock); err != nil || out != `"`+cfgPath+"\"\n" {
		t.Fatalf("config get file --json: %v %q", err, out)
	}
	if _, _, err = runCtl(t, "", "config", "get", "keep_alive", "--socket", sock); err == nil ||
		!strings.Contains(err.Error(), `no key "keep_alive" (the daemon reports no keep-alive`) || !strings.Contains(err.Error(), "it has limits.max_frame, max_depth") {
		t.Fatalf("config get of a key it lacks: %v", err)
	}

	out, _, err = runCtl(t, "", "config", "set", "limits.per_caller", "7", "--socket", sock)
	if err != nil || out != "changed: limits.per_caller\n" {
		t.Fatalf("config set limits.per_caller 7: %v %q", err, out)
	}
	var file struct {
		KeepAlive string `json:"keep_alive"`
		Limits    struct {
			PerCaller any `json:"per_caller"`
		} `json:"limits"`
	}
	data, _ := os.ReadFile(cfgPath)
	if json.Unmarshal(data, &file) != nil || file.Limits.PerCaller != 7.0 || file.KeepAlive != "10m" {
		t.Fatalf("file after config set (want per_caller the number 7, keep_alive kept):\n%s", data)
	}
	out, _, err = runCtl(t, "", "config", "get", "--json", "--socket", sock)
	var v wire.ConfigValues
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.PerCaller != 7 || v.File != cfgPath {
		t.Fatalf("config get --json after set: %v %s", err, out)
	}
	out, _, err = runCtl(t, "", "config", "set", "keep_alive", "5m", "--json", "--socket", sock)
	var res wire.ConfigSetResult
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || !reflect.DeepEqual(res.Changed, []string{"keep_alive"}) || len(res.RestartNeeded) != 0 {
		t.Fatalf("config set keep_alive 5m --json: %v %s", err, out)
	}
	out, _, err = runCtl(t, "", "config", "set", "data_dir", filepath.Join(filepath.Dir(cfgPath), "elsewhere"), "--socket", sock)
	if err != nil || !strings.Contains(out, "restart forged to apply: data_dir") {
		t.Fatalf("config set data_dir: %v %q", err, out)
	}

	// Bad keys and values are refused by name and leave the file as it was.
	before, _ := os.ReadFile(cfgPath)
	for _, bad := range []struct{ key, value, want string }{
		{"limits.nope", "1", "limits.nope"},
		{"keep_alive", "soon", "keep_alive"},
		{"limits.per_caller", "0", "per_caller"},
		{"Keep_Alive", "5m", "lowercase"},
	} {
		_, _, err := runCtl(t, "", "config", "set", bad.key, bad.value, "--socket", sock)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeBadRequest || !strings.Contains(we.Message, bad.want) {
			t.Errorf("config set %s %s: got %v, want bad_request naming %q", bad.key, bad.value, err, bad.want)
		}
	}
	_, _, err = runCtl(t, "", "config", "set", "--socket", sock, "limits.per_caller", "--", "-2")
	if err == nil || !strings.Contains(err.Error(), "per_caller") || !strings.Contains(err.Error(), "bad_request") {
		t.Errorf("config set limits.per_caller -- -2: %v", err)
	}
	// A negative value is an argument without "--", before or after the
	// flags: the daemon answers (it was "unknown shorthand flag: '1' in -1s").
	for _, args := range [][]string{
		{"config", "set", "keep_alive", "-1s", "--socket", sock},
		{"config", "set", "--socket", sock, "keep_alive", "-1s", "--json"},
		{"config", "set", "--socket=" + sock, "limits.per_caller", "-2"},
	} {
		_, _, err := runCtl(t, "", args...)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeBadRequest || !strings.Contains(we.Message, "negative") && !strings.Contains(we.Message, "per_caller") {
			t.Errorf("%v: got %v, want the daemon's bad_request", args, err)
		}
		if slices.Contains(args, "-1s") && (err == nil || !strings.Contains(err.Error(), "forgectl pin")) {
			t.Errorf("%v: %v does not say how to never unload", args, err)
		}
	}
	if after, _ := os.ReadFile(cfgPath); !bytes.Equal(before, after) {
		t.Errorf("a refused config set changed the file:\n%s\n→\n%s", before, after)
	}

	// A daemon without a config file, and no daemon at all.
	_, _, err = runCtl(t, "", "config", "set", "keep_alive", "5m", "--socket", startDaemon(t))
	if err == nil || !strings.Contains(err.Error(), "unavailable") || !strings.Contains(err.Error(), "without --config") {
		t.Errorf("config set on a daemon without a file: %v", err)
	}
	if _, _, err = runCtl(t, "", "config", "get", "--socket", filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "forged is not running at") {
		t.Errorf("config get without a daemon: %v", err)
	}
}

func TestConfigValueFromArgument(t *testing.T) {
	for _, c := range []struct {
		arg      string
		asString bool
		want     any
	}{
		{"8", false, int64(8)},
		{"0.5", false, 0.5},
		{"5m", false, "5m"},
		{`"8"`, false, "8"},
		{"8", true, "8"},
		{"true", false, true},
		{`["alice", 1000]`, false, []any{"alice", int64(1000)}},
		{`{"auto": false}`, false, map[string]any{"auto": false}},
		{"1 2", false, "1 2"}, // two JSON values are text
		{"[1", false, "[1"},
	} {
		got, err := configValue(c.arg, c.asString)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("configValue(%q, %v) = %#v, %v; want %#v", c.arg, c.asString, got, err, c.want)
		}
	}
	for _, bad := range []string{"null", "[null]", "1e999"} {
		if _, err := configValue(bad, false); err == nil || !strings.Contains(err.Error(), "VALUE") {
			t.Errorf("configValue(%q): %v, want an error about VALUE", bad, err)
		}
	}
}

// storeDaemon runs a real daemon serving repo from a store that pulls from
// a real HTTP hub (the engine is the fake one).
func storeDaemon(t *testing.T, h *hubtest.Hub, repo string) (string, *store.Store) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	st.Client, st.MarginBytes = hub.New(h.URL, ""), 1<<20
	// As forged run --repo: unavailable until the store's revision loads.
	sock, srv := serveDaemon(t, daemon.Unavailable{Reason: "loading", Bundle: wire.Bundle{Repo: repo}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := srv.ServeStore(ctx, daemon.Bundles{Store: st, Repo: repo, KeepAlive: -1,
		Open: func(dir, commit string) (daemon.Backend, error) {
			return servedAs{fakeengine.New(fakeengine.Options{Revision: commit}), repo}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	return sock, st
}

// publishChange changes one chunk file of the bundle in src, rebuilds its
// inventory and publishes it as the new main: the changed path and commit.
func publishChange(t *testing.T, h *hubtest.Hub, repo, src string) (changed, commit string) {
	t.Helper()
	changed = "coreai/" + synthbundle.ChunkName(4, 7) + "/weights/weight-00.bin"
	if err := os.WriteFile(filepath.Join(src, changed), []byte("new weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := bundle.LoadRelease(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := bundle.BuildInventory(src, rel); err != nil {
		t.Fatal(err)
	}
	if err := rel.Write(src); err != nil {
		t.Fatal(err)
	}
	commit, err = h.Publish(repo, src, "main")
	if err != nil {
		t.Fatal(err)
	}
	return changed, commit
}

// servedAs is the fake engine reporting the repository it was opened from.
type servedAs struct {
	*fakeengine.Engine
	repo string
}

func (b servedAs) Model() daemon.ModelInfo {
	m := b.Engine.Model()
	m.Bundle.Repo = b.repo
	return m
}

// update and verify go through the running daemon: it installs, checks,
// switches, verifies and rolls back the revision it serves.
func TestUpdateAndVerifyThroughDaemon(t *testing.T) {
	const repo = "anemll/forge-ctl-daemon"
	src := filepath.Join(t.TempDir(), "src")
	if _, err := synthbundle.Generate(src, synthbundle.Options{Seed: 21}); err != nil {
		t.Fatal(err)
	}
	h := hubtest.New()
	defer h.Close()
	v1, _ := h.Publish(repo, src, "main")
	sock, st := storeDaemon(t, h, repo)
	ctl := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, err := runCtl(t, "", append(args, "--socket", sock)...)
		if err != nil {
			t.Fatalf("forgectl %v: %v\n%s%s", args, err, out, errOut)
		}
		return out, errOut
	}
	if out, _ := ctl("update", "apply"); !strings.HasPrefix(out, repo+" now serves "+v1+" (previous (none)); downloaded ") {
		t.Fatalf("first update apply: %q", out)
	}
	var uc store.UpdateCheck
	if out, _ := ctl("update", "check", "--json"); json.Unmarshal([]byte(out), &uc) != nil || !uc.UpToDate || uc.Latest != v1 || uc.Repo != repo {
		t.Fatalf("update check after install: %s", out)
	}

	changed, v2 := publishChange(t, h, repo, src)
	if out, _ := ctl("update", "check", repo); !strings.HasPrefix(out, repo+": "+v1+" -> "+v2+", 1 changed file(s), ") || !strings.HasSuffix(out, "\n  "+changed+"\n") {
		t.Fatalf("update check with a new revision: %q", out)
	}
	out, _ := ctl("update", "apply", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last struct {
		Event  string          `json:"event"`
		Result wire.PullResult `json:"result"`
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || last.Event != "result" || last.Result.Serving != v2 || last.Result.Previous != v1 {
		t.Fatalf("update apply --json result line: %s", lines[len(lines)-1])
	}
	var kinds []string
	for _, l := range lines[:len(lines)-1] {
		var e store.Event
		if json.Unmarshal([]byte(l), &e) != nil || e.Kind == "" {
			t.Fatalf("progress line %q", l)
		}
		kinds = append(kinds, e.Kind)
	}
	if !strings.Contains(strings.Join(kinds, " "), "installed") {
		t.Errorf("progress events %v lack installed", kinds)
	}

	var vr wire.VerifyResult
	if out, _ := ctl("verify", "--json", "--full"); json.Unmarshal([]byte(out), &vr) != nil || vr.Status != "PASS" || vr.Commit != v2 || vr.HashedBytes == 0 {
		t.Fatalf("verify --full through the daemon: %s", out)
	}
	if out, _ := ctl("update", "rollback"); out != repo+" now serves "+v1+" (previous "+v2+")\n" {
		t.Fatalf("update rollback: %q", out)
	}
	if cur, _ := st.Current(repo); cur.Commit != v1 {
		t.Fatalf("store serves %s after rollback, want %s", cur.Commit, v1)
	}

	// The wrong repository, and a daemon that serves no store, are refused.
	if _, _, err := runCtl(t, "", "update", "check", "other/repo", "--socket", sock); err == nil || !strings.Contains(err.Error(), "serves "+repo+", not other/repo") {
		t.Errorf("update check of another repo: %v", err)
	}
	if _, _, err := runCtl(t, "", "verify", "--socket", startDaemon(t)); err == nil || !strings.Contains(err.Error(), "no bundle store") || !strings.Contains(err.Error(), "--local") {
		t.Errorf("verify on a daemon without a store: %v", err)
	}

	// No daemon: the store directly, said on stderr; --repo is then needed.
	t.Setenv("FORGE_DATA", st.Root)
	none := filepath.Join(t.TempDir(), "none")
	out, errOut, err := runCtl(t, "", "verify", "--repo", repo, "--socket", none)
	if err != nil || !strings.HasPrefix(out, "integrity PASS") || !strings.Contains(errOut, "forged is not running at "+none) {
		t.Fatalf("verify without a daemon: %v\n%s%s", err, out, errOut)
	}
	if _, _, err := runCtl(t, "", "verify", "--socket", none); err == nil || !strings.Contains(err.Error(), "give --repo REPO or --bundle DIR") {
		t.Errorf("verify without a daemon or --repo: %v", err)
	}
	if _, _, err := runCtl(t, "", "update", "rollback", "--socket", none); err == nil || !strings.Contains(err.Error(), "give REPO") {
		t.Errorf("update rollback without a daemon or REPO: %v", err)
	}

	// A damaged served file: FAIL through the daemon, exit status 2.
	served := filepath.Join(st.SnapshotDir(repo, v1), changed)
	os.Chmod(served, 0o644)
	if err := os.WriteFile(served, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCtl(t, "", "verify", "--full", "--socket", sock)
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != exitVerifyFailed || !strings.Contains(out, "integrity FAIL: "+repo+"@"+v1) || !strings.Contains(out, "FAIL "+changed) {
		t.Fatalf("verify of a damaged snapshot: %v\n%s", err, out)
	}
}

// load, pin, unload and shutdown drive a real daemon's residency.
func TestResidencyCommands(t *testing.T) {
	opts := fakeengine.Options{TokenDelay: 5 * time.Millisecond}
	sock, srv := serveDaemon(t, fakeengine.New(opts))
	srv.EnableResidency(daemon.ResidencyOptions{Bundle: "fake/instant@1",
		Load: func(context.Context) (daemon.Backend, error) { return fakeengine.New(opts), nil }})
	ctl := func(args ...string) string {
		t.Helper()
		out, _, err := runCtl(t, "", append(args, "--socket", sock)...)
		if err != nil {
			t.Fatalf("forgectl %v: %v", args, err)
		}
		return out
	}
	if out := ctl("load"); out != "model ready\n" {
		t.Fatalf("load: %q", out)
	}
	var r wire.ResidencyResult
	if out := ctl("pin", "--json"); json.Unmarshal([]byte(out), &r) != nil || r != (wire.ResidencyResult{State: "ready", Pinned: true}) {
		t.Fatalf("pin --json: %s", out)
	}
	if out := ctl("pin", "--off"); out != "model ready\n" {
		t.Fatalf("pin --off: %q", out)
	}

	// A generation is running: unload is busy, unload --force cancels it.
	c, err := cli.Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stream := c.Generate(context.Background(), wire.GenerateArgs{IDs: []uint32{104}, MaxTokens: ptr(uint64(2000))})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		st, err := c.Status(context.Background())
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("the generation never started: %v", err)
		}
		if st.Running == 1 {
			break
		}
	}
	_, _, err = runCtl(t, "", "unload", "--socket", sock)
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeBusy {
		t.Fatalf("unload while generating: %v, want busy", err)
	}
	if out := ctl("unload", "--force"); !strings.HasPrefix(out, "model unloaded (unload requested by uid ") {
		t.Fatalf("unload --force: %q", out)
	}
	if _, err := stream.Result(); !errors.As(err, &we) || we.Code != wire.CodeCancelled {
		t.Fatalf("the generation after unload --force: %v, want cancelled", err)
	}

	// A daemon without residency control says so; shutdown stops this one.
	if _, _, err := runCtl(t, "", "load", "--socket", startDaemon(t)); err == nil || !strings.Contains(err.Error(), "no residency control") {
		t.Errorf("load without residency control: %v", err)
	}
	if out := ctl("shutdown"); out != "forged at "+sock+" is shutting down\n" {
		t.Fatalf("shutdown: %q", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _, err := runCtl(t, "", "status", "--socket", sock)
		if err != nil && strings.Contains(err.Error(), "forged is not running at") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon still answers 5s after shutdown: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

// config get shows keep_alive under the name config set takes, as the
// file writes a duration; the protocol's keep_alive_ms still answers.
func TestConfigGetKeepAliveName(t *testing.T) {
	for _, c := range []struct {
		ms   int64
		want string
	}{{600000, "10m"}, {-1, "never"}, {90000, "1m30s"}, {5400000, "1h30m"}, {3600000, "1h"}, {1500, "1.5s"}} {
		if got := keepAliveText(c.ms); got != c.want {
			t.Errorf("keepAliveText(%d) = %q, want %q", c.ms, got, c.want)
		}
	}
	v := &wire.ConfigValues{MaxFrame: 8, PerCaller: 3, KeepAliveMS: ptr(int64(300000))}
	var out bytes.Buffer
	if err := showConfig(&out, v, "", false); err != nil || !strings.Contains(out.String(), "keep_alive ") || strings.Contains(out.String(), "keep_alive_ms") ||
		!strings.Contains(out.String(), "5m\n") {
		t.Errorf("config get: %v\n%s", err, out.String())
	}
	for key, want := range map[string]string{"keep_alive": "5m\n", "keep_alive_ms": "300000\n", "limits.per_caller": "3\n"} {
		out.Reset()
		if err := showConfig(&out, v, key, false); err != nil || out.String() != want {
			t.Errorf("config get %s: %v %q, want %q", key, err, out.String(), want)
		}
	}
	out.Reset()
	if err := showConfig(&out, v, "keep_alive", true); err != nil || out.String() != "\"5m\"\n" {
		t.Errorf("config get keep_alive --json: %v %q", err, out.String())
	}
	// keep_alive 0s (unload as soon as idle) is a value, not an absence.
	v.KeepAliveMS = ptr(int64(0))
	for key, want := range map[string]string{"keep_alive": "0s\n", "keep_alive_ms": "0\n"} {
		out.Reset()
		if err := showConfig(&out, v, key, false); err != nil || out.String() != want {
			t.Errorf("config get %s with keep_alive 0s: %v %q, want %q", key, err, out.String(), want)
		}
	}
}
