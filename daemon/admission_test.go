package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/refdata"
)

// realText renders and tokenizes with the real Qwen3 template and
// tokenizer (modelbackend, tokenizer only) and generates with the fake
// engine: the memory of a big prompt is the real one.
type realText struct {
	*fakeengine.Engine
	text    *modelbackend.Backend
	renders atomic.Int64
}

func (b *realText) RenderChat(p daemon.ChatPrompt) (string, error) {
	b.renders.Add(1)
	return b.text.RenderChat(p)
}

func (b *realText) Tokenize(s string) ([]int, error) { return b.text.Tokenize(s) }

func startRealText(t testing.TB, cfg daemon.Config, opts fakeengine.Options) (*testServer, *realText) {
	t.Helper()
	rb, err := modelbackend.Open(filepath.Dir(refdata.Path(t, "qwen3", "tokenizer.json")), modelbackend.Options{TokenizerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	b := &realText{Engine: fakeengine.New(opts), text: rb}
	return startBackend(t, cfg, b), b
}

// bigToolChat is a chat whose one tool has a description of about n bytes
// (distinct words, so the tokenizer cannot merge it into a few tokens).
func bigToolChat(n int) map[string]any {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "w%x ", i*2654435761%1000003)
	}
	tool := map[string]any{"type": "function", "function": map[string]any{"name": "f", "description": sb.String()}}
	return map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "tools": []any{tool}, "max_tokens": 4}
}

// heapPeak samples the live heap until stop is closed and returns the
// largest value seen.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return out
}

// The memory one uid's big chat frames cost the daemon: a frame of
// ~1 MiB (a long tool description) alone, then 32 of them at once from
// one uid on 32 connections. The figures are printed (a busy machine's
// numbers); the bound asserted is generous: 32 parallel frames must not
// cost one preparation per frame (before the fix, every frame was rendered and
// tokenized at once: ~40 MiB each; now one uid prepares one at a time).
func TestAdmissionBigFrameMemory(t *testing.T) {
	ts, b := startRealText(t, daemon.Config{}, fakeengine.Options{})
	body := bigToolChat(900 << 10)
	one := func(r *rawConn, id uint64) map[string]any {
		r.write(map[string]any{"id": id, "op": "chat", "args": body})
		for {
			m, err := r.tryRead(2 * time.Minute) // a busy machine renders slowly
			if err != nil {
				t.Errorf("read: %v", err)
				return map[string]any{"ok": false, "error": map[string]any{"code": "read failed"}}
			}
			if _, isReply := m["ok"]; isReply {
				return m
			}
		}
	}
	r := dialRaw(t, ts.path)
	r.hello()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	peak := heapPeak(stop)
	rep := one(r, 2)
	close(stop)
	runtime.ReadMemStats(&after)
	single := int64(<-peak) - int64(before.HeapAlloc)
	t.Logf("one ~900 KiB chat frame: reply ok=%v; allocated %.1f MiB, peak live heap +%.1f MiB",
		rep["ok"], float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), float64(single)/(1<<20))

	const parallel = 32
	conns := make([]*rawConn, parallel)
	for i := range conns {
		conns[i] = dialRaw(t, ts.path)
		// Distinct app names: the per-caller limit does not apply, the uid's does.
		result(t, conns[i].call(1, "hello", map[string]any{"protocol": 1, "client": fmt.Sprintf("app%d", i)}))
	}
	runtime.GC()
	runtime.ReadMemStats(&before)
	rendersBefore := b.renders.Load()
	stop = make(chan struct{})
	peak = heapPeak(stop)
	var wg sync.WaitGroup
	codes := make([]string, parallel)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := one(c, 2)
			if ok, _ := m["ok"].(bool); ok {
				codes[i] = "ok"
			} else {
				codes[i] = m["error"].(map[string]any)["code"].(string)
			}
		}()
	}
	wg.Wait()
	close(stop)
	par := int64(<-peak) - int64(before.HeapAlloc)
	t.Logf("%d such frames at once from one uid: peak live heap +%.1f MiB (%.1f MiB per frame), %d rendered, replies %v",
		parallel, float64(par)/(1<<20), float64(par)/parallel/(1<<20), b.renders.Load()-rendersBefore, tally(codes))
	// Each waiting frame holds its decoded arguments (a few MiB); the
	// preparation of one (tens of MiB) runs at a time. Before, every frame
	// was prepared at once: ~48 MiB each, 1.5 GiB for 32.
	if bound := 2*max(single, 8<<20) + parallel*(12<<20); par > bound {
		t.Errorf("%d parallel big frames from one uid raised the live heap by %d MiB, more than %d MiB (two preparations and 12 MiB per waiting frame)",
			parallel, par>>20, bound>>20)
	}
}

func tally(codes []string) map[string]int {
	m := map[string]int{}
	for _, c := range codes {
		m[c]++
	}
	return m
}

// 100 app names from one uid fill the whole queue; a second, real uid
// (65534, kernel credentials) still gets its requests through, not busy,
// and each is served in its uid's turn. Before, the queue was one pool
// keyed by uid + name: the second uid got busy.
//
// The engine's gate holds the one running generation until the second
// uid's four requests are queued: otherwise every step yields the slot to
// a waiting request, the queue drains from the moment the flood ends, and
// the second uid would often find it no longer full.
func TestFairSharePerUIDRealUID(t *testing.T) {
	if os.Getenv("FORGED_TEST_FAIR_SOCKET") != "" {
		return // the child side runs in TestFairChild
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to start a process as another uid")
	}
	gate := make(chan struct{})
	ts := startServer(t, daemon.Config{MaxQueue: 64, PerCaller: 4, PerUID: 1000}, fakeengine.Options{TokenDelay: 2 * time.Millisecond, Gate: gate})
	var flood []*rawConn
	for i := range 100 {
		r := dialRaw(t, ts.path)
		result(t, r.call(1, "hello", map[string]any{"protocol": 1, "client": fmt.Sprintf("name%d", i)}))
		for j := range 4 {
			r.write(map[string]any{"id": uint64(10 + j), "op": "generate", "args": map[string]any{"ids": []int{1}, "max_tokens": 60000}}) // never ends in the test
		}
		flood = append(flood, r)
	}
	waitFor(t, func() bool { return asUint(status(t, ts.path)["queued"]) == 64 })
	childDone := make(chan struct{})
	opened := make(chan bool, 1)
	go func() { // open the gate once the second uid's requests all wait
		ok := false
		defer func() { opened <- ok }() // also when status fails this goroutine
		for {
			select {
			case <-childDone:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if requestsOfUID(t, ts.path, 65534) == 4 {
				close(gate)
				ok = true
				return
			}
		}
	}()
	out := runAsNobody(t, "TestFairChild", "FORGED_TEST_FAIR_SOCKET="+ts.path)
	close(childDone)
	if !<-opened {
		t.Fatalf("the second uid's 4 requests were never all queued behind the full queue:\n%s", out)
	}
	if !strings.Contains(out, "FAIR-CHECKED") {
		t.Fatalf("child did not run its checks:\n%s", out)
	}
	for _, r := range flood {
		r.nc.Close()
	}
}

// requestsOfUID counts the requests status lists for uid.
func requestsOfUID(t *testing.T, path string, uid uint64) int {
	n := 0
	reqs, _ := status(t, path)["requests"].([]any)
	for _, r := range reqs {
		if m, ok := r.(map[string]any); ok && asUint(m["uid"]) == uid {
			n++
		}
	}
	return n
}

// TestFairChild is the second uid of TestFairSharePerUIDRealUID.
func TestFairChild(t *testing.T) {
	sock := os.Getenv("FORGED_TEST_FAIR_SOCKET")
	if sock == "" {
		t.Skip("run by TestFairSharePerUIDRealUID")
	}
	r := dialRaw(t, sock)
	result(t, r.call(1, "hello", map[string]any{"protocol": 1, "client": "editor"}))
	for j := range 4 {
		r.write(map[string]any{"id": uint64(10 + j), "op": "generate", "args": map[string]any{"ids": []int{1}, "max_tokens": 5}})
	}
	for done := 0; done < 4; {
		m, err := r.tryRead(60 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, isEvent := m["event"]; isEvent {
			continue
		}
		if m["ok"] != true {
			t.Fatalf("uid %d's request %v with the queue full of another uid's: %v", os.Getuid(), m["id"], m)
		}
		done++
	}
	println("FAIR-CHECKED")
}
