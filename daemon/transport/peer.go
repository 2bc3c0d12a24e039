package transport

import (
	"fmt"
	"net"
)

// Peer is the kernel's account of who is on the other end of a connection.
type Peer struct {
	UID    uint32
	GID    uint32
	PID    int32    // 0 when the platform does not report it
	Groups []uint32 // supplementary groups when the kernel reports them (macOS)
}

func (p Peer) String() string { return fmt.Sprintf("uid=%d gid=%d pid=%d", p.UID, p.GID, p.PID) }

// CredentialSource reads the peer of an accepted connection. The default is
// the kernel (KernelCredentials); tests inject their own.
type CredentialSource func(c *net.UnixConn) (Peer, error)

// KernelCredentials reads SO_PEERCRED (Linux) or LOCAL_PEERCRED and
// LOCAL_PEERPID (macOS) from the connection's socket.
func KernelCredentials(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var p Peer
	var credErr error
	if err := raw.Control(func(fd uintptr) { p, credErr = peerCredentials(int(fd)) }); err != nil {
		return Peer{}, err
	}
	return p, credErr
}
