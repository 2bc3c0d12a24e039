package verify_test

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/verify"
)

const recorded = "coreai/chunk_L00-03.aimodel/weights/weight-00.bin"

// recordedBundle is a copy of the fixture with its install record.
func recordedBundle(t *testing.T) (string, *bundle.Release, *verify.Record) {
	t.Helper()
	dir := copyBundle(t)
	rel, err := bundle.LoadRelease(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := verify.NewRecord(dir, rel.Files)
	if err != nil {
		t.Fatal(err)
	}
	return dir, rel, rec
}

// A file rewritten in place whose mtime is put back (cp -p, touch -r)
// keeps size, inode and mtime: its ctime, which no user can set, is what
// the record check catches it by.
func TestFastVerifyCatchesRestoredMtime(t *testing.T) {
	dir, _, rec := recordedBundle(t)
	name := filepath.Join(dir, filepath.FromSlash(recorded))
	st, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	flip(t, dir, recorded, 10)
	if err := os.Chtimes(name, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	r := check(t, dir, verify.Options{Record: rec})
	if r.Passed() || r.Failures[0].Rule != "file.sha256" || r.Failures[0].File != recorded {
		t.Fatalf("fast verify trusted a file rewritten with its mtime restored: %+v", r.Failures)
	}
}

// A touched file (its stat changed, its bytes not) is hashed; once its
// last change is RefreshQuiet old, the report offers its new stat for the
// record, and a record with it trusts the file without reading it. A
// change too recent (a write could still be landing) is not offered. A
// change after the refresh is still caught.
func TestFastVerifyRefreshesTouchedFiles(t *testing.T) {
	dir, rel, rec := recordedBundle(t)
	f, _ := rel.File(recorded)
	name := filepath.Join(dir, filepath.FromSlash(recorded))
	touched := time.Now().Add(-time.Hour)
	if err := os.Chtimes(name, touched, touched); err != nil {
		t.Fatal(err)
	}
	r := check(t, dir, verify.Options{Record: rec})
	if !r.Passed() || r.HashedBytes != f.Bytes || len(r.Refreshed) != 0 {
		t.Fatalf("just touched: passed %v, hashed %d (want %d), refreshed %v (want none: the ctime is new)", r.Passed(), r.HashedBytes, f.Bytes, r.Refreshed)
	}
	later := func() time.Time { return time.Now().Add(verify.RefreshQuiet + time.Second) }
	r = check(t, dir, verify.Options{Record: rec, Now: later})
	e, ok := r.Refreshed[recorded]
	if !r.Passed() || r.HashedBytes != f.Bytes || len(r.Refreshed) != 1 || !ok || e.SHA256 != f.SHA256 || e.MtimeNS != touched.UnixNano() {
		t.Fatalf("touched RefreshQuiet ago: passed %v, hashed %d, refreshed %+v", r.Passed(), r.HashedBytes, r.Refreshed)
	}
	fresh := &verify.Record{Version: rec.Version, Files: maps.Clone(rec.Files)}
	maps.Copy(fresh.Files, r.Refreshed)
	if r = check(t, dir, verify.Options{Record: fresh, Now: later}); !r.Passed() || r.HashedBytes != 0 {
		t.Fatalf("with the refreshed record: passed %v, hashed %d, want 0", r.Passed(), r.HashedBytes)
	}
	flip(t, dir, recorded, 10)
	os.Chtimes(name, touched, touched)
	if r = check(t, dir, verify.Options{Record: fresh, Now: later}); r.Passed() || r.Failures[0].File != recorded || len(r.Refreshed) != 0 {
		t.Fatalf("a change after the refresh: %+v, refreshed %v", r.Failures, r.Refreshed)
	}
}

// An entry without a ctime (a record written before ctime was kept)
// vouches for nothing: the file is hashed.
func TestRecordWithoutCtimeIsHashed(t *testing.T) {
	dir, rel, rec := recordedBundle(t)
	e := rec.Files[recorded]
	e.CtimeNS = 0
	rec.Files[recorded] = e
	f, _ := rel.File(recorded)
	if r := check(t, dir, verify.Options{Record: rec}); !r.Passed() || r.HashedBytes != f.Bytes {
		t.Fatalf("passed %v, hashed %d, want %d (only the entry without ctime)", r.Passed(), r.HashedBytes, f.Bytes)
	}
}
