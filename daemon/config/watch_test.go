package config

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// recorder collects a Watcher's callbacks.
type recorder struct {
	mu      sync.Mutex
	reloads []*Config
	errs    []error
}

func (r *recorder) opts(debounce time.Duration) WatchOptions {
	return WatchOptions{
		Debounce: debounce,
		OnReload: func(_, c *Config) { r.mu.Lock(); r.reloads = append(r.reloads, c); r.mu.Unlock() },
		OnError:  func(err error) { r.mu.Lock(); r.errs = append(r.errs, err); r.mu.Unlock() },
	}
}

func (r *recorder) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reloads), len(r.errs)
}

// waitFor polls cond with a generous deadline (no timing assertions: a slow
// machine only makes the test slower, never wrong).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func startWatch(t *testing.T, initial string, debounce time.Duration) (string, *Watcher, *recorder) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if initial != "" {
		writeFile(t, path, initial)
	}
	r := &recorder{}
	w, err := Watch(context.Background(), path, r.opts(debounce))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return path, w, r
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// atomicWrite saves like vim or a careful tool: a new file renamed over the old.
func atomicWrite(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".swp"
	writeFile(t, tmp, content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func keepAlive(w *Watcher) time.Duration { return w.Current().KeepAlive.D() }

func TestWatchAtomicRenameEdits(t *testing.T) {
	path, w, r := startWatch(t, `{"keep_alive": "1m"}`, 50*time.Millisecond)
	if keepAlive(w) != time.Minute {
		t.Fatalf("initial keep_alive %s", keepAlive(w))
	}
	// Twice: the second rename must still be seen (a file watch would have
	// been lost with the first inode).
	for i, v := range []string{"2m", "3m"} {
		atomicWrite(t, path, `{"keep_alive": "`+v+`"}`)
		want, _ := time.ParseDuration(v)
		// The config is in force before OnReload runs, so wait for both.
		waitFor(t, "reload to "+v, func() bool {
			n, _ := r.counts()
			return keepAlive(w) == want && n > i
		})
		if n, _ := r.counts(); n != i+1 {
			t.Fatalf("after edit %d: %d reload callbacks", i+1, n)
		}
	}
}

func TestWatchInPlaceWrite(t *testing.T) {
	path, w, _ := startWatch(t, `{"drafter": "on"}`, 50*time.Millisecond)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"drafter": "off"}`)
	f.Close()
	waitFor(t, "in-place edit", func() bool { return w.Current().Drafter == DrafterOff })
}

func TestWatchDeleteThenRecreate(t *testing.T) {
	path, w, r := startWatch(t, `{"log_level": "debug"}`, 50*time.Millisecond)
	os.Remove(path)
	waitFor(t, "removal reported", func() bool { _, e := r.counts(); return e >= 1 })
	if w.Current().LogLevel != "debug" {
		t.Fatalf("config changed after the file was removed: %+v", w.Current())
	}
	r.mu.Lock()
	msg := r.errs[0].Error()
	r.mu.Unlock()
	if !strings.Contains(msg, "was removed") || !strings.Contains(msg, path) {
		t.Errorf("removal error does not say what happened: %s", msg)
	}
	writeFile(t, path, `{"log_level": "warn"}`)
	waitFor(t, "recreated file applied", func() bool { return w.Current().LogLevel == "warn" })
}

func TestWatchInvalidEditKeepsOldConfig(t *testing.T) {
	path, w, r := startWatch(t, `{"limits": {"per_caller": 3}}`, 50*time.Millisecond)
	before := w.Current()
	atomicWrite(t, path, `{"limits": {"per_caller": 0}}`)
	waitFor(t, "rejection", func() bool { _, e := r.counts(); return e == 1 })
	if w.Current() != before {
		t.Fatal("an invalid edit replaced the config in force")
	}
	r.mu.Lock()
	msg := r.errs[0].Error()
	r.mu.Unlock()
	for _, want := range []string{"rejected", "previous configuration kept", path, "limits.per_caller: must be at least 1, got 0"} {
		if !strings.Contains(msg, want) {
			t.Errorf("rejection %q does not contain %q", msg, want)
		}
	}
	// A later good edit still applies.
	atomicWrite(t, path, `{"limits": {"per_caller": 5}}`)
	waitFor(t, "good edit after a bad one", func() bool {
		n, _ := r.counts()
		return w.Current().Limits.PerCaller == 5 && n > 0
	})
	if n, _ := r.counts(); n != 1 {
		t.Errorf("%d reloads, want 1 (the rejected edit must not count)", n)
	}
}

func TestWatchDebounce(t *testing.T) {
	// A long quiet time so that 40 quick writes always fall inside it, even
	// on a loaded machine.
	path, w, r := startWatch(t, `{"limits": {"max_queue": 1}}`, 1500*time.Millisecond)
	for i := 2; i <= 40; i++ {
		writeFile(t, path, `{"limits": {"max_queue": `+itoa(i)+`}}`)
	}
	waitFor(t, "the final write", func() bool { return w.Current().Limits.MaxQueue == 40 })
	// Wait out one more debounce period: no second reload may follow.
	time.Sleep(2 * time.Second)
	if n, e := r.counts(); n != 1 || e != 0 {
		t.Fatalf("40 writes gave %d reloads and %d errors, want 1 and 0", n, e)
	}
}

func TestWatchIgnoresOtherFiles(t *testing.T) {
	path, w, r := startWatch(t, `{}`, 20*time.Millisecond)
	writeFile(t, filepath.Join(filepath.Dir(path), "other.json"), `{"not": "ours"}`)
	// Touch our file afterwards with identical bytes: a reload that finds
	// no change is not reported.
	writeFile(t, path, `{}`)
	if _, err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n, e := r.counts(); n != 0 || e != 0 {
		t.Fatalf("unrelated or unchanged files caused %d reloads, %d errors", n, e)
	}
}

func TestWatchRefusesBadStartingConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	writeFile(t, path, `{"keep_alive": "forever"}`)
	_, err := Watch(context.Background(), path, WatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "keep_alive:") {
		t.Fatalf("want a keep_alive error, got %v", err)
	}
}

func TestWatchMissingFileMeansDefaults(t *testing.T) {
	path, w, _ := startWatch(t, "", 20*time.Millisecond)
	if w.Current().Limits != Default().Limits {
		t.Fatalf("missing file should give defaults, got %+v", w.Current())
	}
	writeFile(t, path, `{"limits": {"slots": 2}}`)
	waitFor(t, "file created later", func() bool { return w.Current().Limits.Slots == 2 })
}

func TestSIGHUPReloads(t *testing.T) {
	// A huge debounce: only the signal can apply the edit within the test.
	path, w, _ := startWatch(t, `{"keep_alive": "1m"}`, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	NotifySIGHUP(ctx, w)
	writeFile(t, path, `{"keep_alive": "4m"}`)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "SIGHUP reload", func() bool { return keepAlive(w) == 4*time.Minute })
}

func itoa(i int) string { return strconv.Itoa(i) }
