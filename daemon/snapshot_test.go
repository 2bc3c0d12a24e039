package daemon_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/updater"
)

// hashTree records the sha256 of every file under dir; check compares again
// and names the first file that differs (an independent stand-in for the
// bundle store's full verify).
func hashTree(t *testing.T, dir string) (check func() error) {
	t.Helper()
	sum := func() map[string][32]byte {
		out := map[string][32]byte{}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				out[p] = sha256.Sum256(b)
			}
			return nil
		})
		return out
	}
	want := sum()
	return func() error {
		got := sum()
		for p, h := range want {
			if got[p] != h {
				return fmt.Errorf("%s: sha256 differs from the inventory", p)
			}
		}
		return nil
	}
}

// A byte changed under the served snapshot is noticed within 2 seconds:
// serving stops, the bundle is verified again, and the failed verification
// is published with the file's name; requests then get unavailable.
func TestChangedByteUnderSnapshotIsDetected(t *testing.T) {
	rig := newResidencyRig(t, fakeengine.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	snap := t.TempDir()
	os.MkdirAll(filepath.Join(snap, "coreai"), 0o755)
	for _, f := range []string{"release.json", "coreai/manifest.json", "coreai/chunk_00.bin"} {
		if err := os.WriteFile(filepath.Join(snap, f), []byte(strings.Repeat(f, 100)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	verify := hashTree(t, snap)
	if err := rig.r.Load(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	verified := make(chan error, 4)
	err := updater.WatchSnapshot(ctx, snap, 100*time.Millisecond, func(paths []string) {
		verified <- rig.r.Reverify(fmt.Sprintf("a change under the snapshot (%s)", strings.Join(paths, ", ")), verify)
	})
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(snap, "coreai", "chunk_00.bin")
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	changedAt := time.Now()
	f.WriteAt([]byte{'X'}, 150)
	f.Close()
	select {
	case err := <-verified:
		if err == nil || !strings.Contains(err.Error(), "chunk_00.bin") {
			t.Fatalf("verification after the change: %v, want a failure naming chunk_00.bin", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a changed byte was not detected within 2 s")
	}
	t.Logf("detected and verified in %v", time.Since(changedAt).Round(time.Millisecond))
	st, err := rig.c.Status(ctx)
	if err != nil || st.State != wire.StateUnavailable || !strings.Contains(st.Reason, "chunk_00.bin") {
		t.Fatalf("status after a failed verify: %+v %v", st, err)
	}
	_, err = rig.c.Generate(ctx, wire.GenerateArgs{IDs: []uint32{104}, MaxTokens: max64(2)}).Result()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnavailable || !strings.Contains(we.Message, "failed") {
		t.Fatalf("a request on the failed bundle: %v, want unavailable", err)
	}
	if n := rig.loads.Load(); n != 1 {
		t.Fatalf("the failed bundle was loaded again (%d loads)", n)
	}
}
