package daemon

import (
	"net"

	"github.com/forgedaemon/forged/daemon/transport"
)

// Peer, CredentialSource and KernelCredentials live in daemon/transport;
// these names keep callers unchanged. Who may do what is daemon/access.
type (
	Peer             = transport.Peer
	CredentialSource = transport.CredentialSource
)

// KernelCredentials is transport.KernelCredentials.
func KernelCredentials(c *net.UnixConn) (Peer, error) { return transport.KernelCredentials(c) }
