package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/verify"
)

// A touched snapshot file is hashed on every verify until its change is
// verify.RefreshQuiet old; then the verify that hashes it writes its new
// stat into the install record, and the next verify reads nothing. While
// another process holds the repository's lock the record is left alone.
// A file changed after the refresh is still caught.
func TestVerifyRefreshesTheRecordOfTouchedFiles(t *testing.T) {
	e := newEnv(t)
	s := e.store(t)
	if _, err := s.Pull(context.Background(), repo, PullOptions{Revision: "main"}); err != nil {
		t.Fatal(err)
	}
	files, err := e.rel.Select(bundle.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	f := files[len(files)-1]
	name := filepath.Join(s.SnapshotDir(repo, e.commit), filepath.FromSlash(f.Path))
	touched := time.Now().Add(-time.Hour)
	if err := os.Chtimes(name, touched, touched); err != nil {
		t.Fatal(err)
	}
	hashed := func(what string) int64 {
		t.Helper()
		rep, err := s.Verify(repo, false)
		if err != nil || !rep.Passed() {
			t.Fatalf("%s: %v %+v", what, err, rep)
		}
		return rep.HashedBytes
	}
	for range 2 { // the ctime is new: hashed each time
		if n := hashed("just touched"); n != f.Bytes {
			t.Fatalf("just touched: hashed %d bytes, want the file's %d", n, f.Bytes)
		}
	}
	s.Now = func() time.Time { return time.Now().Add(verify.RefreshQuiet + time.Second) }
	unlock, err := s.lockRepo(repo) // as a pull in another process would
	if err != nil {
		t.Fatal(err)
	}
	hashed("quiet, but the lock is held")
	unlock()
	if n := hashed("quiet, lock held before"); n != f.Bytes {
		t.Fatalf("the refresh ran while the lock was held: then hashed %d bytes, want %d", n, f.Bytes)
	}
	if n := hashed("refreshed"); n != 0 {
		t.Fatalf("after the refresh: hashed %d bytes, want 0", n)
	}
	corruptInPlace(t, name)
	rep, err := s.Verify(repo, false)
	if err != nil || rep.Passed() || rep.Failures[0].File != f.Path {
		t.Fatalf("a change after the refresh: %v %+v", err, rep)
	}
}
