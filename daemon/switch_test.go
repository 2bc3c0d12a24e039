package daemon_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

func loaderFor(rev string, delay time.Duration) func(context.Context) (daemon.Backend, error) {
	return func(context.Context) (daemon.Backend, error) {
		return fakeengine.New(fakeengine.Options{Revision: rev, TokenDelay: delay}), nil
	}
}

// An update lands while a session streams: the stream finishes on the old
// revision, the next request reports the new one; rollback restores the
// old (update.rollback); a new revision that fails verification never goes live.
func TestSwitchWaitsForStreamsAndRollsBack(t *testing.T) {
	rig := newResidencyRig(t, fakeengine.Options{Revision: "rev-a", TokenDelay: 2 * time.Millisecond})
	ctx := context.Background()
	if err := rig.r.Load(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	stream := rig.c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{104}, MaxTokens: max64(150)})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		st, err := rig.c.Status(ctx)
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("the stream never started: %v", err)
		}
		if st.Running == 1 {
			break
		}
	}
	switched := make(chan error, 1)
	go func() { switched <- rig.r.Switch(ctx, "rev-b", func() error { return nil }, loaderFor("rev-b", 0)) }()
	res, err := stream.Result()
	if err != nil || res.Revision != "rev-a" || res.Usage.GeneratedTokens != 150 {
		t.Fatalf("the running stream: %+v %v, want all 150 tokens on rev-a", res, err)
	}
	if err := <-switched; err != nil {
		t.Fatal(err)
	}
	next, err := rig.c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{104}, MaxTokens: max64(2)}).Result()
	if err != nil || next.Revision != "rev-b" {
		t.Fatalf("the next request: %+v %v, want rev-b", next, err)
	}

	// A corrupted revision: verification fails, rev-b keeps serving.
	err = rig.r.Switch(ctx, "rev-c", func() error { return errors.New("coreai/chunk_03.bin: sha256 mismatch") }, loaderFor("rev-c", 0))
	if err == nil || !strings.Contains(err.Error(), "chunk_03.bin") {
		t.Fatalf("switch to a corrupted revision: %v", err)
	}
	if r, err := rig.c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{104}, MaxTokens: max64(2)}).Result(); err != nil || r.Revision != "rev-b" {
		t.Fatalf("after a refused update: %+v %v, want rev-b still", r, err)
	}

	var res2 map[string]any
	if err := rig.c.Admin(ctx, wire.OpUpdateRollback, map[string]any{}, &res2); err != nil || res2["state"] != wire.StateReady || res2["revision"] != "rev-a" {
		t.Fatalf("update.rollback: %v %v", res2, err)
	}
	back, err := rig.c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{104}, MaxTokens: max64(2)}).Result()
	if err != nil || back.Revision != "rev-a" {
		t.Fatalf("after rollback: %+v %v, want rev-a", back, err)
	}
}
