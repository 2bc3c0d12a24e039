package daemon

import (
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/state"
)

// LiveSettings is state.LiveSettings: what a running daemon changes
// without a restart.
type LiveSettings = state.LiveSettings

// ApplyLive switches to l. An admin group that does not resolve is an error
// and nothing changes.
func (s *Server) ApplyLive(l LiveSettings) error {
	gid, err := resolveGroup(l.AdminGroup)
	if err != nil {
		return err
	}
	s.sched.SetLimits(l.Slots, l.MaxQueue, l.PerCaller)
	s.mu.Lock()
	s.cfg.Slots, s.cfg.MaxQueue, s.cfg.PerCaller = max(l.Slots, 1), max(l.MaxQueue, 1), max(l.PerCaller, 1)
	s.cfg.AdminGroup, s.cfg.AllowedUIDs = l.AdminGroup, l.AllowedUIDs
	s.auth.adminGID, s.auth.allowedUID = gid, l.AllowedUIDs
	r := s.res
	s.mu.Unlock()
	if r != nil {
		r.SetKeepAlive(l.KeepAlive)
	}
	return nil
}

// authz is the authorizer in force (ApplyLive may replace it).
func (s *Server) authz() authorizer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth
}

// configValues is what config.get reports: the effective settings.
func (s *Server) configValues() wire.ConfigValues {
	s.mu.Lock()
	cfg, r, file := s.cfg, s.res, s.configFile
	s.mu.Unlock()
	v := wire.ConfigValues{
		MaxFrame: uint64(cfg.Limits.MaxFrame), MaxDepth: uint64(cfg.Limits.MaxDepth),
		FrameTimeoutMS: uint64(cfg.FrameTimeout.Milliseconds()), WriteTimeoutMS: uint64(cfg.WriteTimeout.Milliseconds()),
		SlowReaderTimeoutMS: uint64(cfg.SlowReaderTimeout.Milliseconds()), EventQueue: uint64(cfg.EventQueue),
		Slots: uint64(cfg.Slots), MaxQueue: uint64(cfg.MaxQueue), PerCaller: uint64(cfg.PerCaller),
		AdminGroup: cfg.AdminGroup, Socket: cfg.SocketPath,
		HelloTimeoutMS: uint64(cfg.HelloTimeout.Milliseconds()), IdleTimeoutMS: uint64(cfg.IdleTimeout.Milliseconds()),
		MaxConns: uint64(cfg.MaxConns), ConnsPerUID: uint64(cfg.MaxConnsPerUID), StreamsPerConn: uint64(cfg.MaxStreams),
	}
	if r != nil {
		v.KeepAliveMS = -1 // never
		if k := r.KeepAlive(); k > 0 {
			v.KeepAliveMS = k.Milliseconds()
		}
	}
	if file != nil {
		v.File = file.Watcher().Path()
	}
	return v
}
