package access

import (
	"errors"
	"os/user"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/daemon/transport"
)

type Peer = transport.Peer

func TestAuthorizer(t *testing.T) {
	groups := map[uint32][]uint32{1001: {20, 80}, 1002: {20}}
	a := Authorizer{DaemonUID: 501, Rules: Rules{AdminGID: 80}, GroupsOf: func(uid uint32) ([]uint32, error) {
		if g, ok := groups[uid]; ok {
			return g, nil
		}
		return nil, errors.New("no such user")
	}}
	cases := []struct {
		name string
		peer Peer
		want bool
	}{
		{"root", Peer{UID: 0, GID: 0}, true},
		{"daemon's own uid", Peer{UID: 501, GID: 20}, true},
		{"primary group is admin", Peer{UID: 1003, GID: 80}, true},
		{"kernel-reported supplementary group (macOS)", Peer{UID: 1004, GID: 20, Groups: []uint32{20, 80}}, true},
		{"supplementary group from the user database", Peer{UID: 1001, GID: 20}, true},
		{"plain user", Peer{UID: 1002, GID: 20}, false},
		{"unknown user", Peer{UID: 4242, GID: 4242}, false},
	}
	for _, c := range cases {
		if got := a.IsAdmin(c.peer); got != c.want {
			t.Errorf("%s: IsAdmin = %v, want %v", c.name, got, c.want)
		}
	}
	a.AdminGID = -1
	if a.IsAdmin(Peer{UID: 1003, GID: 80}) {
		t.Error("no admin group configured, yet gid 80 is admin")
	}
	if !(Authorizer{}).MayUseApps(Peer{UID: 7}) {
		t.Error("with no allow-list every user may use apps")
	}
	allow := Authorizer{DaemonUID: 501, Rules: Rules{AllowedUIDs: []uint32{7}}}
	if allow.MayUseApps(Peer{UID: 8}) || !allow.MayUseApps(Peer{UID: 7}) || !allow.MayUseApps(Peer{UID: 0}) {
		t.Error("allow-list not applied")
	}
}

func TestResolveGroup(t *testing.T) {
	if g, err := ResolveGroup(""); err != nil || g != -1 {
		t.Errorf("empty: %d %v", g, err)
	}
	if g, err := ResolveGroup("4242"); err != nil || g != 4242 {
		t.Errorf("numeric: %d %v", g, err)
	}
	if g, err := ResolveGroup("root"); err != nil || g != 0 {
		t.Errorf("root: %d %v", g, err)
	}
	if _, err := ResolveGroup("no-such-group-xyz"); err == nil || !strings.Contains(err.Error(), "admin_group") {
		t.Errorf("unknown group: %v", err)
	}
	if g, err := ResolveGroup("4294967376"); err == nil {
		t.Errorf("a gid past 32 bits resolved to %d", g)
	}
}

// A numeric uid past 32 bits must not wrap to another user's uid
// (4294968797 = 2^32 + 1501).
func TestResolveUsersRefusesWrappingUIDs(t *testing.T) {
	for _, s := range []string{"4294968797", "4294967296", "4294967295", "99999999999999999999999"} {
		uids, err := ResolveUsers([]string{s})
		if err == nil {
			t.Errorf("allowed_users [%q] resolved to %v", s, uids)
		} else if !strings.Contains(err.Error(), "allowed_users[0]") || !strings.Contains(err.Error(), "4294967294") {
			t.Errorf("allowed_users [%q]: error %q does not name the entry and the range", s, err)
		}
	}
	uids, err := ResolveUsers([]string{"1501", "4294967294", "0"})
	if err != nil || len(uids) != 3 || uids[0] != 1501 || uids[1] != 4294967294 || uids[2] != 0 {
		t.Errorf("valid uids: %v %v", uids, err)
	}
	if _, err := ResolveUsers([]string{"root", "no-such-user-xyz"}); err == nil || !strings.Contains(err.Error(), "allowed_users[1]") {
		t.Errorf("unknown user: %v", err)
	}
	if u, err := user.Lookup("root"); err == nil {
		uids, err := ResolveUsers([]string{"root"})
		if err != nil || len(uids) != 1 || u.Uid != "0" || uids[0] != 0 {
			t.Errorf("root: %v %v", uids, err)
		}
	}
}

func TestResolve(t *testing.T) {
	r, err := Resolve("4242", []string{"7"})
	if err != nil || r.AdminGroup != "4242" || r.AdminGID != 4242 || len(r.AllowedUIDs) != 1 || r.AllowedUIDs[0] != 7 {
		t.Fatalf("Resolve: %+v %v", r, err)
	}
	if _, err := Resolve("nosuchgroup-xyz", nil); err == nil {
		t.Error("an unknown admin group resolved")
	}
	if _, err := Resolve("", []string{"nosuchuser-xyz"}); err == nil {
		t.Error("an unknown allowed user resolved")
	}
}
