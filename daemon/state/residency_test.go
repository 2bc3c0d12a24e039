package state

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
)

// logRecords keeps every record's message and attributes as "k=v" text.
type logRecords struct {
	mu   sync.Mutex
	recs []map[string]string
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	l.mu.Lock()
	l.recs = append(l.recs, m)
	l.mu.Unlock()
	return nil
}

// residencyLines are the residency transitions logged, as
// "bundle from->to".
func (l *logRecords) residencyLines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.recs {
		if m["msg"] == "residency" {
			out = append(out, m["bundle"]+" "+m["from"]+"->"+m["to"])
		}
	}
	return out
}

func testResidency(t *testing.T, log *logRecords) (*Residency, func() string) {
	t.Helper()
	var mu sync.Mutex
	var b backend.Backend = backend.Unavailable{Reason: "not loaded yet"}
	published := wire.StateUnloaded
	host := Host{
		Log:        slog.New(log),
		Backend:    func() backend.Backend { mu.Lock(); defer mu.Unlock(); return b },
		SetBackend: func(nb backend.Backend) { mu.Lock(); b = nb; mu.Unlock() },
		SetState:   func(s, _ string) { mu.Lock(); published = s; mu.Unlock() },
		State:      func() string { mu.Lock(); defer mu.Unlock(); return published },
		Sessions:   NewSessions(SessionLimits{}),
	}
	loader := func(context.Context) (backend.Backend, error) {
		return backend.Unavailable{Reason: "a loaded stand-in"}, nil
	}
	return NewResidency(host, ResidencyOptions{Bundle: "org/forge@rev-a", Load: loader}), host.State
}

// The residency log names the revision each transition is about (the old
// one while it unloads, the new one once it loads) and says the states
// subscribers see: an unload ends in "unloaded", never in "ready".
func TestResidencyLogAcrossSwitchAndUnload(t *testing.T) {
	log := &logRecords{}
	r, published := testResidency(t, log)
	ctx := context.Background()
	if err := r.Load(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	loadB := func(context.Context) (backend.Backend, error) { return backend.Unavailable{Reason: "rev-b"}, nil }
	if err := r.Switch(ctx, "org/forge@rev-b", nil, loadB); err != nil {
		t.Fatal(err)
	}
	if err := r.Unload(false, "test"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"org/forge@rev-a unloaded->loading", "org/forge@rev-a loading->ready", // load
		"org/forge@rev-a ready->unloading", "org/forge@rev-a unloading->unloaded", // the switch unloads rev-a
		"org/forge@rev-b unloaded->loading", "org/forge@rev-b loading->ready", // and loads rev-b
		"org/forge@rev-b ready->unloading", "org/forge@rev-b unloading->unloaded", // unload
	}
	if got := log.residencyLines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("residency log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p := published(); p != wire.StateUnloaded {
		t.Fatalf("published state %q after the unload, and the log said unloaded", p)
	}
}
