package daemon

import (
	"context"

	"github.com/forgedaemon/forged/daemon/config"
	"github.com/forgedaemon/forged/daemon/state"
	"github.com/forgedaemon/forged/daemon/updater"
)

// LiveKeys are the config keys a running daemon applies at once
// (state.LiveKeys).
var LiveKeys = state.LiveKeys

// ConfigHooks is state.ConfigHooks: what the daemon's owner applies itself.
type ConfigHooks = state.ConfigHooks

// LiveFrom is the part of c a running daemon applies live.
func LiveFrom(c *config.Config) (LiveSettings, error) { return state.LiveFrom(c) }

// UpdatePolicy is the update loop's policy from the config file's update
// keys; offline (FORGE_OFFLINE, or no hub client) turns checks off.
func UpdatePolicy(u config.Update, offline bool) updater.Policy {
	return state.UpdatePolicy(u, offline)
}

// WatchConfig follows the config file at path until ctx ends: a valid edit
// (fsnotify, SIGHUP through config.NotifySIGHUP, or config.set) applies its
// live keys and logs the others as needing a restart; an invalid one is
// rejected with a log line and a state event whose reason names the key, and
// the configuration in force stays. started is the config the daemon was
// started with (nil: the file's); a difference from the file now is applied.
func (s *Server) WatchConfig(ctx context.Context, path string, started *config.Config, hooks ConfigHooks) (*config.Watcher, error) {
	f, err := state.WatchConfig(ctx, path, hooks, s.log, s.ApplyLive, s.note)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.configFile = f
	s.mu.Unlock()
	f.CatchUp(started)
	return f.Watcher(), nil
}

// note publishes something subscribers should know (a config reload, an
// update step) as a state event: the state stays, the reason says what
// happened.
func (s *Server) note(reason string) {
	state, _, _ := s.currentState()
	s.SetState(state, reason)
}
