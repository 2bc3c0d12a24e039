package daemon_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/residency"
	"github.com/forgedaemon/forged/internal/sysinfo"

	"github.com/forgedaemon/forged/internal/leakcheck"
)

// fakeClock is a settable clock for keep-alive.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// measuredEngine is the fake engine with a memory model, so pressure has
// something to walk.
type measuredEngine struct{ *fakeengine.Engine }

func (measuredEngine) Footprint() *residency.Footprint {
	return &residency.Footprint{Weights: 1e9, Drafter: 2e8, Scratch: 1e8, KVPerRow: 1024, Recurrent: 1e6, Ladder: []int{8192, 16384, 32768, 65536}}
}

type residencyRig struct {
	ts    *testServer
	r     *daemon.Residency
	c     *client.Client
	clock *fakeClock
	loads atomic.Int32
	eng   atomic.Pointer[fakeengine.Engine]
}

func newResidencyRig(t *testing.T, opts fakeengine.Options) *residencyRig {
	rig := &residencyRig{ts: startServer(t, daemon.Config{}, opts), clock: &fakeClock{now: time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)}}
	rig.r = rig.ts.EnableResidency(daemon.ResidencyOptions{
		Bundle:    "fake/instant@1",
		KeepAlive: residency.DefaultKeepAlive,
		Load: func(context.Context) (daemon.Backend, error) {
			rig.loads.Add(1)
			e := fakeengine.New(opts)
			rig.eng.Store(e)
			return measuredEngine{e}, nil
		},
		Now: rig.clock.Now,
	})
	c, err := client.Dial(context.Background(), rig.ts.path, client.Options{Name: "residency-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rig.c = c
	return rig
}

func (rig *residencyRig) state(t *testing.T) string {
	t.Helper()
	st, err := rig.c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.State
}

func max64(n uint64) *uint64 { return &n }

func TestLoadPinKeepAliveAndAutoLoad(t *testing.T) {
	rig := newResidencyRig(t, fakeengine.Options{})
	ctx := context.Background()
	if s := rig.state(t); s != daemon.StateUnloaded {
		t.Fatalf("state before load: %s", s)
	}
	var res map[string]any
	if err := rig.c.Admin(ctx, wire.OpLoad, nil, &res); err != nil || res["state"] != wire.StateReady {
		t.Fatalf("load: %v %v", res, err)
	}
	if err := rig.c.Admin(ctx, wire.OpPin, map[string]any{}, &res); err != nil || res["pinned"] != true {
		t.Fatalf("pin: %v %v", res, err)
	}
	rig.clock.Add(time.Hour)
	rig.r.Tick()
	if s := rig.state(t); s != wire.StateReady {
		t.Fatalf("pinned model after an idle hour: %s, want ready", s)
	}
	// Unpinned, the hour of idleness counts: the next tick unloads.
	rig.c.Admin(ctx, wire.OpPin, map[string]any{"pinned": false}, &res)
	rig.r.Tick()
	if s := rig.state(t); s != daemon.StateUnloaded {
		t.Fatalf("unpinned after an idle hour: %s, want unloaded", s)
	}
	// Used now, then idle for 10 minutes: unloaded.
	if _, err := rig.c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{104, 105}, MaxTokens: max64(3)}).Result(); err != nil {
		t.Fatal(err)
	}
	rig.clock.Add(9*time.Minute + 59*time.Second)
	rig.r.Tick()
	if s := rig.state(t); s != wire.StateReady {
		t.Fatalf("9m59s idle: %s, want ready", s)
	}
	rig.clock.Add(time.Second)
	rig.r.Tick()
	if s := rig.state(t); s != daemon.StateUnloaded {
		t.Fatalf("10 min idle: %s, want unloaded", s)
	}
	// The next request loads it again and is served.
	res2, err := rig.c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{104, 105}, MaxTokens: max64(3)}).Result()
	if err != nil || res2.Usage.GeneratedTokens != 3 {
		t.Fatalf("request after unload: %+v %v", res2, err)
	}
	if n := rig.loads.Load(); n != 3 {
		t.Fatalf("%d loads, want 3 (load op, then a request after each idle unload)", n)
	}
}

func TestUnloadRefusedWhileGeneratingUnlessForced(t *testing.T) {
	rig := newResidencyRig(t, fakeengine.Options{TokenDelay: 5 * time.Millisecond})
	ctx := context.Background()
	if err := rig.r.Load(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	stream := rig.c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{104}, MaxTokens: max64(60000)})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		st, err := rig.c.Status(ctx)
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("the generation never started: %v", err)
		}
		if st.Running == 1 {
			break
		}
	}
	var res map[string]any
	err := rig.c.Admin(ctx, wire.OpUnload, map[string]any{}, &res)
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeBusy {
		t.Fatalf("unload while generating: %v, want busy", err)
	}
	if err := rig.c.Admin(ctx, wire.OpUnload, map[string]any{"force": true}, &res); err != nil || res["state"] != daemon.StateUnloaded {
		t.Fatalf("forced unload: %v %v", res, err)
	}
	_, err = stream.Result()
	if !errors.As(err, &we) || we.Code != wire.CodeCancelled {
		t.Fatalf("the stream under a forced unload ended with %v, want cancelled", err)
	}
}

func TestPressureDropsIdleSessionsThenUnloads(t *testing.T) {
	rig := newResidencyRig(t, fakeengine.Options{})
	ctx := context.Background()
	var sessions []string
	for range 3 {
		s, err := rig.c.OpenSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rig.c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{104, 105}, MaxTokens: max64(2), Session: s}).Result(); err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
		time.Sleep(2 * time.Millisecond) // distinct last-used times
	}
	var events []string
	var mu sync.Mutex
	subCtx, stop := context.WithCancel(ctx)
	subDone, subscribed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(subDone)
		first := true
		for ev, err := range rig.c.Subscribe(subCtx) {
			if err != nil {
				return
			}
			mu.Lock()
			events = append(events, ev.State+": "+ev.Reason)
			mu.Unlock()
			if first { // the current state: the subscription is in place
				close(subscribed)
				first = false
			}
		}
	}()
	<-subscribed

	steps := rig.r.Pressure(sysinfo.Warning)
	var kinds []residency.StepKind
	var dropped []string
	for _, s := range steps {
		kinds = append(kinds, s.Kind)
		dropped = append(dropped, s.Session)
	}
	if !slices.Equal(dropped, sessions) || !slices.Equal(kinds, []residency.StepKind{residency.DropSession, residency.DropSession, residency.DropSession}) {
		t.Fatalf("warning steps %v, want the 3 idle sessions dropped oldest first %v", steps, sessions)
	}
	if got := rig.eng.Load().ClosedSessions(); !slices.Equal(got, sessions) {
		t.Fatalf("backend sessions freed %v, want %v", got, sessions)
	}
	if s := rig.state(t); s != wire.StateReady {
		t.Fatalf("after a warning the model must stay loaded: %s", s)
	}
	steps = rig.r.Pressure(sysinfo.Critical)
	if len(steps) != 2 || steps[0].Kind != residency.DropDrafter || steps[1].Kind != residency.Unload {
		t.Fatalf("critical steps %v, want drop drafter then unload (sessions are already dropped)", steps)
	}
	if s := rig.state(t); s != daemon.StateUnloaded {
		t.Fatalf("after critical: %s, want unloaded", s)
	}
	// The events are on their way: wait for the last one, the unload
	// step's (published after the unload's own transitions), then stop.
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(events, func(e string) bool {
			return strings.Contains(e, "memory pressure critical: unload the model")
		})
	})
	stop()
	<-subDone
	mu.Lock()
	defer mu.Unlock()
	var pressure int
	for _, e := range events {
		t.Log(e)
		if strings.Contains(e, "memory pressure") && strings.Contains(e, "frees") {
			pressure++
		}
	}
	if pressure != 5 {
		t.Fatalf("%d pressure events seen by a subscriber, want one per step (5)", pressure)
	}
	if !slices.Contains(events, "unloading: memory pressure critical") || !slices.Contains(events, "unloaded: memory pressure critical") {
		t.Fatalf("the unload's transitions were not all published: %v", events)
	}
}

func TestResidencyRunStopsWithoutLeaking(t *testing.T) {
	rig := newResidencyRig(t, fakeengine.Options{})
	before := runtime.NumGoroutine()
	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { rig.r.Run(ctx, time.Millisecond, &sysinfo.Static{}); close(done) }()
		time.Sleep(3 * time.Millisecond)
		cancel()
		<-done
	}
	leakcheck.Goroutines(t, before+1, "20 Run start/stops")
}

// smallEngine has a tiny ladder so admission decisions are cheap to reach.
type smallEngine struct{ *fakeengine.Engine }

func smallFootprint() *residency.Footprint {
	return &residency.Footprint{Weights: 1e9, Drafter: 2e8, Scratch: 1e8, KVPerRow: 1e6, Recurrent: 1e6, Ladder: []int{16, 32, 64}}
}

func (smallEngine) Footprint() *residency.Footprint { return smallFootprint() }

// holdingEngine generates like smallEngine, except that a prompt starting
// with holdToken runs until it is cancelled: a request that keeps its memory.
type holdingEngine struct{ smallEngine }

const holdToken = 7

func (e holdingEngine) Generate(ctx context.Context, req daemon.GenerateRequest, emit func([]int) error) (daemon.Outcome, error) {
	if len(req.Prompt) > 0 && req.Prompt[0] == holdToken {
		<-ctx.Done()
		return daemon.Outcome{}, ctx.Err()
	}
	return e.smallEngine.Generate(ctx, req, emit)
}

// startHolder starts a generation that holds a 32-entry context until its
// connection closes, and waits until it runs.
func startHolder(t *testing.T, ts *testServer) *rawConn {
	t.Helper()
	hold := dialRaw(t, ts.path)
	hold.hello()
	hold.write(map[string]any{"id": uint64(2), "op": wire.OpGenerate, "args": map[string]any{"ids": []uint32{holdToken, 105}, "max_tokens": 20}})
	waitFor(t, func() bool {
		for _, q := range status(t, ts.path)["requests"].([]any) {
			if q.(map[string]any)["state"] == "running" {
				return true
			}
		}
		return false
	})
	return hold
}

// A request that does not fit next to a running one waits (queued events
// with its position) until the other frees its memory, or with if_busy
// "busy" is busy at once; one that could never fit is busy at once, naming
// the numbers.
func TestAdmissionWaitsForMemory(t *testing.T) {
	opts := fakeengine.Options{ContextSize: []int{16, 32, 64}}
	ts := startServer(t, daemon.Config{}, opts)
	f := smallFootprint()
	budget := f.Model(true) + f.Session(32) + f.Session(16)/2 // room for one 32-entry session only
	r := ts.EnableResidency(daemon.ResidencyOptions{Bundle: "small", Budget: budget,
		Load: func(context.Context) (daemon.Backend, error) {
			return holdingEngine{smallEngine{fakeengine.New(opts)}}, nil
		}})
	ctx := context.Background()
	if err := r.Load(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(ctx, ts.path, client.Options{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hold := startHolder(t, ts)

	raw := dialRaw(t, ts.path)
	raw.hello()
	rep := raw.call(2, wire.OpSessionOpen, map[string]any{})
	sb := result(t, rep)["session"].(string)
	// if_busy: busy does not queue: the reply is busy, with no queued event first.
	msg := expectError(t, raw.call(20, wire.OpGenerate, map[string]any{"ids": []uint32{104, 105}, "max_tokens": 20, "session": sb, "if_busy": "busy"}), 20, wire.CodeBusy)
	if !strings.Contains(msg, "if_busy") {
		t.Errorf("if_busy busy reply %q does not say why it was not queued", msg)
	}
	msg = expectError(t, raw.call(21, wire.OpGenerate, map[string]any{"ids": []uint32{104, 105}, "max_tokens": 20, "if_busy": "soon"}), 21, wire.CodeBadRequest)
	if !strings.Contains(msg, "args.if_busy") {
		t.Errorf("bad if_busy: %q does not name the field", msg)
	}
	raw.write(map[string]any{"id": uint64(3), "op": wire.OpGenerate, "args": map[string]any{"ids": []uint32{104, 105}, "max_tokens": 20, "session": sb}})
	ev := raw.read()
	if ev["event"] != daemon.EventQueued {
		t.Fatalf("second session: %v, want a queued event", ev)
	}
	data := ev["data"].(map[string]any)
	if asUint(data["position"]) != 1 || !strings.Contains(data["reason"].(string), "exceed") {
		t.Fatalf("queued event %v, want position 1 and a reason", data)
	}
	hold.nc.Close() // the running request is cancelled and frees its memory
	for {
		m := raw.read()
		if _, isEvent := m["event"]; isEvent {
			continue
		}
		if m["ok"] != true || asUint(result(t, m)["context"]) != 32 {
			t.Fatalf("second session after the first closed: %v", m)
		}
		break
	}

	_, err = c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{104, 105}, MaxTokens: max64(50)}).Result()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeBusy || !strings.Contains(we.Message, "not enough memory") {
		t.Fatalf("a request that never fits: %v, want busy naming memory", err)
	}
}

// Malformed residency admin requests are bad_request naming the field, and
// change nothing.
func TestResidencyOpsRejectBadArgs(t *testing.T) {
	rig := newResidencyRig(t, fakeengine.Options{})
	raw := dialRaw(t, rig.ts.path)
	raw.hello()
	for i, c := range []struct {
		op   string
		args map[string]any
		want string
	}{
		{wire.OpUnload, map[string]any{"force": "yes"}, "force"},
		{wire.OpPin, map[string]any{"pinned": 1}, "pinned"},
		{wire.OpLoad, map[string]any{"now": true}, "now"},
		{wire.OpUpdateRollback, map[string]any{"to": "x"}, "to"},
	} {
		rep := raw.call(uint64(10+i), c.op, c.args)
		if msg := expectError(t, rep, uint64(10+i), wire.CodeBadRequest); !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: %q does not name %q", c.op, c.args, msg, c.want)
		}
	}
	if s := rig.state(t); s != daemon.StateUnloaded || rig.loads.Load() != 0 || rig.r.Pinned() {
		t.Fatalf("bad requests changed something: state %s, %d loads, pinned %v", s, rig.loads.Load(), rig.r.Pinned())
	}
	// Nothing to roll back to yet.
	rep := raw.call(20, wire.OpUpdateRollback, map[string]any{})
	expectError(t, rep, 20, wire.CodeNotFound)
}

// Requests waiting for memory that are cancelled leave the queue and leak
// no goroutines; the next waiter is then position 1.
func TestAdmissionWaitersCancelCleanly(t *testing.T) {
	opts := fakeengine.Options{ContextSize: []int{16, 32, 64}}
	ts := startServer(t, daemon.Config{PerCaller: 64}, opts)
	f := smallFootprint()
	r := ts.EnableResidency(daemon.ResidencyOptions{Bundle: "small", Budget: f.Model(true) + f.Session(32),
		Load: func(context.Context) (daemon.Backend, error) {
			return holdingEngine{smallEngine{fakeengine.New(opts)}}, nil
		}})
	ctx := context.Background()
	if err := r.Load(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	hold := startHolder(t, ts)
	defer hold.nc.Close()
	raw := dialRaw(t, ts.path)
	raw.hello()
	before := runtime.NumGoroutine()
	for round := range 20 {
		id := uint64(100 + round)
		raw.write(map[string]any{"id": id, "op": wire.OpGenerate, "args": map[string]any{"ids": []uint32{104}, "max_tokens": 20}})
		ev := raw.read()
		if ev["event"] != daemon.EventQueued || asUint(ev["data"].(map[string]any)["position"]) != 1 {
			t.Fatalf("round %d: %v, want queued at position 1", round, ev)
		}
		raw.write(map[string]any{"id": id + 1000, "op": wire.OpCancel, "args": map[string]any{"id": id}})
		replies := map[uint64]map[string]any{}
		for len(replies) < 2 {
			m := raw.read()
			if _, isEvent := m["event"]; !isEvent {
				replies[asUint(m["id"])] = m
			}
		}
		if replies[id]["ok"] != false || replies[id+1000]["ok"] != true {
			t.Fatalf("round %d: cancel %v, cancelled request %v", round, replies[id+1000], replies[id])
		}
	}
	leakcheck.Goroutines(t, before+2, "20 cancelled waiters")
}

// readReply reads until the reply to id, skipping events.
func readReply(raw *rawConn, id uint64) map[string]any {
	for {
		m := raw.read()
		if _, isEvent := m["event"]; !isEvent && asUint(m["id"]) == id {
			return m
		}
	}
}

// closeCheckedEngine finishes each generation a little after it is
// cancelled (a step in progress) and records a Close that came while a
// generation was still running.
type closeCheckedEngine struct {
	measuredEngine
	running      atomic.Int32
	closedInUse  atomic.Bool
	closedAtLast atomic.Bool
}

func (e *closeCheckedEngine) Generate(ctx context.Context, req daemon.GenerateRequest, emit func([]int) error) (daemon.Outcome, error) {
	e.running.Add(1)
	defer e.running.Add(-1)
	out, err := e.measuredEngine.Generate(ctx, req, emit)
	time.Sleep(50 * time.Millisecond) // the step that was running when the cancel came
	return out, err
}

func (e *closeCheckedEngine) Close() error {
	e.closedInUse.Store(e.running.Load() > 0)
	e.closedAtLast.Store(true)
	return nil
}

// A forced unload closes the backend only after the requests it cancelled
// have returned: the reference backend's weights are memory-mapped.
func TestForcedUnloadClosesAfterCancelledRequestsReturn(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{TokenDelay: 5 * time.Millisecond})
	var eng *closeCheckedEngine
	r := ts.EnableResidency(daemon.ResidencyOptions{
		Bundle: "fake/instant@1",
		Load: func(context.Context) (daemon.Backend, error) {
			eng = &closeCheckedEngine{measuredEngine: measuredEngine{fakeengine.New(fakeengine.Options{TokenDelay: 5 * time.Millisecond})}}
			return eng, nil
		},
	})
	ctx := context.Background()
	c, err := client.Dial(ctx, ts.path, client.Options{Name: "unload-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := r.Load(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	stream := c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{104}, MaxTokens: max64(60000)})
	for deadline := time.Now().Add(5 * time.Second); eng.running.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the generation never started")
		}
	}
	if err := r.Unload(true, "test"); err != nil {
		t.Fatal(err)
	}
	if !eng.closedAtLast.Load() || eng.closedInUse.Load() {
		t.Fatalf("backend closed: %v, while a generation still ran: %v", eng.closedAtLast.Load(), eng.closedInUse.Load())
	}
	var we *wire.Error
	if _, err := stream.Result(); !errors.As(err, &we) || we.Code != wire.CodeCancelled {
		t.Fatalf("the stream under a forced unload ended with %v, want cancelled", err)
	}
}

// Idle sessions' state never keeps a request out: with the budget full of
// idle sessions (a backend that cannot park them), another app's request
// is admitted at once and the least recently used session's state is
// dropped (its next turn prefills again), as the pressure ladder does.
// Before, the request waited for memory until those sessions closed.
func TestAdmissionEvictsIdleSessions(t *testing.T) {
	opts := fakeengine.Options{ContextSize: []int{16, 32, 64}}
	ts := startServer(t, daemon.Config{}, opts)
	f := smallFootprint()
	r := ts.EnableResidency(daemon.ResidencyOptions{Bundle: "small", Budget: f.Model(true) + 2*f.Session(32) + f.Session(16)/2,
		Load: func(context.Context) (daemon.Backend, error) { return smallEngine{fakeengine.New(opts)}, nil }})
	ctx := context.Background()
	if err := r.Load(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	idle := dialRaw(t, ts.path)
	idle.hello()
	var ids []string
	for i := range 2 {
		s := result(t, idle.call(uint64(10+i), wire.OpSessionOpen, map[string]any{}))["session"].(string)
		idle.write(map[string]any{"id": uint64(20 + i), "op": wire.OpGenerate, "args": map[string]any{"ids": []uint32{104}, "max_tokens": 20, "session": s}})
		if rep := readReply(idle, uint64(20+i)); rep["ok"] != true {
			t.Fatalf("session %d: %v", i, rep)
		}
		ids = append(ids, s)
	}
	other := dialRaw(t, ts.path)
	result(t, other.call(1, "hello", map[string]any{"protocol": 1, "client": "other-app"}))
	other.write(map[string]any{"id": uint64(2), "op": wire.OpGenerate, "args": map[string]any{"ids": []uint32{104}, "max_tokens": 20, "if_busy": "busy"}})
	if rep := readReply(other, 2); rep["ok"] != true {
		t.Fatalf("a request with the budget full of idle sessions: %v, want it admitted at once", rep)
	}
	ctxOf := map[string]uint64{}
	for _, s := range status(t, ts.path)["sessions"].([]any) {
		m := s.(map[string]any)
		ctxOf[m["session"].(string)] = asUint(m["context"])
	}
	if ctxOf[ids[0]] != 0 || ctxOf[ids[1]] != 32 {
		t.Fatalf("session contexts %v: want the least recently used (%s) dropped to 0 and %s kept", ctxOf, ids[0], ids[1])
	}
}

// Sessions are capped per connection and per uid: past a cap session.open
// is busy naming the limit, and closing one makes room.
func TestSessionCaps(t *testing.T) {
	ts := startServer(t, daemon.Config{Sessions: daemon.SessionLimits{PerConnection: 3, PerUID: 5}}, fakeengine.Options{})
	a, b := dialRaw(t, ts.path), dialRaw(t, ts.path)
	a.hello()
	b.hello()
	var first string
	for i := range 3 {
		s := result(t, a.call(uint64(10+i), wire.OpSessionOpen, map[string]any{}))["session"].(string)
		if i == 0 {
			first = s
		}
	}
	if msg := expectError(t, a.call(20, wire.OpSessionOpen, map[string]any{}), 20, wire.CodeBusy); !strings.Contains(msg, "sessions_per_connection") {
		t.Errorf("per-connection cap: %q does not name the limit", msg)
	}
	result(t, b.call(30, wire.OpSessionOpen, map[string]any{}))
	result(t, b.call(31, wire.OpSessionOpen, map[string]any{}))
	if msg := expectError(t, b.call(32, wire.OpSessionOpen, map[string]any{}), 32, wire.CodeBusy); !strings.Contains(msg, "sessions_per_uid") {
		t.Errorf("per-uid cap: %q does not name the limit", msg)
	}
	result(t, a.call(40, wire.OpSessionClose, map[string]any{"session": first}))
	result(t, b.call(41, wire.OpSessionOpen, map[string]any{}))
	st := status(t, ts.path)
	if asUint(st["sessions_total"]) != 5 || len(st["sessions"].([]any)) != 5 {
		t.Fatalf("status: sessions_total %v, %d listed; want 5", st["sessions_total"], len(st["sessions"].([]any)))
	}
	a.nc.Close() // a connection's sessions are freed with it, and leave the uid's count
	waitFor(t, func() bool { return asUint(status(t, ts.path)["sessions_total"]) == 3 })
	c := dialRaw(t, ts.path)
	c.hello()
	result(t, c.call(50, wire.OpSessionOpen, map[string]any{}))
	result(t, c.call(51, wire.OpSessionOpen, map[string]any{}))
}
