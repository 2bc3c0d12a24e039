package daemon_test

import (
	"fmt"
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
// cost more than 4 renders' worth (before the fix, every frame was rendered and
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
	if par > 4*max(single, 8<<20) {
		t.Errorf("%d parallel big frames from one uid raised the live heap by %d MiB, more than 4 single frames' worth (%d MiB each)",
			parallel, par>>20, single>>20)
	}
}

func tally(codes []string) map[string]int {
	m := map[string]int{}
	for _, c := range codes {
		m[c]++
	}
	return m
}
