package daemon

import (
	"net"

	"github.com/forgedaemon/forged/daemon/transport"
)

// ErrDaemonRunning is returned by Listen when another process answers on the socket.
var ErrDaemonRunning = transport.ErrDaemonRunning

// Listen creates the daemon's Unix socket at path (transport.Listen).
func Listen(path string) (*net.UnixListener, error) { return transport.Listen(path) }
