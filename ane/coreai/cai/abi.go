package cai

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ABIVersion is the cai_* bridge ABI this binding speaks.
const ABIVersion = 1

// errCap is the size of the error buffer handed to every fallible call.
const errCap = 1024

// Compute selects the compute units a model is specialized for.
type Compute int32

// Compute codes of the bridge ABI.
const (
	ComputeANE     Compute = 0 // Neural Engine preferred
	ComputeGPU     Compute = 1
	ComputeCPU     Compute = 2
	ComputeDefault Compute = 3
)

// abi holds every bridge entry point, registered once when the library is
// opened. Symbols names are listed in Symbols (a test checks the Swift
// source exports each).
type abi struct {
	abiVersion          func() int32
	release             func() string
	osMPSGraphVersion   func(out *byte, cap int64) int32
	pkgMPSGraphVersion  func(path string, out *byte, cap int64) int32
	modelLoad           func(path string, compute, checkVersion int32, err *byte, cap int64) uintptr
	modelRelease        func(m uintptr)
	modelFunctionNames  func(m uintptr, out *byte, cap int64) int64
	functionLoad        func(m uintptr, name string, err *byte, cap int64) uintptr
	functionRelease     func(f uintptr)
	functionDescribe    func(f uintptr, out *byte, cap int64) int64
	bufferCreate        func(dtype, rank int32, shape, strides *int64, err *byte, cap int64) uintptr
	bufferAddress       func(b uintptr) uintptr
	bufferNBytes        func(b uintptr) int64
	bufferRelease       func(b uintptr)
	bindingCreate       func(f uintptr, nIn int32, inNames *byte, inBufs *uintptr, nOut int32, outNames *byte, outBufs *uintptr, nStates int32, stateNames *byte, stateBufs *uintptr, err *byte, cap int64) uintptr
	bindingRelease      func(b uintptr)
	run                 func(n int32, bindings *uintptr, timesMS *float64, err *byte, cap int64) int32
	registeredFunctions int
}

// symbol pairs a bridge symbol with the Go function it fills.
type symbol struct {
	name string
	fn   any
}

func (a *abi) symbols() []symbol {
	return []symbol{
		{"cai_abi_version", &a.abiVersion},
		{"cai_release", &a.release},
		{"cai_os_mpsgraph_version", &a.osMPSGraphVersion},
		{"cai_package_mpsgraph_version", &a.pkgMPSGraphVersion},
		{"cai_model_load", &a.modelLoad},
		{"cai_model_release", &a.modelRelease},
		{"cai_model_function_names", &a.modelFunctionNames},
		{"cai_function_load", &a.functionLoad},
		{"cai_function_release", &a.functionRelease},
		{"cai_function_describe", &a.functionDescribe},
		{"cai_buffer_create", &a.bufferCreate},
		{"cai_buffer_address", &a.bufferAddress},
		{"cai_buffer_nbytes", &a.bufferNBytes},
		{"cai_buffer_release", &a.bufferRelease},
		{"cai_binding_create", &a.bindingCreate},
		{"cai_binding_release", &a.bindingRelease},
		{"cai_run", &a.run},
	}
}

// Symbols lists every bridge symbol the binding registers.
func Symbols() []string {
	var a abi
	var names []string
	for _, s := range a.symbols() {
		names = append(names, s.name)
	}
	return names
}

// Library is an opened bridge dylib. Its handle is never closed: purego
// functions registered against it must stay callable for the process.
type Library struct {
	path   string
	handle uintptr
	abi    abi
	mu     sync.Mutex // serializes runs of every model and drafter on this bridge: one cai_run at a time per process
}

var (
	libsMu sync.Mutex
	libs   = map[string]*Library{}
)

// OpenLibrary loads the bridge library at path (once per path per process),
// registers every entry point and checks the ABI version.
func OpenLibrary(path string) (*Library, error) {
	libsMu.Lock()
	defer libsMu.Unlock()
	if l, ok := libs[path]; ok {
		return l, nil
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("coreai: cannot open bridge library %s: %w", path, err)
	}
	l := &Library{path: path, handle: h}
	for _, s := range l.abi.symbols() {
		ptr, err := purego.Dlsym(h, s.name)
		if err != nil || ptr == 0 {
			return nil, fmt.Errorf("coreai: bridge library %s does not export %s", path, s.name)
		}
		purego.RegisterFunc(s.fn, ptr)
		l.abi.registeredFunctions++
	}
	if v := l.abi.abiVersion(); v != ABIVersion {
		return nil, fmt.Errorf("coreai: bridge library %s has ABI version %d, this build needs %d", path, v, ABIVersion)
	}
	libs[path] = l
	return l, nil
}

// Path is the library file.
func (l *Library) Path() string { return l.path }

// Release is the bridge's self-description (build, Core AI version).
func (l *Library) Release() string { return l.abi.release() }

// OSMPSGraphVersion is the MPSGraph version of the running OS.
func (l *Library) OSMPSGraphVersion() (string, error) {
	buf := make([]byte, 128)
	if l.abi.osMPSGraphVersion(&buf[0], int64(len(buf))) != 0 {
		return "", fmt.Errorf("coreai: OS MPSGraph version: %s", cString(buf))
	}
	return cString(buf), nil
}

// PackageMPSGraphVersion is the MPSGraph version a model package was built for.
func (l *Library) PackageMPSGraphVersion(path string) (string, error) {
	buf := make([]byte, errCap)
	if l.abi.pkgMPSGraphVersion(path, &buf[0], int64(len(buf))) != 0 {
		return "", fmt.Errorf("coreai: package MPSGraph version of %s: %s", path, cString(buf))
	}
	return cString(buf), nil
}

func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// growCall calls f with a buffer until the length it needs fits.
func growCall(f func(out *byte, cap int64) int64) string {
	buf := make([]byte, 4096)
	for {
		n := f(&buf[0], int64(len(buf)))
		if n < int64(len(buf)) {
			return string(buf[:max(n, 0)])
		}
		buf = make([]byte, n+1)
	}
}

// Package is a loaded model package (cai_model_load). (The shared,
// multi-session runtime is coreai.Model.)
type Package struct {
	lib    *Library
	path   string
	handle uintptr
}

// LoadPackage loads (and, on first use, specializes) the package at path.
// checkVersion asks the bridge to refuse packages built for a newer MPSGraph.
func (l *Library) LoadPackage(path string, compute Compute, checkVersion bool) (*Package, error) {
	buf := make([]byte, errCap)
	h := l.abi.modelLoad(path, int32(compute), boolInt(checkVersion), &buf[0], int64(len(buf)))
	if h == 0 {
		return nil, fmt.Errorf("coreai: load %s: %s", path, cString(buf))
	}
	return &Package{lib: l, path: path, handle: h}, nil
}

func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// Path is the package's path.
func (m *Package) Path() string { return m.path }

// FunctionNames lists the package's functions.
func (m *Package) FunctionNames() ([]string, error) {
	js := growCall(func(out *byte, n int64) int64 { return m.lib.abi.modelFunctionNames(m.handle, out, n) })
	var names []string
	if err := json.Unmarshal([]byte(js), &names); err != nil {
		return nil, fmt.Errorf("coreai: function names of %s: %w", m.path, err)
	}
	return names, nil
}

// Close releases the package. Functions loaded from it must be closed first.
func (m *Package) Close() error {
	if m.handle != 0 {
		m.lib.abi.modelRelease(m.handle)
		m.handle = 0
	}
	return nil
}

// Function is one loaded function (entry point) of a package.
type Function struct {
	lib    *Library
	model  *Package
	handle uintptr
	Desc   FunctionDesc
}

// FunctionDesc is cai_function_describe's JSON.
type FunctionDesc struct {
	Name    string       `json:"name"`
	Inputs  []TensorDesc `json:"inputs"`
	Outputs []TensorDesc `json:"outputs"`
	States  []TensorDesc `json:"states"`
}

// TensorDesc describes one input, output or state; Strides are in
// elements, in the function's preferred (possibly padded) layout.
type TensorDesc struct {
	Name    string  `json:"name"`
	DType   DType   `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Strides []int64 `json:"strides"`
	NBytes  int64   `json:"nbytes"`
	Dynamic bool    `json:"dynamic"`
}

// Find returns the tensor called name among inputs, outputs and states.
func (d *FunctionDesc) Find(name string) (TensorDesc, bool) {
	for _, list := range [][]TensorDesc{d.Inputs, d.Outputs, d.States} {
		for _, t := range list {
			if t.Name == name {
				return t, true
			}
		}
	}
	return TensorDesc{}, false
}

// LoadFunction loads the function called name and reads its description.
func (m *Package) LoadFunction(name string) (*Function, error) {
	buf := make([]byte, errCap)
	h := m.lib.abi.functionLoad(m.handle, name, &buf[0], int64(len(buf)))
	if h == 0 {
		return nil, fmt.Errorf("coreai: function %s of %s: %s", name, m.path, cString(buf))
	}
	f := &Function{lib: m.lib, model: m, handle: h}
	js := growCall(func(out *byte, n int64) int64 { return m.lib.abi.functionDescribe(h, out, n) })
	if err := json.Unmarshal([]byte(js), &f.Desc); err != nil {
		f.Close()
		return nil, fmt.Errorf("coreai: description of %s in %s: %w", name, m.path, err)
	}
	if err := f.Desc.check(); err != nil {
		f.Close()
		return nil, fmt.Errorf("coreai: description of %s in %s: %w", name, m.path, err)
	}
	return f, nil
}

// check refuses descriptions the driver cannot allocate buffers for.
func (d *FunctionDesc) check() error {
	for _, list := range [][]TensorDesc{d.Inputs, d.Outputs, d.States} {
		for _, t := range list {
			if err := t.check(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t TensorDesc) check() error {
	if t.DType.Size() == 0 {
		return fmt.Errorf("tensor %s: unknown dtype %q", t.Name, t.DType)
	}
	if len(t.Shape) == 0 || len(t.Strides) != len(t.Shape) {
		return fmt.Errorf("tensor %s: shape %v and strides %v do not match", t.Name, t.Shape, t.Strides)
	}
	for i, n := range t.Shape {
		if n < 1 {
			return fmt.Errorf("tensor %s: dimension %d is %d (dynamic shapes are not supported)", t.Name, i, n)
		}
	}
	if t.Strides[len(t.Strides)-1] != 1 {
		return fmt.Errorf("tensor %s: last stride is %d, must be 1", t.Name, t.Strides[len(t.Strides)-1])
	}
	return nil
}

// Close releases the function.
func (f *Function) Close() error {
	if f.handle != 0 {
		f.lib.abi.functionRelease(f.handle)
		f.handle = 0
	}
	return nil
}

// Buffer is bridge-owned memory (an IOSurface on macOS) seen from Go as a
// byte slice. The slice is valid until Close; a cleanup releases a buffer
// that becomes unreachable without Close.
type Buffer struct {
	lib     *Library
	handle  *uintptr // shared with the cleanup, zeroed by Close
	DType   DType
	Shape   []int64
	Strides []int64
	data    []byte
	cleanup runtime.Cleanup
}

// NewBuffer allocates a zero-filled buffer. strides may be nil (packed).
func (l *Library) NewBuffer(dtype DType, shape, strides []int64) (*Buffer, error) {
	code, ok := dtype.code()
	if !ok {
		return nil, fmt.Errorf("coreai: buffer: unknown dtype %q", dtype)
	}
	if len(shape) == 0 || (strides != nil && len(strides) != len(shape)) {
		return nil, fmt.Errorf("coreai: buffer: shape %v and strides %v do not match", shape, strides)
	}
	buf := make([]byte, errCap)
	var sp *int64
	if strides != nil {
		sp = &strides[0]
	}
	h := l.abi.bufferCreate(code, int32(len(shape)), &shape[0], sp, &buf[0], int64(len(buf)))
	runtime.KeepAlive(shape)
	runtime.KeepAlive(strides)
	if h == 0 {
		return nil, fmt.Errorf("coreai: buffer %s %v: %s", dtype, shape, cString(buf))
	}
	if strides == nil {
		strides = packedStrides(shape)
	}
	n := l.abi.bufferNBytes(h)
	addr := l.abi.bufferAddress(h)
	b := &Buffer{lib: l, handle: new(uintptr), DType: dtype,
		Shape: append([]int64(nil), shape...), Strides: append([]int64(nil), strides...)}
	*b.handle = h
	b.data = unsafe.Slice((*byte)(unsafePointer(addr)), n)
	release := l.abi.bufferRelease
	b.cleanup = runtime.AddCleanup(b, func(h *uintptr) {
		if *h != 0 {
			release(*h)
		}
	}, b.handle)
	return b, nil
}

// NewBufferFor allocates a buffer in t's preferred layout.
func (l *Library) NewBufferFor(t TensorDesc) (*Buffer, error) {
	return l.NewBuffer(t.DType, t.Shape, t.Strides)
}

func packedStrides(shape []int64) []int64 {
	s := make([]int64, len(shape))
	acc := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// Bytes is the buffer's memory (including stride padding).
func (b *Buffer) Bytes() []byte { return b.data }

// NBytes is the buffer's size as the bridge reports it now
// (cai_buffer_nbytes); 0 once closed.
func (b *Buffer) NBytes() int64 {
	if *b.handle == 0 {
		return 0
	}
	return b.lib.abi.bufferNBytes(*b.handle)
}

// Close releases the buffer; its Bytes must not be used afterwards.
func (b *Buffer) Close() error {
	if *b.handle != 0 {
		b.cleanup.Stop()
		b.lib.abi.bufferRelease(*b.handle)
		*b.handle = 0
		b.data = nil
	}
	return nil
}

// Binding is a validated association of buffers with a function's tensors.
type Binding struct {
	fn     *Function
	handle uintptr
	bufs   []*Buffer // kept reachable while bound
}

// Bind associates buffers (by tensor name) with f's inputs, outputs and
// states. The bridge validates names, dtypes, shapes and aliasing now, so a
// mismatch is an error here rather than at run time.
func (f *Function) Bind(inputs, outputs, states map[string]*Buffer) (*Binding, error) {
	bd := &Binding{fn: f}
	type list struct {
		n     int32
		names []byte
		bufs  []uintptr
	}
	mk := func(m map[string]*Buffer, order []TensorDesc) (list, error) {
		var l list
		seen := 0
		add := func(name string, b *Buffer) error {
			if b == nil || *b.handle == 0 {
				return fmt.Errorf("coreai: bind %s: buffer for %s is closed", f.Desc.Name, name)
			}
			l.names = append(append(l.names, name...), 0)
			l.bufs = append(l.bufs, *b.handle)
			bd.bufs = append(bd.bufs, b)
			l.n++
			return nil
		}
		for _, t := range order { // description order first, for determinism
			if b, ok := m[t.Name]; ok {
				if err := add(t.Name, b); err != nil {
					return l, err
				}
				seen++
			}
		}
		if seen != len(m) { // names the function does not have: let the bridge name them
			for name, b := range m {
				if _, ok := f.Desc.Find(name); !ok {
					if err := add(name, b); err != nil {
						return l, err
					}
				}
			}
		}
		l.names = append(l.names, 0) // never empty, so &names[0] is valid
		l.bufs = append(l.bufs, 0)
		return l, nil
	}
	in, err := mk(inputs, f.Desc.Inputs)
	if err != nil {
		return nil, err
	}
	out, err := mk(outputs, f.Desc.Outputs)
	if err != nil {
		return nil, err
	}
	st, err := mk(states, f.Desc.States)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, errCap)
	h := f.lib.abi.bindingCreate(f.handle, in.n, &in.names[0], &in.bufs[0], out.n, &out.names[0], &out.bufs[0],
		st.n, &st.names[0], &st.bufs[0], &buf[0], int64(len(buf)))
	if h == 0 {
		return nil, fmt.Errorf("coreai: bind %s: %s", f.Desc.Name, cString(buf))
	}
	bd.handle = h
	return bd, nil
}

// Close releases the binding (not its buffers).
func (b *Binding) Close() error {
	if b.handle != 0 {
		b.fn.lib.abi.bindingRelease(b.handle)
		b.handle = 0
	}
	return nil
}

// Run executes bindings in order as one bridge call. times, when not nil,
// receives each binding's time in milliseconds.
func (l *Library) Run(bindings []*Binding, times []float64) error {
	if len(bindings) == 0 {
		return nil
	}
	if times != nil && len(times) < len(bindings) {
		return fmt.Errorf("coreai: run: %d timing slots for %d bindings", len(times), len(bindings))
	}
	hs := make([]uintptr, len(bindings))
	for i, b := range bindings {
		if b == nil || b.handle == 0 {
			return fmt.Errorf("coreai: run: binding %d is closed", i)
		}
		hs[i] = b.handle
	}
	var tp *float64
	if times != nil {
		tp = &times[0]
	}
	buf := make([]byte, errCap)
	l.mu.Lock()
	rc := l.abi.run(int32(len(hs)), &hs[0], tp, &buf[0], int64(len(buf)))
	l.mu.Unlock()
	runtime.KeepAlive(bindings)
	if rc != 0 {
		return runError(bindings, cString(buf))
	}
	return nil
}

// RunError is a failed cai_run, named by the package file and the entry
// (function) of the binding that failed, e.g. "coreai: chunk_L00-01.aimodel
// entry v8_1k: run: <bridge message>". Package is the file name of the
// package that was loaded (a compiled package ends in "c"); Entry is the
// function's name in that package (after the manifest's aliases). When the
// bridge's message does not say which binding failed, Package lists every
// package of the run, joined by "+", and Entry every entry.
type RunError struct {
	Package, Entry string
	Err            error // the bridge's message
}

func (e *RunError) Error() string {
	return "coreai: " + e.Package + " entry " + e.Entry + ": run: " + e.Err.Error()
}

func (e *RunError) Unwrap() error { return e.Err }

// bindingMsgRe is how both bridges (Swift and the test stand-in) start a
// run error: "binding <index> (<function>): <message>".
var bindingMsgRe = regexp.MustCompile(`(?s)^binding (\d+) \(([^)]*)\): (.*)$`)

// runError attributes a bridge run message to the binding it names.
func runError(bindings []*Binding, msg string) *RunError {
	if m := bindingMsgRe.FindStringSubmatch(msg); m != nil {
		if i, err := strconv.Atoi(m[1]); err == nil && i >= 0 && i < len(bindings) {
			f := bindings[i].fn
			return &RunError{Package: filepath.Base(f.model.path), Entry: f.Desc.Name, Err: errors.New(m[3])}
		}
	}
	var pkgs, entries []string
	for _, b := range bindings {
		if p := filepath.Base(b.fn.model.path); !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
		if !slices.Contains(entries, b.fn.Desc.Name) {
			entries = append(entries, b.fn.Desc.Name)
		}
	}
	return &RunError{Package: strings.Join(pkgs, "+"), Entry: strings.Join(entries, "+"), Err: errors.New(msg)}
}

// String names the compute units: ane, gpu, cpu, default.
func (c Compute) String() string {
	switch c {
	case ComputeANE:
		return "ane"
	case ComputeGPU:
		return "gpu"
	case ComputeCPU:
		return "cpu"
	case ComputeDefault:
		return "default"
	}
	return "compute(" + strconv.Itoa(int(c)) + ")"
}
