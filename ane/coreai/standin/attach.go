package standin

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// call mirrors csrc/bridge.c's tb_call.
type call struct {
	modelPath *byte
	function  *byte
	n         int64
	names     **byte
	ptrs      *unsafe.Pointer
	nbytes    *int64
	err       *byte
	errCap    int64
	event     int64
}

// Events of tb_call (csrc/bridge.c).
const (
	eventRun      = 0
	eventLoaded   = 1
	eventReleased = 2
)

// library is one attached stand-in bridge.
type library struct {
	handle uintptr
	live   func(kind int32) int64
}

var (
	attachMu sync.Mutex
	libs     = map[string]*library{} // by the path given to Attach
	handles  = map[uintptr]*library{}
	// callback is the one purego callback of the process (purego never
	// frees callbacks, so however often Attach runs there is one).
	callback  uintptr
	callbacks int
)

// Attach loads the stand-in bridge at path (Build's output) and points its
// compute at this package: every function run is dispatched by model path
// to a Handle handler, else to the package's own program (standin.json,
// weights.safetensors). Attaching the same library again does nothing.
// cai.OpenLibrary on the same path then shares the attached library.
func Attach(path string) error {
	attachMu.Lock()
	defer attachMu.Unlock()
	if _, ok := libs[path]; ok {
		return nil
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return fmt.Errorf("standin: cannot open %s: %w", path, err)
	}
	if l, ok := handles[h]; ok { // the same file under another name
		purego.Dlclose(h)
		libs[path] = l
		return nil
	}
	syms := map[string]uintptr{}
	for _, name := range []string{"tb_set_compute", "tb_set_events", "tb_live"} {
		if syms[name], err = purego.Dlsym(h, name); err != nil {
			purego.Dlclose(h)
			return fmt.Errorf("standin: %s is not the stand-in bridge (it does not export %s)", path, name)
		}
	}
	var (
		setCompute func(fn uintptr)
		setEvents  func(on int32)
	)
	l := &library{handle: h}
	purego.RegisterFunc(&setCompute, syms["tb_set_compute"])
	purego.RegisterFunc(&setEvents, syms["tb_set_events"])
	purego.RegisterFunc(&l.live, syms["tb_live"])
	if callback == 0 {
		callback = purego.NewCallback(compute)
		callbacks++
	}
	setCompute(callback)
	setEvents(1)
	libs[path], handles[h] = l, l
	return nil
}

// Live returns the live models, functions, buffers and bindings of the
// attached bridges (tb_live, summed over every attached library), so a
// caller can prove an unload released every bridge object.
func Live() [4]int64 {
	attachMu.Lock()
	defer attachMu.Unlock()
	var n [4]int64
	for _, l := range handles {
		for k := range n {
			n[k] += l.live(int32(k))
		}
	}
	return n
}

// Callbacks is the number of purego callbacks Attach has made in this
// process: 1 once a library is attached, however often Attach ran (a
// callback is never freed, so more would leak).
func Callbacks() int {
	attachMu.Lock()
	defer attachMu.Unlock()
	return callbacks
}

// Handler computes one function of a model over its bound tensors (name →
// the buffer's packed memory; inputs are read, outputs written in place).
type Handler func(function string, tensors map[string][]byte) error

type registration struct{ h Handler }

var (
	handlersMu sync.Mutex
	handlers   = map[string]*registration{}
	fault      atomic.Pointer[func(modelPath, function string) error]
)

// Handle makes h compute every function of the model at modelPath (the
// path given to cai_model_load) instead of the package's own program,
// until unregister is called. A later Handle for the same path replaces
// it; unregistering the replaced one then does nothing.
func Handle(modelPath string, h Handler) (unregister func()) {
	r := &registration{h}
	handlersMu.Lock()
	handlers[modelPath] = r
	handlersMu.Unlock()
	return func() {
		handlersMu.Lock()
		if handlers[modelPath] == r {
			delete(handlers, modelPath)
		}
		handlersMu.Unlock()
	}
}

// SetFault installs f, consulted before every run: a non-nil error fails
// that run with it (the bridge reports "binding i (function): message").
// nil clears it.
func SetFault(f func(modelPath, function string) error) {
	if f == nil {
		fault.Store(nil)
		return
	}
	fault.Store(&f)
}

// compute is the callback the bridge calls for every run (and, with
// events on, every model load and release).
func compute(c *call) (status int32) {
	path := goString(c.modelPath)
	switch c.event {
	case eventLoaded:
		programs.loaded(path)
		return 0
	case eventReleased:
		programs.released(path)
		return 0
	}
	tensors := make(map[string][]byte, c.n)
	if c.n > 0 {
		names := unsafe.Slice(c.names, c.n)
		ptrs := unsafe.Slice(c.ptrs, c.n)
		sizes := unsafe.Slice(c.nbytes, c.n)
		for i := range names {
			tensors[goString(names[i])] = unsafe.Slice((*byte)(ptrs[i]), sizes[i])
		}
	}
	if err := run(path, goString(c.function), tensors); err != nil {
		writeErr(c, err.Error())
		return 1
	}
	return 0
}

// run dispatches one function run: the fault switch, a handler, else the
// package's program. A panic becomes the run's error: a Go panic inside a
// purego callback would take the whole process down.
func run(path, function string, tensors map[string][]byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("stand-in %s %s: panic: %v", path, function, r)
		}
	}()
	if f := fault.Load(); f != nil {
		if err := (*f)(path, function); err != nil {
			return err
		}
	}
	handlersMu.Lock()
	r := handlers[path]
	handlersMu.Unlock()
	if r != nil {
		return r.h(function, tensors)
	}
	p, err := programs.get(path)
	if err != nil {
		return err
	}
	return p.run(function, tensors)
}

func writeErr(c *call, msg string) {
	if c.errCap <= 0 || c.err == nil {
		return
	}
	buf := unsafe.Slice(c.err, c.errCap)
	n := copy(buf[:len(buf)-1], msg)
	buf[n] = 0
}

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
