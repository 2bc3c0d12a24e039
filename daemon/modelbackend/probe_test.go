package modelbackend

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/ane/coreai/standin"
)

// standInBridge builds the stand-in bridge once per test binary, skipping
// without a C compiler.
func standInBridge(t testing.TB) string {
	t.Helper()
	p, err := standin.Shared()
	if errors.Is(err, standin.ErrNoCompiler) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProbeBridge: the real binding opens the stand-in bridge and checks
// its ABI; a missing file, a library of another ABI version and a library
// that is not a bridge at all are each an error naming the problem.
func TestProbeBridge(t *testing.T) {
	lib := standInBridge(t)
	if b := ProbeBridge(lib); !b.OK() || b.Path != lib || !strings.Contains(b.Release, "stand-in") {
		t.Fatalf("probe of the stand-in: %+v", b)
	}
	missing := filepath.Join(t.TempDir(), "libCoreAIBridge.dylib")
	if b := ProbeBridge(missing); b.OK() || !errors.Is(b.Err, cai.ErrBridgeNotFound) || b.Path != "" {
		t.Errorf("probe of a missing file: %+v", b)
	}
	// Another copy of the library is another instance: it answers ABI 2.
	data, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "libabi2.so")
	if err := os.WriteFile(other, data, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TB_ABI_VERSION", "2")
	b := ProbeBridge(other)
	if b.OK() || b.Err == nil || !strings.Contains(b.Err.Error(), "has ABI version 2, this build needs 1") {
		t.Errorf("probe of a library with ABI 2: %+v", b)
	}
	if r := bridgeProblem("darwin", b); !strings.Contains(r, "ABI version 2") || !strings.Contains(r, "install the bridge built with this forged") {
		t.Errorf("the reason for a wrong ABI does not name it and the fix: %s", r)
	}
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err == nil {
		if b := ProbeBridge(libc); b.OK() || b.Err == nil || !strings.Contains(b.Err.Error(), "not the stand-in bridge") {
			t.Errorf("probe of libc: %+v", b)
		}
	}
}
