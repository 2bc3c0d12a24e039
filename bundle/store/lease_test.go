//go:build unix

package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLeaseKeepsServedCommitFromGC: a commit a live lease holds survives
// gc although it is neither current nor previous (another writer moved
// both on); once the holder is gone — released, or dead, which drops its
// flock — gc takes it and the lease file.
func TestLeaseKeepsServedCommitFromGC(t *testing.T) {
	for _, end := range []string{"released", "crashed"} {
		t.Run(end, func(t *testing.T) {
			e := newEnv(t)
			s := e.store(t)
			if _, err := s.Pull(context.Background(), repo, PullOptions{}); err != nil {
				t.Fatal(err)
			}
			served := e.commit
			l, err := s.Lease(repo)
			if err != nil {
				t.Fatal(err)
			}
			gone := strings.Repeat("0", 40)
			if err := l.Set(gone, served); err == nil || !strings.Contains(err.Error(), gone) {
				t.Fatalf("leasing a commit that is not installed: %v, want an error naming it", err)
			}
			if got := l.Commits(); len(got) != 1 || got[0] != served {
				t.Fatalf("leased %v, want the installed %s all the same", got, served)
			}
			// Another writer (its own Store, its own lock descriptors) pulls
			// two more revisions and runs gc.
			other := e.store(t)
			publishChanged(t, e, "coreai/chunk_L00-03.aimodel/weights/weight-00.bin")
			if _, err := other.Pull(context.Background(), repo, PullOptions{}); err != nil {
				t.Fatal(err)
			}
			e.dir = other.SnapshotDir(repo, mustCurrent(t, other).Commit)
			publishChanged(t, e, "coreai/chunk_L04-07.aimodel/weights/weight-00.bin")
			if _, err := other.Pull(context.Background(), repo, PullOptions{}); err != nil {
				t.Fatal(err)
			}
			if gc, err := other.GC(false); err != nil || len(gc.Snapshots) != 0 {
				t.Fatalf("gc with the lease live: %+v %v, want nothing removed", gc, err)
			}
			if rep, err := other.VerifyCommit(repo, served, true); err != nil || !rep.Passed() {
				t.Fatalf("the leased snapshot after gc: %v %v", err, rep.Err())
			}
			if end == "released" {
				l.Release()
			} else {
				l.f.Close() // what the kernel does when the holder dies: the flock goes, the file stays
			}
			gc, err := other.GC(false)
			if err != nil || len(gc.Snapshots) != 1 || gc.Snapshots[0] != repo+"@"+served {
				t.Fatalf("gc after the lease ended (%s): %+v %v, want %s removed", end, gc, err, served)
			}
			if left, _ := os.ReadDir(filepath.Join(e.root, "leases", repoPath(repo))); len(left) != 0 {
				t.Fatalf("lease files left: %v", left)
			}
			if err := l.Set(served); err == nil {
				t.Fatal("Set on an ended lease succeeded")
			}
		})
	}
}
