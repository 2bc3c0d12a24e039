package daemon

import (
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
)

// The backend contract lives in daemon/backend; these names keep callers
// (modelbackend, fakeengine, cmd/forged, the tests) unchanged.
type (
	Backend         = backend.Backend
	Describer       = backend.Describer
	SessionParker   = backend.SessionParker
	StreamDecoder   = backend.StreamDecoder
	ModelInfo       = backend.ModelInfo
	ChatPrompt      = backend.ChatPrompt
	GenerateRequest = backend.GenerateRequest
	Outcome         = backend.Outcome
	Unavailable     = backend.Unavailable
)

// backendInfo is what b says about its engine, or nil.
func backendInfo(b Backend) *wire.BackendInfo { return backend.Info(b) }
