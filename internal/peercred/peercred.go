// Package peercred reads the kernel's account of the process on the other
// end of a connected Unix socket: SO_PEERCRED on Linux, LOCAL_PEERCRED and
// LOCAL_PEERPID on macOS. The daemon uses it to identify each caller, the
// client to check who listens before it sends anything. It imports only the
// standard library: the client links it.
package peercred

import (
	"fmt"
	"net"
)

// Peer is who is on the other end of a connection: for an accepted
// connection the process that connected, for a dialled one the process that
// listens (the credentials are the ones it had when it called listen).
type Peer struct {
	UID    uint32
	GID    uint32
	PID    int32    // 0 when the platform does not report it
	Groups []uint32 // supplementary groups when the kernel reports them (macOS)
}

func (p Peer) String() string { return fmt.Sprintf("uid=%d gid=%d pid=%d", p.UID, p.GID, p.PID) }

// Read reads c's peer from the kernel.
func Read(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var p Peer
	var credErr error
	if err := raw.Control(func(fd uintptr) { p, credErr = read(int(fd)) }); err != nil {
		return Peer{}, err
	}
	if credErr != nil {
		return Peer{}, fmt.Errorf("read peer credentials: %w", credErr)
	}
	return p, nil
}
