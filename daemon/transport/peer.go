package transport

import (
	"net"

	"github.com/forgedaemon/forged/internal/peercred"
)

// Peer is the kernel's account of who is on the other end of a connection.
type Peer = peercred.Peer

// CredentialSource reads the peer of an accepted connection. The default is
// the kernel (KernelCredentials); tests inject their own.
type CredentialSource func(c *net.UnixConn) (Peer, error)

// KernelCredentials reads SO_PEERCRED (Linux) or LOCAL_PEERCRED and
// LOCAL_PEERPID (macOS) from the connection's socket.
func KernelCredentials(c *net.UnixConn) (Peer, error) { return peercred.Read(c) }
