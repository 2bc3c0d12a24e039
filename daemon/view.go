package daemon

import (
	"context"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/ops"
	"github.com/forgedaemon/forged/daemon/state"
)

// view is the Server as the op handlers see it (ops.Daemon), kept off the
// Server's exported API.
type view struct{ s *Server }

func (v view) Backend() Backend { return v.s.Backend() }

func (v view) UseModel(ctx context.Context) (context.Context, func(), error) {
	return v.s.useModel(ctx)
}

func (v view) MemoryFreed() { v.s.memoryFreed() }

func (v view) CurrentState() (string, string, <-chan struct{}) { return v.s.currentState() }

func (v view) SubscribeState() (state.Record, <-chan struct{}) { return v.s.pub.Subscribe() }

func (v view) StatesSince(seq uint64) ([]state.Record, uint64, <-chan struct{}) {
	return v.s.pub.Since(seq)
}

func (v view) Capabilities() []string { return v.s.capabilities() }

func (v view) ConfigValues() wire.ConfigValues { return v.s.configValues() }

func (v view) MemoryEstimate() (wire.Memory, bool) { return v.s.MemoryEstimate() }

func (v view) Shutdown() { v.s.Shutdown() }

func (v view) Residency() *state.Residency {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	return v.s.res
}

func (v view) Store() *state.Store {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	return v.s.store
}

func (v view) ConfigFile() *state.ConfigFile {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	return v.s.configFile
}

func (v view) Authz() ops.Authorizer { return v.s.authz() }

func (v view) Connections() int { return v.s.conns.Open() }

// capabilities lists the ops a client can rely on on this daemon (wire.Ops
// whose feature is configured here).
func (s *Server) capabilities() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return wire.Capabilities(func(f wire.Feature) bool {
		switch f {
		case wire.FeatureResidency:
			return s.res != nil
		case wire.FeatureStore:
			return s.store != nil
		case wire.FeatureConfigFile:
			return s.configFile != nil
		case wire.FeatureTokens:
			return s.cfg.Tokens != nil
		}
		return false
	})
}
