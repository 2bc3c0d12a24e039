package state

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/config"
)

// config.set validates as start-up does: an admin group or an allowed user
// that does not resolve, or a uid past 32 bits, is bad_request and the file
// is left untouched (before, the write succeeded and the next start failed).
func TestConfigSetResolvesNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	orig := []byte("{\n  \"keep_alive\": \"10m\"\n}\n")
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	applied := 0
	f, err := WatchConfig(ctx, path, ConfigHooks{}, slog.New(slog.NewTextHandler(io.Discard, nil)),
		func(LiveSettings) error { applied++; return nil }, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Watcher().Close()
	for _, tc := range []struct {
		key  string
		val  any
		want string
	}{
		{"admin_group", "nosuchgroup-xyz", "admin_group"},
		{"allowed_users", []any{"nosuchuser-xyz"}, "allowed_users[0]"},
		{"allowed_users", []any{"root", "4294968797"}, "allowed_users[1]"},
	} {
		_, err := f.Set(tc.key, tc.val)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeBadRequest || !strings.Contains(we.Message, tc.want) {
			t.Errorf("config.set %s=%v: got %v, want bad_request naming %q", tc.key, tc.val, err, tc.want)
		}
		if now, _ := os.ReadFile(path); string(now) != string(orig) {
			t.Fatalf("config.set %s=%v changed the file:\n%s", tc.key, tc.val, now)
		}
	}
	if applied != 0 {
		t.Errorf("a refused edit was applied %d times", applied)
	}
	res, err := f.Set("allowed_users", []any{"root", "1501"})
	if err != nil || len(res.Changed) != 1 || res.Changed[0] != "allowed_users" {
		t.Fatalf("a valid allowed_users: %+v %v", res, err)
	}
}

// A numeric uid past 32 bits must not wrap to another user's uid: before,
// allowed_users ["4294968797"] admitted uid 1501.
func TestLiveFromRefusesWrappingUID(t *testing.T) {
	c := config.Default()
	c.AllowedUsers = []string{"4294968797"}
	l, err := LiveFrom(c)
	if err == nil {
		t.Fatalf("allowed_users [4294968797] resolved to %v", l.Access.AllowedUIDs)
	}
	c.AllowedUsers = []string{"1501"}
	if l, err = LiveFrom(c); err != nil || len(l.Access.AllowedUIDs) != 1 || l.Access.AllowedUIDs[0] != 1501 {
		t.Fatalf("allowed_users [1501]: %+v %v", l.Access, err)
	}
}
