package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/access"
	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/daemon/updater"
	"github.com/forgedaemon/forged/internal/atomicfile"
)

// LiveKeys are the config keys a running daemon applies at once; a change
// to any other key is logged as needing a restart (config.RestartKeys plus
// everything that shapes the server or the served bundle when it starts).
var LiveKeys = []string{
	"keep_alive", "admin_group", "allowed_users", "log_level",
	"limits.slots", "limits.max_queue", "limits.per_caller", "limits.per_uid",
	"limits.sessions_per_connection", "limits.sessions_per_uid",
	"update.auto", "update.interval", "update.jitter", "update.window", "update.bandwidth_limit",
}

// ConfigHooks let the daemon's owner apply what the server does not hold.
type ConfigHooks struct {
	LogLevel *slog.LevelVar // set from log_level on every reload
	// Update gets the update policy on every reload (the update loop
	// reads it each round).
	Update func(config.Update)
}

// LiveSettings are the settings a running daemon changes without a restart:
// a config file edit or config.set applies them at once. Everything else
// (socket, data directory, frame limits, the served bundle) needs a restart.
type LiveSettings struct {
	Slots, MaxQueue, PerCaller, PerUID int
	Sessions                           SessionLimits
	Access                             access.Rules // admin_group and allowed_users, resolved
	// KeepAlive is the residency keep-alive: 0 unloads at the first tick
	// after the model goes idle, negative never (ignored without residency).
	KeepAlive time.Duration
}

// LiveFrom is the part of c a running daemon applies live, with its names
// resolved (access.Resolve): an error here is what would stop a start, so
// start-up, a reload and config.set all refuse through it.
func LiveFrom(c *config.Config) (LiveSettings, error) {
	rules, err := access.Resolve(c.AdminGroup, c.AllowedUsers)
	if err != nil {
		return LiveSettings{}, err
	}
	return LiveSettings{
		Slots: c.Limits.Slots, MaxQueue: c.Limits.MaxQueue, PerCaller: c.Limits.PerCaller, PerUID: c.Limits.PerUID,
		Sessions: SessionLimits{PerConnection: c.Limits.SessionsPerConnection, PerUID: c.Limits.SessionsPerUID},
		Access:   rules, KeepAlive: c.KeepAlive.D(),
	}, nil
}

// ConfigFile is the daemon's config file as it runs: the watcher, the
// edits it applies live (through apply) and the config.set edit.
type ConfigFile struct {
	log   *slog.Logger
	apply func(LiveSettings) error // the server's ApplyLive
	note  func(reason string)      // publishes a state event's reason
	hooks ConfigHooks
	w     *config.Watcher
	setMu sync.Mutex // one config.set at a time: read, edit, write
}

// WatchConfig follows the config file at path until ctx ends: a valid edit
// (fsnotify, SIGHUP through config.NotifySIGHUP, or Set) applies its live
// keys with apply and logs the others as needing a restart; an invalid one
// is rejected with a log line and a note whose reason names the key, and
// the configuration in force stays. CatchUp applies what changed since the
// daemon started.
func WatchConfig(ctx context.Context, path string, hooks ConfigHooks, log *slog.Logger, apply func(LiveSettings) error, note func(string)) (*ConfigFile, error) {
	f := &ConfigFile{log: log, apply: apply, note: note, hooks: hooks}
	w, err := config.Watch(ctx, path, config.WatchOptions{
		OnReload: f.applyConfig,
		OnError:  f.configRejected,
	})
	if err != nil {
		return nil, err
	}
	f.w = w
	return f, nil
}

// Watcher is the config file's watcher.
func (f *ConfigFile) Watcher() *config.Watcher { return f.w }

// CatchUp applies the difference between started (the config the daemon
// was started with; nil: the file's) and the file now.
func (f *ConfigFile) CatchUp(started *config.Config) {
	if started != nil && len(config.Changed(started, f.w.Current())) > 0 {
		f.applyConfig(started, f.w.Current()) // edited between load and watch
	}
}

// applyConfig moves from old to c: the live keys now, the rest logged.
func (f *ConfigFile) applyConfig(old, c *config.Config) {
	changed := config.Changed(old, c)
	if len(changed) == 0 {
		return
	}
	var live, restart []string
	for _, k := range changed {
		if slices.Contains(LiveKeys, k) {
			live = append(live, k)
		} else {
			restart = append(restart, k)
		}
	}
	l, err := LiveFrom(c)
	if err == nil {
		err = f.apply(l)
	}
	if err != nil {
		f.configRejected(fmt.Errorf("config change not applied, previous settings kept: %w", err))
		return
	}
	hooks := f.hooks
	if hooks.LogLevel != nil {
		var lv slog.Level
		if lv.UnmarshalText([]byte(c.LogLevel)) == nil {
			hooks.LogLevel.Set(lv)
		}
	}
	if hooks.Update != nil {
		hooks.Update(c.Update)
	}
	reason := "config reloaded: applied " + strings.Join(live, ", ")
	if len(live) == 0 {
		reason = "config reloaded"
	}
	if len(restart) > 0 {
		f.log.Warn("config keys changed that need a restart", "keys", restart)
		reason += "; needs a restart: " + strings.Join(restart, ", ")
	}
	f.log.Info("config reloaded", "applied", live, "restart_needed", restart)
	f.note(reason)
}

// configRejected logs a refused edit and tells subscribers.
func (f *ConfigFile) configRejected(err error) {
	f.log.Error("config", "err", err)
	f.note(err.Error())
}

// Set edits one key of the config file, validates the whole file, writes
// it atomically and reloads it, so the result reports what changed (the
// config.set op). A bad key or value is bad_request naming it, and the
// file is left as it was.
func (f *ConfigFile) Set(key string, value any) (wire.ConfigSetResult, error) {
	w := f.w
	f.setMu.Lock()
	defer f.setMu.Unlock()
	old := w.Current()
	data, err := setKey(w.Path(), key, value)
	if err != nil {
		return wire.ConfigSetResult{}, wire.Errorf(wire.CodeBadRequest, "config.set: %v", err)
	}
	parsed, err := config.Parse(data)
	if err != nil {
		return wire.ConfigSetResult{}, wire.Errorf(wire.CodeBadRequest, "config.set: %v", err)
	}
	// Validate as start-up does (names resolved), so a value that would
	// stop the next start is refused before it is written.
	if _, err := LiveFrom(parsed); err != nil {
		return wire.ConfigSetResult{}, wire.Errorf(wire.CodeBadRequest, "config.set: %v", err)
	}
	if err := writeAtomic(w.Path(), data); err != nil {
		return wire.ConfigSetResult{}, wire.Errorf(wire.CodeInternal, "config.set: writing %s: %v", w.Path(), err)
	}
	now, err := w.Reload()
	if err != nil {
		return wire.ConfigSetResult{}, wire.Errorf(wire.CodeInternal, "config.set: %v", err)
	}
	res := wire.ConfigSetResult{Changed: config.Changed(old, now), RestartNeeded: []string{}}
	for _, k := range res.Changed {
		if !slices.Contains(LiveKeys, k) {
			res.RestartNeeded = append(res.RestartNeeded, k)
		}
	}
	return res, nil
}

// setKey returns the config file at path (or {} if there is none) with the
// dotted key set to value; keys the file leaves out stay out.
func setKey(path, key string, value any) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || len(bytes.TrimSpace(raw)) == 0 {
		raw, err = []byte("{}"), nil
	}
	if err != nil {
		return nil, err
	}
	doc := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object (fix it by hand first): %v", path, err)
	}
	parts := strings.Split(key, ".")
	for _, p := range parts {
		if !configKeyPart(p) {
			return nil, fmt.Errorf("key %q: each dotted part must be a non-empty lowercase name like keep_alive or limits.per_caller (docs/CONFIG.md)", key)
		}
	}
	if !validUTF8(value) {
		return nil, fmt.Errorf("%s: the value's text must be valid UTF-8", key)
	}
	m := doc
	for i, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			if _, set := m[p]; set {
				return nil, fmt.Errorf("%s: is not an object", strings.Join(parts[:i+1], "."))
			}
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = value
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%s: value cannot be written as JSON: %v", key, err)
	}
	return append(out, '\n'), nil
}

// validUTF8 reports whether every string in v is valid UTF-8 (JSON would
// silently replace bad bytes).
func validUTF8(v any) bool {
	switch v := v.(type) {
	case string:
		return utf8.ValidString(v)
	case []any:
		for _, e := range v {
			if !validUTF8(e) {
				return false
			}
		}
	case map[string]any:
		for k, e := range v {
			if !utf8.ValidString(k) || !validUTF8(e) {
				return false
			}
		}
	}
	return true
}

func configKeyPart(p string) bool {
	if p == "" || len(p) > 64 {
		return false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// writeAtomic replaces path with data so that a reader (the watcher, an
// editor) sees the old file or the new one, never a part, and the rename
// survives a crash (internal/atomicfile syncs the directory too).
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}

// UpdatePolicy is the update loop's policy from the config file's update
// keys; offline (FORGE_OFFLINE, or no hub client) turns checks off.
func UpdatePolicy(u config.Update, offline bool) updater.Policy {
	return updater.Policy{Auto: u.Auto, Interval: u.Interval.D(), Jitter: u.Jitter.D(), Offline: offline,
		InWindow: func(t time.Time) bool { return u.Window.Contains(t.Local()) }}
}
