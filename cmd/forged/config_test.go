package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/refdata"
)

// tokenizerModel is the repository's Qwen3 tokenizer directory.
func tokenizerModel(t *testing.T) string {
	t.Helper()
	return filepath.Dir(refdata.Path(t, "qwen3", "tokenizer.json"))
}

// writeConfig writes a config file the way an editor that saves atomically
// does: a new file renamed over the old one.
func writeConfig(t *testing.T, path string, v any) {
	t.Helper()
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.MarshalIndent(v, "", "  "); err != nil {
			t.Fatal(err)
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// configDaemon starts forged run --config with a file holding keys (plus
// the test's socket, data dir and log level) serving the real tokenizer.
func configDaemon(t *testing.T, keys map[string]any) (cfgPath string, c *client.Client, states <-chan wire.StateEvent) {
	t.Helper()
	dir, _ := os.MkdirTemp("", "fcfg") // short: socket paths are limited to 104 bytes
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfgPath = filepath.Join(dir, "etc", "config.json")
	os.MkdirAll(filepath.Dir(cfgPath), 0o755)
	keys["socket"] = filepath.Join(dir, "s.sock")
	keys["data_dir"] = filepath.Join(dir, "data")
	keys["log_level"] = "error"
	writeConfig(t, cfgPath, keys)
	sock, stop := startDaemon(t, runFlags{config: cfgPath, socket: keys["socket"].(string), model: tokenizerModel(t), tokenizerOnly: true, revision: "ref-1", frameTimeout: time.Second})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("run returned %v", err)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	c, err := client.Dial(ctx, sock, client.Options{Name: "config-test"})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan wire.StateEvent, 64)
	go func() {
		for ev, err := range c.Subscribe(ctx) {
			if err != nil {
				return
			}
			ch <- ev
		}
	}()
	t.Cleanup(func() { cancel(); c.Close() })
	return cfgPath, c, ch
}

// waitState waits for a state event whose reason contains want.
func waitState(t *testing.T, states <-chan wire.StateEvent, want string) wire.StateEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-states:
			if strings.Contains(ev.Reason, want) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no state event mentioning %q within 10s", want)
		}
	}
}

// keepAliveIs reports whether config.get reported keep_alive_ms as ms.
func keepAliveIs(v *wire.ConfigValues, ms int64) bool {
	return v.KeepAliveMS != nil && *v.KeepAliveMS == ms
}

// keep_alive "0s" means one thing from the file to config.get to
// config.set: unload as soon as idle. config.get reports it as 0 (it used
// to be stored as 1 ns and omitted), config.set takes what get reported
// back without a change, and the model is in fact unloaded once idle.
func TestRunConfigKeepAliveZeroRoundTrip(t *testing.T) {
	path, c, states := configDaemon(t, map[string]any{"keep_alive": "0s"})
	ctx := context.Background()
	v := configGet(t, c)
	if !keepAliveIs(v, 0) {
		t.Fatalf("config.get keep_alive_ms = %v with keep_alive \"0s\" in the file, want 0", v.KeepAliveMS)
	}
	waitState(t, states, "keep-alive 0s") // the preloaded model unloads once idle
	var res wire.ConfigSetResult
	if err := c.Admin(ctx, wire.OpConfigSet, wire.ConfigSetArgs{Key: "keep_alive", Value: "0s"}, &res); err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &file); err != nil || len(res.Changed) != 0 || file["keep_alive"] != "0s" {
		t.Fatalf("setting the value config.get reported changed %v; file %s", res.Changed, data)
	}
	if err := c.Admin(ctx, wire.OpConfigSet, wire.ConfigSetArgs{Key: "keep_alive", Value: "5m"}, &res); err != nil {
		t.Fatal(err)
	}
	if v := configGet(t, c); !keepAliveIs(v, 300_000) {
		t.Fatalf("after config.set 5m: keep_alive_ms %v", v.KeepAliveMS)
	}
	if err := c.Admin(ctx, wire.OpConfigSet, wire.ConfigSetArgs{Key: "keep_alive", Value: "0s"}, &res); err != nil {
		t.Fatal(err)
	}
	if v := configGet(t, c); !keepAliveIs(v, 0) || len(res.Changed) != 1 || res.Changed[0] != "keep_alive" {
		t.Fatalf("after config.set 0s: keep_alive_ms %v, changed %v", v.KeepAliveMS, res.Changed)
	}
}

func configGet(t *testing.T, c *client.Client) *wire.ConfigValues {
	t.Helper()
	v, err := c.ConfigGet(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The installed services run forged run --config FILE: the file's values
// are in force, a bad edit is refused while the daemon keeps serving with
// the old values, and a good edit of keep_alive applies live.
func TestRunConfigFileEdits(t *testing.T) {
	path, c, states := configDaemon(t, map[string]any{"keep_alive": "10m", "limits": map[string]any{"per_caller": 3}})
	ctx := context.Background()
	v := configGet(t, c)
	if !keepAliveIs(v, 600_000) || v.PerCaller != 3 || v.File != path {
		t.Fatalf("config.get after start: %+v", v)
	}

	writeConfig(t, path, []byte(`{"keep_alive": "soon", "limits": {"per_caller": 5}}`))
	ev := waitState(t, states, "rejected")
	if !strings.Contains(ev.Reason, "keep_alive") {
		t.Errorf("rejection event does not name the key: %q", ev.Reason)
	}
	if v := configGet(t, c); !keepAliveIs(v, 600_000) || v.PerCaller != 3 {
		t.Fatalf("a bad edit changed the config in force: %+v", v)
	}
	if ids, err := c.Tokenize(ctx, "hello world"); err != nil || len(ids) != 2 {
		t.Fatalf("not serving after a bad edit: %v %v", ids, err)
	}

	writeConfig(t, path, map[string]any{"socket": v.Socket, "data_dir": filepath.Join(filepath.Dir(v.Socket), "data"),
		"log_level": "error", "keep_alive": "3m", "limits": map[string]any{"per_caller": 3}})
	ev = waitState(t, states, "config reloaded")
	if !strings.Contains(ev.Reason, "keep_alive") {
		t.Errorf("reload event %q does not list keep_alive", ev.Reason)
	}
	if v := configGet(t, c); !keepAliveIs(v, 180_000) || v.PerCaller != 3 {
		t.Fatalf("good edit not applied: %+v", v)
	}
}

// config.set writes the file (atomically, keeping the other keys) and the
// change is in force when the reply arrives; a bad key or value is
// bad_request naming it and leaves the file as it was.
func TestRunConfigSet(t *testing.T) {
	path, c, _ := configDaemon(t, map[string]any{"keep_alive": "10m"})
	ctx := context.Background()
	if caps := c.Hello().Capabilities; !slices.Contains(caps, wire.OpConfigSet) || slices.Contains(caps, wire.OpPull) {
		t.Errorf("capabilities %v: want config.set (a config file) and no pull (no bundle store)", caps)
	}
	var res wire.ConfigSetResult
	if err := c.Admin(ctx, wire.OpConfigSet, wire.ConfigSetArgs{Key: "limits.per_caller", Value: 7}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Changed) != 1 || res.Changed[0] != "limits.per_caller" || len(res.RestartNeeded) != 0 {
		t.Fatalf("config.set result %+v", res)
	}
	if v := configGet(t, c); v.PerCaller != 7 || !keepAliveIs(v, 600_000) {
		t.Fatalf("config.get after config.set: %+v", v)
	}
	var file map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &file); err != nil || file["keep_alive"] != "10m" || file["limits"].(map[string]any)["per_caller"] != 7.0 {
		t.Fatalf("file after config.set: %s (%v)", data, err)
	}

	if err := c.Admin(ctx, wire.OpConfigSet, wire.ConfigSetArgs{Key: "data_dir", Value: filepath.Join(filepath.Dir(path), "elsewhere")}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.RestartNeeded) != 1 || res.RestartNeeded[0] != "data_dir" {
		t.Fatalf("data_dir change not reported as needing a restart: %+v", res)
	}

	before, _ := os.ReadFile(path)
	for _, tc := range []struct {
		key  string
		val  any
		want string
	}{
		{"limits.slots", 0, "limits.slots"},
		{"keep_alive", "soon", "keep_alive"},
		{"no_such_key", 1, "no_such_key: unknown key"},
		{"keep_alive.deeper", 1, "keep_alive: is not an object"},
		{"", 1, "args.key is required"},
		{"limits..slots", 1, "lowercase name"},
		{"admin_group", "\xff", "valid UTF-8"},
	} {
		err := c.Admin(ctx, wire.OpConfigSet, wire.ConfigSetArgs{Key: tc.key, Value: tc.val}, nil)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeBadRequest || !strings.Contains(we.Message, tc.want) {
			t.Errorf("config.set %s=%v: got %v, want bad_request naming %q", tc.key, tc.val, err, tc.want)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatalf("a refused config.set changed the file:\n%s\n->\n%s", before, after)
	}
}

// A config file that does not validate stops forged from starting, with
// the key named; without --config, --data is required.
func TestRunConfigErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(path, []byte(`{"limits": {"slots": 0}}`), 0o644)
	err := runDaemon(context.Background(), runFlags{config: path, model: tokenizerModel(t)})
	if err == nil || !strings.Contains(err.Error(), "limits.slots") || !strings.Contains(err.Error(), path) {
		t.Fatalf("bad config at start: %v", err)
	}
	err = runDaemon(context.Background(), runFlags{model: tokenizerModel(t), logLevel: "info"})
	if err == nil || !strings.Contains(err.Error(), "--data DIR or --config FILE") {
		t.Fatalf("no data dir: %v", err)
	}
}
