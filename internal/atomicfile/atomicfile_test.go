package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteReplacesAndSyncsDir(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	var synced []string
	old := syncDir
	syncDir = func(d string) error { synced = append(synced, d); return old(d) }
	t.Cleanup(func() { syncDir = old })

	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o640); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("content = %q, want new", b)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", st.Mode().Perm())
	}
	if len(synced) != 1 || synced[0] != dir {
		t.Errorf("directory syncs = %v, want [%s]", synced, dir)
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "f.json" {
		t.Errorf("directory holds %v, want only f.json", got)
	}
}

func TestPermIgnoresUmask(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unit")
	if err := Write(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", st.Mode().Perm())
	}
}

func TestFailedRenameLeavesOldContentAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	// The target is a non-empty directory: the rename fails after the
	// temporary file was written in full.
	path := filepath.Join(dir, "target")
	if err := os.MkdirAll(filepath.Join(path, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o644); err == nil {
		t.Fatal("Write over a non-empty directory succeeded")
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "target" {
		t.Errorf("directory holds %v after a failed write, want only target", got)
	}
	if _, err := os.Stat(filepath.Join(path, "keep")); err != nil {
		t.Errorf("old content gone: %v", err)
	}
}

func TestAbortLeavesOldContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.npy")
	os.WriteFile(path, []byte("old"), 0o644)
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("partial"), 4); err != nil {
		t.Fatal(err)
	}
	if err := f.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := f.Abort(); err != nil {
		t.Errorf("second Abort: %v", err)
	}
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("content = %q, want old", b)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("directory holds %v, want only t.npy", got)
	}
}

func TestCommitReportsDirSyncFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	boom := errors.New("boom")
	old := syncDir
	syncDir = func(string) error { return boom }
	t.Cleanup(func() { syncDir = old })
	if err := Write(path, []byte("x"), 0o644); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the directory sync's", err)
	}
}

func TestMissingDirFails(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "no", "f"), nil, 0o644); err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
}

func TestCopy(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(src, []byte("data"), 0o644)
	if err := Copy(dst, src, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "data" {
		t.Errorf("copy = %q", b)
	}
	if err := Copy(dst, filepath.Join(dir, "missing"), 0o600); err == nil {
		t.Error("copy of a missing file succeeded")
	}
	if b, _ := os.ReadFile(dst); string(b) != "data" {
		t.Errorf("failed copy changed dst to %q", b)
	}
}

// Replace writes like Write without syncing the directory, and a crash's
// temporary (Create never committed) is what RemoveTemporaries removes:
// nothing else in the directory.
func TestReplaceAndRemoveTemporaries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.part.state")
	old := syncDir
	syncDir = func(d string) error { t.Errorf("Replace synced %s", d); return nil }
	t.Cleanup(func() { syncDir = old })
	if err := Replace(path, []byte("cp"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "cp" {
		t.Fatalf("content = %q", b)
	}
	crashed, err := Create(path, 0o600) // never committed: a crash left it
	if err != nil {
		t.Fatal(err)
	}
	crashed.Close()
	other := filepath.Join(dir, ".x.part.tmp-1") // another file's temporary
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RemoveTemporaries(path); err != nil {
		t.Fatal(err)
	}
	got := entries(t, dir)
	if len(got) != 2 || got[0] != ".x.part.tmp-1" || got[1] != "x.part.state" {
		t.Fatalf("left %v, want only the other temporary and the file", got)
	}
}
