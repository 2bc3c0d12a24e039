package updater

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/internal/leakcheck"
)

// Changes in a directory created after the watch started are seen, a burst
// of writes is reported once, and cancelling stops the watcher goroutine.
func TestWatchSnapshotFollowsNewDirsAndStops(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan []string, 8)
	if err := WatchSnapshot(ctx, dir, 150*time.Millisecond, func(p []string) { got <- p }); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "coreai")
	os.Mkdir(sub, 0o755)
	wait := func(what string) []string {
		select {
		case p := <-got:
			return p
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: no change reported within 2 s", what)
		}
		return nil
	}
	wait("mkdir")
	file := filepath.Join(sub, "chunk.bin")
	for i := range 5 { // one burst
		os.WriteFile(file, []byte{byte(i)}, 0o644)
	}
	if p := wait("writes in the new directory"); !slices.Contains(p, file) {
		t.Fatalf("changes %v do not name %s", p, file)
	}
	select {
	case p := <-got:
		t.Fatalf("a burst was reported twice (second: %v)", p)
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	leakcheck.Goroutines(t, before, "cancelling the watch")
}

func TestWatchSnapshotMissingDir(t *testing.T) {
	err := WatchSnapshot(context.Background(), filepath.Join(t.TempDir(), "gone"), time.Second, func([]string) {})
	if err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("watching a missing dir: %v, want an error naming it", err)
	}
}
