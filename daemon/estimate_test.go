package daemon_test

import (
	"context"
	"testing"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/residency"
)

// footprintEngine is the fake engine with a memory model.
type footprintEngine struct {
	*fakeengine.Engine
	f residency.Footprint
}

func (e footprintEngine) Footprint() *residency.Footprint { return &e.f }

// status reports the memory model's estimate next to the measured memory:
// weights, one session's KV at its entry's rows, its recurrent state, and
// the shared plus per-session scratch (computed here by hand).
func TestStatusReportsMemoryEstimate(t *testing.T) {
	fp := residency.Footprint{Weights: 1000, Scratch: 100, KVPerRow: 10, Recurrent: 7, SessionScratch: 3,
		Ladder: []int{64, 128}, KVLen: map[int]int{64: 80}}
	ts := startServer(t, daemon.Config{}, fakeengine.Options{ContextSize: []int{64, 128}, StopAfter: 2})
	ctx := context.Background()
	c, err := client.Dial(ctx, ts.path, client.Options{Name: "estimate-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st, err := c.Status(ctx); err != nil || st.MemoryEstimate != nil {
		t.Fatalf("a backend without a memory model reports an estimate: %+v %v", st, err)
	}
	ts.SetBackend(footprintEngine{Engine: fakeengine.New(fakeengine.Options{ContextSize: []int{64, 128}, StopAfter: 2}), f: fp})
	s, err := c.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, prompt := uint64(2), "hello"
	if _, err := c.Generate(ctx, wire.GenerateArgs{Prompt: &prompt, MaxTokens: &n, Session: s}).Result(); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx)
	if err != nil || st.MemoryEstimate == nil {
		t.Fatalf("status %+v %v", st, err)
	}
	want := wire.Memory{Weights: 1000, KV: 10 * 80, State: 7, Scratch: 100 + 3}
	want.Total = want.Weights + want.KV + want.State + want.Scratch
	if *st.MemoryEstimate != want {
		t.Fatalf("memory_estimate %+v, want %+v", *st.MemoryEstimate, want)
	}
}
