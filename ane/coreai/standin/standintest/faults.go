package standintest

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/forgedaemon/forged/ane/coreai/standin"
)

// Handle makes h compute every function of the model at path until the
// test ends.
func Handle(t testing.TB, path string, h standin.Handler) {
	t.Cleanup(standin.Handle(path, h))
}

// ErrInjected is the failure FailRun injects.
var ErrInjected = errors.New("injected ANE failure")

// FailRun makes the run with index at, counted over every model from now
// (0: the next run), fail with ErrInjected, until ClearFault or the end
// of the test.
func FailRun(t testing.TB, at int) {
	var n atomic.Int64
	n.Store(int64(at))
	standin.SetFault(func(string, string) error {
		if n.Add(-1) == -1 {
			return ErrInjected
		}
		return nil
	})
	t.Cleanup(ClearFault)
}

// ClearFault removes the fault FailRun set.
func ClearFault() { standin.SetFault(nil) }

// WriteModel writes a test model package (functions.txt alone) under dir.
func WriteModel(t testing.TB, dir, name, functions string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := standin.WriteFunctions(p, functions); err != nil {
		t.Fatal(err)
	}
	return p
}

// F32s views b as float32s (native byte order, as the stand-in's buffers).
func F32s(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
