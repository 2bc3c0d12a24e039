package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

func TestStatusAndPs(t *testing.T) {
	sock := startDaemon(t)
	out, _, err := runCtl(t, "", "status", "--socket", sock)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"state       ready", "fake/instant @ 0000000000000000000000000000000000000fake", "1 connected"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCtl(t, "", "status", "--socket", sock, "--json")
	var st wire.StatusResult
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.State != "ready" || st.Bundle.Model != "fake-bytes" {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	out, _, err = runCtl(t, "", "ps", "--socket", sock, "--json")
	var ps struct {
		Sessions []wire.SessionInfo `json:"sessions"`
		Requests []wire.RequestInfo `json:"requests"`
	}
	if err != nil || json.Unmarshal([]byte(out), &ps) != nil || ps.Sessions == nil || ps.Requests == nil {
		t.Fatalf("ps --json: %v\n%s", err, out)
	}
	if out, _, err = runCtl(t, "", "ps", "--socket", sock); err != nil || !strings.Contains(out, "SESSION") || !strings.Contains(out, "REQUEST") {
		t.Fatalf("ps: %v\n%s", err, out)
	}
	for _, cmd := range []string{"status", "ps"} {
		if _, _, err := runCtl(t, "", cmd, "--socket", filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "forged is not running at") {
			t.Fatalf("%s with no daemon: %v", cmd, err)
		}
	}
}

func TestChatAndGenerate(t *testing.T) {
	sock := startDaemon(t)
	want := strings.ToValidUTF8(strings.Repeat(fakeengine.Reply, 2)[:30], "\uFFFD")
	out, errOut, err := runCtl(t, "", "chat", "--socket", sock, "--usage", "hello", "there")
	if err != nil || out != want+"\n" || !strings.Contains(errOut, "[stop: ") {
		t.Fatalf("chat: %v\nout %q\nerr %q", err, out, errOut)
	}
	// Message on stdin (not a terminal), JSON lines.
	out, _, err = runCtl(t, "hi from stdin", "chat", "--socket", sock, "--json", "--max-tokens", "5")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last struct {
		Event  string                `json:"event"`
		Result wire.GenerationResult `json:"result"`
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || last.Event != "done" || last.Result.Usage.GeneratedTokens != 5 || last.Result.FinishReason != "length" {
		t.Fatalf("chat --json last line %q", lines[len(lines)-1])
	}
	var streamed string
	for _, l := range lines[:len(lines)-1] {
		var ev struct {
			Event string `json:"event"`
			Text  string `json:"text"`
		}
		if json.Unmarshal([]byte(l), &ev) != nil || ev.Event != "token" {
			t.Fatalf("token line %q", l)
		}
		streamed += ev.Text
	}
	if streamed != last.Result.Text {
		t.Errorf("streamed %q, result %q", streamed, last.Result.Text)
	}
	out, _, err = runCtl(t, "", "generate", "--socket", sock, "--ids", "1,2,3", "--stop", "wö")
	if err != nil || out != "héllo \n" {
		t.Fatalf("generate: %v %q", err, out)
	}
	if _, _, err := runCtl(t, "", "generate", "--socket", sock, "--ids", "1,x"); err == nil || !strings.Contains(err.Error(), `item 2 ("x")`) {
		t.Fatalf("bad ids: %v", err)
	}
	if _, _, err := runCtl(t, "", "chat", "--socket", sock, "--thinking", "maybe", "hi"); err == nil || !strings.Contains(err.Error(), "--thinking") {
		t.Fatalf("bad --thinking: %v", err)
	}
	_, _, err = runCtl(t, "", "generate", "--socket", sock, "--max-tokens", "70000", "x")
	if err == nil || !strings.Contains(err.Error(), "context_exceeded") {
		t.Fatalf("context exceeded: %v", err)
	}
}

// described is the fake engine naming a backend, as modelbackend does.
type described struct {
	*fakeengine.Engine
	info *wire.BackendInfo
}

func (d described) BackendInfo() *wire.BackendInfo { return d.info }

var coreaiInfo = &wire.BackendInfo{
	Name: wire.BackendCoreAI, Why: "auto: the snapshot carries the Core AI runtime and the bridge at /usr/local/lib/forged/libCoreAIBridge.dylib loads",
	ComputeUnits: "cpuAndNeuralEngine", BridgeRelease: "CoreAIBridge 1 (Core AI 27.0)", BridgePath: "/usr/local/lib/forged/libCoreAIBridge.dylib",
	OSMPSGraph: "7.0.80", PackageMPSGraph: []string{"chunk_00.aimodel=7.0.80 (compiled)", "head.aimodel=7.0.79 (source)"},
	Chip: "h18 (Apple M6 Max)", KV: "v8",
}

// The backend the daemon names reaches status over the socket: one line
// with the Core AI details, the package versions indented, and why; or the
// reference engine with its kernels. --json passes it through unchanged.
func TestStatusShowsTheBackend(t *testing.T) {
	for _, tc := range []struct {
		info *wire.BackendInfo
		want []string
	}{
		{coreaiInfo, []string{
			"backend     coreai (bridge CoreAIBridge 1 (Core AI 27.0) at /usr/local/lib/forged/libCoreAIBridge.dylib; compute cpuAndNeuralEngine; chip h18 (Apple M6 Max); KV v8; OS MPSGraph 7.0.80)\n",
			"            package MPSGraph versions:\n              chunk_00.aimodel=7.0.80 (compiled)\n              head.aimodel=7.0.79 (source)\n",
			"            why: auto: the snapshot carries the Core AI runtime and the bridge at /usr/local/lib/forged/libCoreAIBridge.dylib loads\n",
		}},
		{&wire.BackendInfo{Name: wire.BackendRef, Kernels: "avx512", Numerics: "fast", Why: "auto: Core AI needs macOS (this is linux); the snapshot carries export/, served by the reference engine on the CPU"}, []string{
			"backend     ref (kernels avx512; numerics fast)\n            why: auto: Core AI needs macOS (this is linux)",
		}},
	} {
		sock, _ := serveDaemon(t, described{fakeengine.New(fakeengine.Options{}), tc.info})
		out, _, err := runCtl(t, "", "status", "--socket", sock)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("status lacks %q:\n%s", w, out)
			}
		}
		out, _, err = runCtl(t, "", "status", "--socket", sock, "--json")
		var st wire.StatusResult
		if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.Backend == nil || !reflect.DeepEqual(*st.Backend, *tc.info) {
			t.Fatalf("status --json backend %+v (%v), want %+v\n%s", st.Backend, err, tc.info, out)
		}
	}
	// A daemon that names no backend (the fake engine alone): no line.
	out, _, err := runCtl(t, "", "status", "--socket", startDaemon(t))
	if err != nil || strings.Contains(out, "backend") {
		t.Fatalf("status without a backend: %v\n%s", err, out)
	}
}

// Parked sessions are counted and marked; --json keeps parked and the
// memory estimate.
func TestStatusShowsParkedSessions(t *testing.T) {
	st := &wire.StatusResult{Daemon: "test", State: "ready", Connections: 2, Backend: coreaiInfo,
		Sessions: []wire.SessionInfo{
			{Session: "s1", UID: 501, Client: "chat", Tokens: 1200, Context: 2048},
			{Session: "s2", UID: 501, Client: "chat", Tokens: 300, Parked: true},
		},
		Memory:         wire.Memory{Total: 3 << 30, Weights: 2 << 30, KV: 1 << 30},
		MemoryEstimate: &wire.Memory{Total: 3 << 30, Weights: 2 << 30, KV: 1 << 30},
	}
	var b strings.Builder
	if err := showStatus(&b, st, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{
		"clients     2 connected, 2 sessions (1 parked)\n",
		"  session   s1 uid 501 chat: 1200 tokens, context 2048\n",
		"  session   s2 uid 501 chat: 300 tokens, parked (",
		"estimate    3.0 GiB total (weights 2.0 GiB, kv 1.0 GiB, state 0 B, scratch 0 B) (the memory model's account)\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("status lacks %q:\n%s", w, out)
		}
	}
	b.Reset()
	if err := showStatus(&b, st, true); err != nil {
		t.Fatal(err)
	}
	var back wire.StatusResult
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil || !reflect.DeepEqual(&back, st) {
		t.Fatalf("--json round trip: %v\n%s", err, b.String())
	}
	if !strings.Contains(b.String(), `"parked": true`) {
		t.Errorf("--json lacks parked: %s", b.String())
	}
}

// TestPsShowsSessionStates: ps marks each session in memory, parked (its
// state out of the model's memory) or empty.
func TestPsShowsSessionStates(t *testing.T) {
	st := &wire.StatusResult{Sessions: []wire.SessionInfo{
		{Session: "s1", Client: "a", Tokens: 40, Context: 8192},
		{Session: "s2", Client: "b", Tokens: 90, Parked: true},
		{Session: "s3", Client: "c"},
	}}
	var b strings.Builder
	if err := showPs(&b, st, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for i, want := range []string{"in memory", "parked", "empty"} {
		if row := lines[1+i]; !strings.HasPrefix(row, st.Sessions[i].Session) || !strings.HasSuffix(strings.TrimSpace(row), want) {
			t.Errorf("row %q, want session %s %s", row, st.Sessions[i].Session, want)
		}
	}
}

// Request ids are per connection (each client numbers its own, so two
// connections both have an id 2): ps shows the daemon-wide number beside
// it, the caller (uid, pid, app name), the priority and the age, for a
// running and a queued generation of a real daemon with one slot.
func TestPsShowsDaemonWideIDsAndCallers(t *testing.T) {
	sock, _ := serveDaemon(t, fakeengine.New(fakeengine.Options{TokenDelay: time.Millisecond}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var streams []*client.Stream
	for i, prio := range []string{wire.PriorityInteractive, wire.PriorityBackground} {
		c, err := client.Dial(ctx, sock, client.Options{Name: fmt.Sprintf("app%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		streams = append(streams, c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{1}, Priority: prio}, client.MaxTokens(60000)))
		for { // the first runs before the second is sent, so the order is known
			st, err := c.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Requests) == i+1 {
				break
			}
		}
	}
	out, _, err := runCtl(t, "", "ps", "--socket", sock)
	if err != nil {
		t.Fatal(err)
	}
	uid, pid := os.Getuid(), os.Getpid()
	for i, want := range []string{
		fmt.Sprintf(`^1 +2 +%d +%d +app0 +generate +interactive +running +\d`, uid, pid),
		fmt.Sprintf(`^2 +2 +%d +%d +app1 +generate +background +queued +\d`, uid, pid),
	} {
		if !regexp.MustCompile(`(?m)` + want).MatchString(out) {
			t.Errorf("request %d: no line matching %s in\n%s", i+1, want, out)
		}
	}
	if !strings.Contains(out, "REQUEST  ID  UID") {
		t.Errorf("header:\n%s", out)
	}
	out, _, err = runCtl(t, "", "ps", "--socket", sock, "--json")
	var ps struct{ Requests []wire.RequestInfo }
	if err != nil || json.Unmarshal([]byte(out), &ps) != nil || len(ps.Requests) != 2 {
		t.Fatalf("ps --json: %v\n%s", err, out)
	}
	if r := ps.Requests[1]; r.Seq != 2 || r.ID != 2 || r.PID != int32(pid) || r.Priority != wire.PriorityBackground || r.AgeMS > ps.Requests[0].AgeMS {
		t.Errorf("ps --json second request %+v (first %+v)", r, ps.Requests[0])
	}
	cancel()
	for _, s := range streams {
		s.Result()
	}
}
