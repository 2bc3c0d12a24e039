package daemon_test

import (
	"strings"
	"testing"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

// The store and config-file admin ops check their arguments first (bad
// ones are bad_request naming the field), then answer unavailable, naming
// what is missing, on a daemon without a bundle store or config file.
func TestStoreAndConfigOpsWithoutThem(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	id := uint64(10)
	for _, c := range []struct {
		op   string
		args map[string]any
		want string
	}{
		{wire.OpPull, map[string]any{"revision": 7}, "revision"},
		{wire.OpUpdateApply, map[string]any{"rev": "main"}, "rev"},
		{wire.OpVerify, map[string]any{"full": "yes"}, "full"},
		{wire.OpUpdateCheck, map[string]any{"revision": []any{}}, "revision"},
		{wire.OpGC, map[string]any{"partials": 1}, "partials"},
		{wire.OpConfigSet, map[string]any{"key": 1, "value": "x"}, "key"},
		{wire.OpConfigSet, map[string]any{"value": "5m"}, "args.key is required"},
		{wire.OpConfigSet, map[string]any{"key": "keep_alive"}, "args.value is required"},
	} {
		id++
		if msg := expectError(t, r.call(id, c.op, c.args), id, wire.CodeBadRequest); !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: %q does not name %q", c.op, c.args, msg, c.want)
		}
	}
	for _, op := range []string{wire.OpPull, wire.OpUpdateApply, wire.OpVerify, wire.OpUpdateCheck, wire.OpGC} {
		id++
		if msg := expectError(t, r.call(id, op, map[string]any{}), id, wire.CodeUnavailable); !strings.Contains(msg, "no bundle store") {
			t.Errorf("%s: %q does not say there is no bundle store", op, msg)
		}
	}
	id++
	msg := expectError(t, r.call(id, wire.OpConfigSet, map[string]any{"key": "keep_alive", "value": "5m"}), id, wire.CodeUnavailable)
	if !strings.Contains(msg, "--config") {
		t.Errorf("config.set without a file: %q", msg)
	}
}
