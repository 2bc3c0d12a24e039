package coreai

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/forgedaemon/forged/ane/coreai/standin"
)

// The test bridge (standin/csrc/bridge.c) is compiled once per test
// binary with the system C compiler into a temporary directory (not cgo),
// and its compute callback is registered once: purego callbacks are never
// freed, so the count must stay at one however many runs happen.

var (
	bridgeOnce sync.Once
	bridgePath string
	bridgeErr  error
	bridgeDir  string

	tbLive        func(kind int32) int64
	callbacksMade atomic.Int64
	computeCalls  atomic.Int64

	handlersMu sync.Mutex
	handlers   = map[string]computeHandler{} // by model path
)

// computeHandler computes one function of a test model over its bound
// tensors (name → memory).
type computeHandler func(function string, tensors map[string][]byte) error

// tbCall mirrors testbridge.c's tb_call.
type tbCall struct {
	modelPath *byte
	function  *byte
	n         int64
	names     **byte
	ptrs      *unsafe.Pointer
	nbytes    *int64
	err       *byte
	errCap    int64
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{bridgeDir, tinyDir} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

// testBridge returns the path of the compiled test bridge (built by
// ane/coreai/standin from its bridge.c), skipping the test when no C
// compiler is installed.
func testBridge(t testing.TB) string {
	t.Helper()
	bridgeOnce.Do(func() {
		var err error
		bridgeDir, err = os.MkdirTemp("", "coreai-testbridge-")
		if err != nil {
			bridgeErr = err
			return
		}
		bridgePath, err = standin.Build(bridgeDir)
		if errors.Is(err, standin.ErrNoCompiler) {
			bridgeErr = errSkip
			return
		}
		if err != nil {
			bridgeErr = err
			return
		}
		h, err := purego.Dlopen(bridgePath, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			bridgeErr = err
			return
		}
		var setCompute func(fn uintptr)
		purego.RegisterLibFunc(&setCompute, h, "tb_set_compute")
		purego.RegisterLibFunc(&tbLive, h, "tb_live")
		callbacksMade.Add(1)
		setCompute(purego.NewCallback(computeCallback))
	})
	if bridgeErr == errSkip {
		t.Skip("no C compiler (cc) on PATH: the test bridge cannot be built")
	}
	if bridgeErr != nil {
		t.Fatal(bridgeErr)
	}
	return bridgePath
}

var errSkip = errors.New("skip")

func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// computeCallback is the one Go function the C bridge calls to compute.
func computeCallback(c *tbCall) int32 {
	computeCalls.Add(1)
	path, fn := goString(c.modelPath), goString(c.function)
	names := unsafe.Slice(c.names, c.n)
	ptrs := unsafe.Slice(c.ptrs, c.n)
	sizes := unsafe.Slice(c.nbytes, c.n)
	tensors := make(map[string][]byte, c.n)
	for i := range names {
		tensors[goString(names[i])] = unsafe.Slice((*byte)(ptrs[i]), sizes[i])
	}
	handlersMu.Lock()
	h := handlers[path]
	handlersMu.Unlock()
	err := errors.New("no handler registered for model " + path)
	if h != nil {
		err = h(fn, tensors)
	}
	if err != nil {
		msg := append([]byte(err.Error()), 0)
		errBuf := unsafe.Slice(c.err, c.errCap)
		n := copy(errBuf[:len(errBuf)-1], msg)
		errBuf[min(n, len(errBuf)-1)] = 0
		return 1
	}
	return 0
}

// setHandler registers h for the model at path until the test ends.
func setHandler(t testing.TB, path string, h computeHandler) {
	handlersMu.Lock()
	handlers[path] = h
	handlersMu.Unlock()
	t.Cleanup(func() {
		handlersMu.Lock()
		delete(handlers, path)
		handlersMu.Unlock()
	})
}

// live returns the bridge's live models, functions, buffers and bindings.
func live() [4]int64 {
	return [4]int64{tbLive(0), tbLive(1), tbLive(2), tbLive(3)}
}

// writeModel writes a test model package (functions.txt) under dir.
func writeModel(t testing.TB, dir, name, functions string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "functions.txt"), []byte(functions), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func f32s(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

var _ = runtime.GC
