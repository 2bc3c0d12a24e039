package residency

import (
	"slices"
	"testing"
	"time"

	"github.com/forgedaemon/forged/internal/sysinfo"
)

func TestPressureWalksTheLadderInOrder(t *testing.T) {
	f := forgeFootprint(t, KVFP16)
	t0 := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	l := Loaded{Model: true, Drafter: true, Idle: []IdleSession{
		{ID: "s3", Entry: 32768, Tokens: 5000, LastUsed: t0.Add(3 * time.Minute)},
		{ID: "s1", Entry: 65536, Tokens: 40000, Spillable: true, LastUsed: t0.Add(2 * time.Minute)},
		{ID: "s2", Entry: 16384, Tokens: 9000, Spillable: true, LastUsed: t0},
		{ID: "s4", Entry: 8192, Tokens: 100, LastUsed: t0}, // already at the smallest entry: nothing to shrink
	}}
	names := func(steps []Step) []string {
		var out []string
		for _, s := range steps {
			out = append(out, s.String())
		}
		return out
	}
	if got := f.PressureSteps(sysinfo.Normal, l); len(got) != 0 {
		t.Fatalf("normal pressure: %v, want nothing", names(got))
	}
	warning := f.PressureSteps(sysinfo.Warning, l)
	want := []Step{
		{Kind: DropSession, Session: "s2", Frees: f.Session(16384)},
		{Kind: DropSession, Session: "s1", Frees: f.Session(65536)},
		{Kind: Shrink, Session: "s3", To: 8192, Frees: f.KVPerRow * (32768 - 8192)},
	}
	if !slices.Equal(warning, want) {
		t.Fatalf("warning:\n got %v\nwant %v", names(warning), names(want))
	}
	critical := f.PressureSteps(sysinfo.Critical, l)
	want = append(want, Step{Kind: DropDrafter, Frees: 1.5e9}, Step{Kind: Unload, Frees: f.Weights + f.Scratch})
	if !slices.Equal(critical, want) {
		t.Fatalf("critical:\n got %v\nwant %v", names(critical), names(want))
	}
	for _, s := range critical {
		t.Log(s)
	}
	l.Generating = true
	if got := f.PressureSteps(sysinfo.Critical, l); got[len(got)-1].Kind != DropDrafter {
		t.Fatalf("critical while generating ends with %v, want the model kept loaded", got[len(got)-1])
	}
}

func TestKeepAlive(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	k := KeepAlive{Idle: DefaultKeepAlive}
	for _, c := range []struct {
		idle               time.Duration
		pinned, generating bool
		want               bool
	}{
		{9*time.Minute + 59*time.Second, false, false, false},
		{10 * time.Minute, false, false, true},
		{time.Hour, true, false, false},
		{time.Hour, false, true, false},
	} {
		if got := k.Expired(t0.Add(c.idle), t0, c.pinned, c.generating); got != c.want {
			t.Errorf("idle %v pinned=%v generating=%v: expired=%v, want %v", c.idle, c.pinned, c.generating, got, c.want)
		}
	}
	if (KeepAlive{Idle: -1}).Expired(t0.Add(1000*time.Hour), t0, false, false) {
		t.Error("a negative keep-alive must mean never unload")
	}
	// 0 (keep_alive "0s"): unload as soon as idle, but never under a
	// running request or a pin.
	if !(KeepAlive{}).Expired(t0, t0, false, false) {
		t.Error("a keep-alive of 0 must unload an idle model at once")
	}
	if (KeepAlive{}).Expired(t0.Add(time.Hour), t0, false, true) || (KeepAlive{}).Expired(t0.Add(time.Hour), t0, true, false) {
		t.Error("a keep-alive of 0 unloaded a generating or pinned model")
	}
}
