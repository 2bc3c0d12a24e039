package daemon

import (
	"fmt"
	"net"
	"os/user"
	"slices"
	"strconv"
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

// authorizer decides admin rights: root, the daemon's own uid, or members
// of the admin group.
type authorizer struct {
	daemonUID  uint32
	adminGID   int64 // -1 when no admin group is configured
	allowedUID []uint32
	// groupsOf returns a user's group ids; os/user reads /etc/group or
	// the directory service.
	groupsOf func(uid uint32) ([]uint32, error)
}

func (a authorizer) isAdmin(p Peer) bool {
	if p.UID == 0 || p.UID == a.daemonUID {
		return true
	}
	if a.adminGID < 0 {
		return false
	}
	g := uint32(a.adminGID)
	if p.GID == g || slices.Contains(p.Groups, g) {
		return true
	}
	groups, err := a.groupsOf(p.UID)
	return err == nil && slices.Contains(groups, g)
}

func (a authorizer) mayUseApps(p Peer) bool {
	return len(a.allowedUID) == 0 || p.UID == 0 || p.UID == a.daemonUID || slices.Contains(a.allowedUID, p.UID)
}

func userGroups(uid uint32) ([]uint32, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	var out []uint32
	for _, s := range ids {
		if n, err := strconv.ParseUint(s, 10, 32); err == nil {
			out = append(out, uint32(n))
		}
	}
	return out, nil
}

// resolveGroup accepts a group name or a numeric gid; "" means none (-1).
func resolveGroup(name string) (int64, error) {
	if name == "" {
		return -1, nil
	}
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return int64(n), nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return -1, fmt.Errorf("admin group %q: %w", name, err)
	}
	n, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return -1, fmt.Errorf("admin group %q has a non-numeric gid %q", name, g.Gid)
	}
	return int64(n), nil
}
