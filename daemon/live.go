package daemon

import (
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/access"
	"github.com/forgedaemon/forged/daemon/state"
)

// LiveSettings is state.LiveSettings: what a running daemon changes
// without a restart.
type LiveSettings = state.LiveSettings

// SessionLimits is state.SessionLimits: the caps on open sessions.
type SessionLimits = state.SessionLimits

// ApplyLive switches to l, whose names state.LiveFrom has resolved
// (daemon/access), so nothing here can fail.
func (s *Server) ApplyLive(l LiveSettings) error {
	s.mu.Lock()
	s.cfg.Slots, s.cfg.MaxQueue, s.cfg.PerCaller, s.cfg.PerUID = max(l.Slots, 1), max(l.MaxQueue, 1), max(l.PerCaller, 1), max(l.PerUID, 1)
	s.cfg.Sessions = l.Sessions
	s.sched.SetLimits(s.cfg.schedLimits())
	s.sessions.SetLimits(l.Sessions)
	s.cfg.AdminGroup, s.cfg.AllowedUIDs = l.Access.AdminGroup, l.Access.AllowedUIDs
	s.auth.Rules = l.Access
	r := s.res
	s.mu.Unlock()
	if r != nil {
		r.SetKeepAlive(l.KeepAlive)
	}
	return nil
}

// authz is the authorizer in force (ApplyLive may replace it).
func (s *Server) authz() access.Authorizer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth
}

// configValues is what config.get reports: the effective settings.
func (s *Server) configValues() wire.ConfigValues {
	s.mu.Lock()
	cfg, r, file := s.cfg, s.res, s.configFile
	s.mu.Unlock()
	sl := s.sessions.Limits()
	v := wire.ConfigValues{
		MaxFrame: uint64(cfg.Limits.MaxFrame), MaxDepth: uint64(cfg.Limits.MaxDepth),
		FrameTimeoutMS: uint64(cfg.FrameTimeout.Milliseconds()), WriteTimeoutMS: uint64(cfg.WriteTimeout.Milliseconds()),
		SlowReaderTimeoutMS: uint64(cfg.SlowReaderTimeout.Milliseconds()), EventQueue: uint64(cfg.EventQueue),
		Slots: uint64(cfg.Slots), MaxQueue: uint64(cfg.MaxQueue), PerCaller: uint64(cfg.PerCaller), PerUID: uint64(cfg.PerUID),
		SessionsPerConn: uint64(sl.PerConnection), SessionsPerUID: uint64(sl.PerUID),
		AdminGroup: cfg.AdminGroup, Socket: cfg.SocketPath,
	}
	if r != nil {
		ms := int64(-1) // never
		if k := r.KeepAlive(); k >= 0 {
			// Whole milliseconds, rounded up: only a keep-alive of 0
			// (unload as soon as idle) reads 0.
			ms = (k + time.Millisecond - 1).Milliseconds()
		}
		v.KeepAliveMS = &ms
	}
	if file != nil {
		v.File = file.Watcher().Path()
	}
	return v
}

// The default session caps (state.DefaultSessionsPerConnection, …).
const (
	DefaultSessionsPerConnection = state.DefaultSessionsPerConnection
	DefaultSessionsPerUID        = state.DefaultSessionsPerUID
)
