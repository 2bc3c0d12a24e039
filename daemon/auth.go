package daemon

import (
	"fmt"
	"net"
	"os/user"
	"slices"
	"strconv"

	"github.com/forgedaemon/forged/daemon/transport"
)

// Peer, CredentialSource and KernelCredentials live in daemon/transport;
// these names keep callers unchanged.
type (
	Peer             = transport.Peer
	CredentialSource = transport.CredentialSource
)

// KernelCredentials is transport.KernelCredentials.
func KernelCredentials(c *net.UnixConn) (Peer, error) { return transport.KernelCredentials(c) }

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

// IsAdmin and MayUseApps implement ops.Authorizer.
func (a authorizer) IsAdmin(p Peer) bool { return a.isAdmin(p) }

// MayUseApps reports whether p may use the app ops.
func (a authorizer) MayUseApps(p Peer) bool { return a.mayUseApps(p) }

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
