// Package access is the daemon's one access policy: who may use the app
// ops and who the admin ops (root, the daemon's own uid, the admin group,
// the allow-list), and the resolution of the names that configure it
// (admin_group, allowed_users). Start-up, the live apply of a config edit
// and config.set all resolve through Resolve, so a value that would stop
// the next start is refused before it is written.
package access

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/daemon/transport"
)

// Rules are the resolved access settings.
type Rules struct {
	AdminGroup  string   // as configured (a name or a gid), "" for none; config.get reports it
	AdminGID    int64    // -1 when no admin group is configured
	AllowedUIDs []uint32 // empty: every local user may use the app ops
}

// Resolve resolves an admin group (a name or a numeric gid, "" for none)
// and an allow-list of users (names or numeric uids). Every name must
// exist and every number must be a 32-bit id; the error names the entry.
func Resolve(adminGroup string, allowedUsers []string) (Rules, error) {
	gid, err := ResolveGroup(adminGroup)
	if err != nil {
		return Rules{}, err
	}
	uids, err := ResolveUsers(allowedUsers)
	if err != nil {
		return Rules{}, err
	}
	return Rules{AdminGroup: adminGroup, AdminGID: gid, AllowedUIDs: uids}, nil
}

// ResolveGroup accepts a group name or a numeric gid; "" means none (-1).
func ResolveGroup(name string) (int64, error) {
	if name == "" {
		return -1, nil
	}
	if isNumber(name) {
		n, err := ParseID(name)
		if err != nil {
			return -1, fmt.Errorf("admin_group %q: %w", name, err)
		}
		return int64(n), nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return -1, fmt.Errorf("admin_group %q: %w", name, err)
	}
	n, err := ParseID(g.Gid)
	if err != nil {
		return -1, fmt.Errorf("admin_group %q has gid %q: %w", name, g.Gid, err)
	}
	return int64(n), nil
}

// ResolveUsers resolves allowed_users to uids (an empty list means every
// local user).
func ResolveUsers(names []string) ([]uint32, error) {
	out := make([]uint32, 0, len(names))
	for i, name := range names {
		if isNumber(name) {
			n, err := ParseID(name)
			if err != nil {
				return nil, fmt.Errorf("allowed_users[%d] %q: %w", i, name, err)
			}
			out = append(out, n)
			continue
		}
		u, err := user.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("allowed_users[%d]: %w", i, err)
		}
		n, err := ParseID(u.Uid)
		if err != nil {
			return nil, fmt.Errorf("allowed_users[%d] %q has uid %q: %w", i, name, u.Uid, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// errID is why a number is not a uid or gid.
var errID = errors.New("not a uid/gid: ids are decimal numbers from 0 to 4294967294")

// ParseID parses a decimal uid or gid: a 32-bit unsigned number, not
// 4294967295 (the kernel's "no id", (uid_t)-1). Anything else, a number
// past 32 bits above all (which would wrap to another user's id), is an
// error.
func ParseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 1<<32-1 || !isNumber(s) {
		return 0, errID
	}
	return uint32(n), nil
}

// isNumber reports whether s is all decimal digits (a name is never).
func isNumber(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// Authorizer applies Rules to a connection's kernel credentials.
type Authorizer struct {
	Rules
	DaemonUID uint32
	// GroupsOf returns a user's group ids; os/user reads /etc/group or
	// the directory service.
	GroupsOf func(uid uint32) ([]uint32, error)
}

// New is the authorizer of r for a daemon running as this process's uid.
func New(r Rules) Authorizer {
	return Authorizer{Rules: r, DaemonUID: uint32(os.Getuid()), GroupsOf: UserGroups}
}

// IsAdmin reports whether p may use the admin ops: root, the daemon's own
// uid, or a member (primary or supplementary) of the admin group.
func (a Authorizer) IsAdmin(p transport.Peer) bool {
	if p.UID == 0 || p.UID == a.DaemonUID {
		return true
	}
	if a.AdminGID < 0 {
		return false
	}
	g := uint32(a.AdminGID)
	if p.GID == g || slices.Contains(p.Groups, g) {
		return true
	}
	if a.GroupsOf == nil {
		return false
	}
	groups, err := a.GroupsOf(p.UID)
	return err == nil && slices.Contains(groups, g)
}

// MayUseApps reports whether p may use the app ops.
func (a Authorizer) MayUseApps(p transport.Peer) bool {
	return len(a.AllowedUIDs) == 0 || p.UID == 0 || p.UID == a.DaemonUID || slices.Contains(a.AllowedUIDs, p.UID)
}

// UserGroups is every group id of uid from the user database.
func UserGroups(uid uint32) ([]uint32, error) {
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
		if n, err := ParseID(s); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}
