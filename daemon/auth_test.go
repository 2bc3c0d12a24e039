package daemon

import (
	"errors"
	"testing"
)

func TestAuthorizer(t *testing.T) {
	groups := map[uint32][]uint32{1001: {20, 80}, 1002: {20}}
	a := authorizer{daemonUID: 501, adminGID: 80, groupsOf: func(uid uint32) ([]uint32, error) {
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
		if got := a.isAdmin(c.peer); got != c.want {
			t.Errorf("%s: isAdmin = %v, want %v", c.name, got, c.want)
		}
	}
	a.adminGID = -1
	if a.isAdmin(Peer{UID: 1003, GID: 80}) {
		t.Error("no admin group configured, yet gid 80 is admin")
	}
	if !(authorizer{}).mayUseApps(Peer{UID: 7}) {
		t.Error("with no allow-list every user may use apps")
	}
	allow := authorizer{daemonUID: 501, allowedUID: []uint32{7}}
	if allow.mayUseApps(Peer{UID: 8}) || !allow.mayUseApps(Peer{UID: 7}) || !allow.mayUseApps(Peer{UID: 0}) {
		t.Error("allow-list not applied")
	}
}

func TestResolveGroup(t *testing.T) {
	if g, err := resolveGroup(""); err != nil || g != -1 {
		t.Errorf("empty: %d %v", g, err)
	}
	if g, err := resolveGroup("4242"); err != nil || g != 4242 {
		t.Errorf("numeric: %d %v", g, err)
	}
	if g, err := resolveGroup("root"); err != nil || g != 0 {
		t.Errorf("root: %d %v", g, err)
	}
	if _, err := resolveGroup("no-such-group-xyz"); err == nil {
		t.Error("unknown group accepted")
	}
}
