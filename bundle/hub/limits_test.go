package hub

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forgedaemon/forged/bundle/hubtest"
)

// TestFetchResumesFromWhatIsOnDisk: a crash long before the first part
// checkpoint (kill -9 leaves the written bytes in the page cache, no
// checkpoint beyond the first) costs no download on restart: the bytes on
// disk are hashed again and the download continues from their end.
func TestFetchResumesFromWhatIsOnDisk(t *testing.T) {
	fx := newFixture(t)
	const p = "coreai/chunk.bin"
	d := fx.download(t, p)
	c := fx.client()
	c.PartSize = 64 << 20 // larger than the file: no part checkpoint is ever reached
	crashedAt := crashFetch(t, fx, c, d, 3<<20+1<<19)
	fx.hub.ResetCounters()
	res := fx.fetchOK(t, c, d)
	served := fx.hub.BytesServed(p)
	size := int64(len(fx.files[p]))
	t.Logf("crashed at %d of %d bytes; restart resumed from %d, hub served %d", crashedAt, size, res.ResumedFrom, served)
	if res.ResumedFrom != crashedAt {
		t.Fatalf("resumed from %d, the partial file held %d bytes", res.ResumedFrom, crashedAt)
	}
	if served != size-crashedAt {
		t.Fatalf("hub served %d bytes on restart, want only the %d missing", served, size-crashedAt)
	}
}

// TestFetchResumeRefusesWrongBytesOnDisk: bytes on disk beyond the
// checkpoint that are not the file's (a power loss can leave zeros) never
// make a file that passes: the whole-file hash catches them.
func TestFetchResumeRefusesWrongBytesOnDisk(t *testing.T) {
	fx := newFixture(t)
	const p = "coreai/chunk.bin"
	d := fx.download(t, p)
	c := fx.client()
	c.PartSize = 64 << 20
	// A fresh download's first checkpoint, then a tail of zeros.
	f, h, _, err := c.openPartial(d)
	if err != nil {
		t.Fatal(err)
	}
	w := newHashWriter(f, h)
	c.checkpointAt(d, w, 0, true)
	w.close()
	f.Close()
	if err := os.WriteFile(d.Partial, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = c.Fetch(context.Background(), d)
	var mismatch *HashMismatchError
	if !errors.As(err, &mismatch) {
		t.Fatalf("a partial file of zeros resumed into %v, want a sha256 mismatch", err)
	}
	if _, err := os.Stat(d.Partial); !os.IsNotExist(err) {
		t.Fatalf("the mismatching partial file was kept: %v", err)
	}
}

// TestFetchFailsBelowMinimumRate: a server that sends a little now and then
// (never stalling) fails the download once a rate window passes below the
// minimum, with an error naming the file and the rate, and is not retried.
func TestFetchFailsBelowMinimumRate(t *testing.T) {
	fx := newFixture(t)
	const p = "coreai/chunk.bin"
	fx.hub.Inject(hubtest.Fault{Kind: hubtest.Drip, Path: p, N: 1 << 20, DripBytes: 1 << 10, DripEvery: 20 * time.Millisecond})
	c := fx.client()
	c.MinRate = 256 << 10 // the drip is ~50 KiB/s
	c.RateWindow = 300 * time.Millisecond
	// Only the rate rule may end it: a drip that missed the stall timeout
	// on a loaded machine would be retried from past the drip's offset.
	c.StallTimeout = 30 * time.Second
	d := fx.download(t, p)
	// Without the rule the drip would take minutes: the deadline only keeps a
	// failing test from hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fx.hub.ResetCounters()
	_, err := c.Fetch(ctx, d)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "KiB/s") || !strings.Contains(err.Error(), "minimum") {
		t.Fatalf("err = %v, want a too-slow error naming %s and the rate", err, p)
	}
	t.Log(err)
	gets := 0
	for _, r := range fx.hub.Requests() {
		if r.Listener == "cdn" {
			gets++
		}
	}
	if gets != 1 {
		t.Fatalf("%d requests to the CDN: a too-slow download must not be retried", gets)
	}
}

// TestCheckpointOnFullDiskLeavesNoTemporary: when the disk is full, the
// checkpoint written on the way out fails, and neither that nor the later
// successful download leaves a temporary checkpoint file behind. It runs on
// a real tiny tmpfs (root only).
func TestCheckpointOnFullDiskLeavesNoTemporary(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tiny tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	defer exec.Command("umount", dir).Run()
	fx := newFixture(t)
	const p = "coreai/chunk.bin" // 5 MiB: does not fit
	d := fx.download(t, p)
	d.Partial = filepath.Join(dir, "x.part")
	c := fx.client()
	c.PartSize = 64 << 20 // no part checkpoint: only the one written on the way out
	// Fill the disk to the last few bytes, so the checkpoint cannot be written either.
	_, err := c.Fetch(context.Background(), d)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("err = %v, want ErrNoSpace", err)
	}
	fill, _ := os.Create(filepath.Join(dir, "fill"))
	buf := make([]byte, 4096)
	for {
		if _, err := fill.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	fill.Close()
	if _, err := c.Fetch(context.Background(), d); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("err = %v, want ErrNoSpace", err)
	}
	if out, err := exec.Command("mount", "-o", "remount,size=16m", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, out)
	}
	os.Remove(filepath.Join(dir, "fill"))
	fx.fetchOK(t, c, d)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "x.part" {
			t.Errorf("left behind in the partial directory: %s", e.Name())
		}
	}
}
