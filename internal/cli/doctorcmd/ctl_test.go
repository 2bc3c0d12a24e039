package doctorcmd

import (
	"github.com/forgedaemon/forged/bundle/hubtest"
	"testing"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/internal/cli/clitest"
)

func runCtl(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return clitest.Run(t, clitest.Root(New()), stdin, args...)
}

func serveDaemon(t *testing.T, b daemon.Backend) (string, *daemon.Server) {
	return clitest.ServeDaemon(t, b)
}

func shortDir(t *testing.T) string { return clitest.ShortDir(t) }

// described is the fake engine naming a backend, as modelbackend does.
type described struct {
	*fakeengine.Engine
	info *wire.BackendInfo
}

func (d described) BackendInfo() *wire.BackendInfo { return d.info }

func publishBundle(t *testing.T, h *hubtest.Hub, repo string, withExport bool, seed uint64) string {
	t.Helper()
	return clitest.PublishBundle(t, h, repo, withExport, seed)
}
