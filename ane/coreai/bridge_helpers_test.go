package coreai

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
)

// The tests run the drivers over the stand-in bridge (ane/coreai/standin),
// built once per test binary and attached (standintest.Bridge). Packages
// standin writes compute with its programs; the tests' own models compute
// with the handlers they register (standin.Handle). What the stand-in's
// tests use too (the tiny model, comparisons with ane/ref) is standintest's.

func TestMain(m *testing.M) { standintest.Main(m) }

var (
	testBridge = standintest.Bridge
	tiny       = standintest.Tiny
	wantErr    = standintest.WantErr
	randIDs    = standintest.RandIDs
	live       = standin.Live
)

// handle makes h compute every function of the model at path until the
// test ends.
func handle(t testing.TB, path string, h standin.Handler) {
	t.Cleanup(standin.Handle(path, h))
}

// errInjected is the failure failRun injects.
var errInjected = errors.New("injected ANE failure")

// failRun makes the run with index at, counted over every model from now
// (0: the next run), fail with errInjected, until clearFault or the end
// of the test.
func failRun(t testing.TB, at int) {
	var n atomic.Int64
	n.Store(int64(at))
	standin.SetFault(func(string, string) error {
		if n.Add(-1) == -1 {
			return errInjected
		}
		return nil
	})
	t.Cleanup(clearFault)
}

func clearFault() { standin.SetFault(nil) }

// writeModel writes a test model package (functions.txt alone) under dir.
func writeModel(t testing.TB, dir, name, functions string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := standin.WriteFunctions(p, functions); err != nil {
		t.Fatal(err)
	}
	return p
}

func f32s(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
