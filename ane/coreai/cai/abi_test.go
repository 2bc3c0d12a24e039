package cai

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
)

const arithFunctions = `mpsgraph 7.0.10
function axpy
input a f32 1 4
input b f32 1 4
output y f32 1 4
end
function padded
input x f16 2 3 5 strides 8 1
output y f16 2 3 5 strides 8 1
end
function boom
input a f32 1 4
output y f32 1 4
end
`

// arith computes the arith model's functions: y = 2a + b; a padded copy;
// and an error.
func arith(fn string, ts map[string][]byte) error {
	switch fn {
	case "axpy":
		a, b, y := standintest.F32s(ts["a"]), standintest.F32s(ts["b"]), standintest.F32s(ts["y"])
		for i := range y {
			y[i] = 2*a[i] + b[i]
		}
		return nil
	case "padded":
		copy(ts["y"], ts["x"])
		return nil
	}
	return errors.New("the program failed on purpose")
}

// arithRuns counts the runs of arith models.
var arithRuns atomic.Int64

func openArith(t *testing.T) (*Library, *Package) {
	lib, err := OpenLibrary(standintest.Bridge(t))
	if err != nil {
		t.Fatal(err)
	}
	path := standintest.WriteModel(t, t.TempDir(), "arith.aimodel", arithFunctions)
	standintest.Handle(t, path, func(fn string, ts map[string][]byte) error {
		arithRuns.Add(1)
		return arith(fn, ts)
	})
	m, err := lib.LoadPackage(path, ComputeANE, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return lib, m
}

func mustBuffer(t testing.TB, lib *Library, d DType, shape ...int64) *Buffer {
	t.Helper()
	b, err := lib.NewBuffer(d, shape, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestOpenMissingLibrary(t *testing.T) {
	_, err := OpenLibrary(filepath.Join(t.TempDir(), "libCoreAIBridge.dylib"))
	standintest.WantErr(t, err, "cannot open bridge library", "libCoreAIBridge.dylib")
}

func TestOpenWrongABIVersion(t *testing.T) {
	path := standintest.Bridge(t)
	t.Setenv("TB_ABI_VERSION", "2")
	_, err := OpenLibrary(path)
	standintest.WantErr(t, err, "ABI version 2", "needs 1")
	os.Unsetenv("TB_ABI_VERSION")
	if _, err := OpenLibrary(path); err != nil {
		t.Fatalf("after a refused open, a good library must still open: %v", err)
	}
}

func TestOpenLibraryWithoutSymbols(t *testing.T) {
	standintest.Bridge(t) // the C compiler is needed
	// libm exports none of cai_*: the first missing symbol is named.
	for _, p := range []string{"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6"} {
		if _, err := os.Stat(p); err == nil {
			_, err := OpenLibrary(p)
			standintest.WantErr(t, err, "does not export cai_abi_version")
			return
		}
	}
	t.Skip("no libm found at the usual paths")
}

func TestVersionsAndNames(t *testing.T) {
	lib, m := openArith(t)
	if r := lib.Release(); !strings.Contains(r, "testbridge") {
		t.Fatalf("release %q", r)
	}
	if v, err := lib.OSMPSGraphVersion(); err != nil || v != "7.0.80" {
		t.Fatalf("OS version %q, %v", v, err)
	}
	if v, err := lib.PackageMPSGraphVersion(m.Path()); err != nil || v != "7.0.10" {
		t.Fatalf("package version %q, %v", v, err)
	}
	_, err := lib.PackageMPSGraphVersion(filepath.Join(t.TempDir(), "none.aimodel"))
	standintest.WantErr(t, err, "none.aimodel", "no functions.txt")
	names, err := m.FunctionNames()
	if err != nil || !slices.Equal(names, []string{"axpy", "padded", "boom"}) {
		t.Fatalf("names %v, %v", names, err)
	}
}

func TestLoadPackageErrors(t *testing.T) {
	lib, err := OpenLibrary(standintest.Bridge(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = lib.LoadPackage(filepath.Join(dir, "missing.aimodel"), ComputeANE, true)
	standintest.WantErr(t, err, "missing.aimodel")
	newer := standintest.WriteModel(t, dir, "newer.aimodel", "mpsgraph 7.1.0\nfunction f\ninput a f32 1 1\nend\n")
	_, err = lib.LoadPackage(newer, ComputeANE, true)
	standintest.WantErr(t, err, "needs MPSGraph 7.1.0", "OS has 7.0.80")
	m, err := lib.LoadPackage(newer, ComputeANE, false) // the check is the caller's choice
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	bad := standintest.WriteModel(t, dir, "bad.aimodel", "function f\ninput a f99 1 1\nend\n")
	_, err = lib.LoadPackage(bad, ComputeANE, true)
	standintest.WantErr(t, err, "line 2")
	_, err = lib.LoadPackage(newer, Compute(7), false)
	standintest.WantErr(t, err, "compute unit 7")
}

func TestFunctionDescribeAndUnknown(t *testing.T) {
	_, m := openArith(t)
	_, err := m.LoadFunction("nope")
	standintest.WantErr(t, err, "function nope", "no function nope")
	f, err := m.LoadFunction("padded")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x := f.Desc.Inputs[0]
	if x.Name != "x" || x.DType != F16 || !slices.Equal(x.Shape, []int64{3, 5}) || x.NBytes != 2*3*8 {
		t.Fatalf("description of x: %+v", x)
	}
	if len(f.Desc.Outputs) != 1 || f.Desc.Outputs[0].Name != "y" || len(f.Desc.States) != 0 {
		t.Fatalf("description %+v", f.Desc)
	}
}

func TestBufferCreate(t *testing.T) {
	lib, err := OpenLibrary(standintest.Bridge(t))
	if err != nil {
		t.Fatal(err)
	}
	b := mustBuffer(t, lib, F16, 3, 4)
	if len(b.Bytes()) != 24 || !slices.Equal(b.Strides, []int64{4, 1}) {
		t.Fatalf("buffer %d bytes, strides %v", len(b.Bytes()), b.Strides)
	}
	for _, v := range b.Bytes() {
		if v != 0 {
			t.Fatal("buffer is not zero-filled")
		}
	}
	p, err := lib.NewBuffer(I8, []int64{2, 3}, []int64{16, 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Bytes()) != 32 {
		t.Fatalf("padded buffer has %d bytes, want 32", len(p.Bytes()))
	}
	p.Close()
	_, err = lib.NewBuffer(F16, []int64{2, 3}, []int64{3, 2})
	standintest.WantErr(t, err, "last stride is 2")
	_, err = lib.NewBuffer(F16, []int64{2, 3}, []int64{2, 1})
	standintest.WantErr(t, err, "overlaps")
	_, err = lib.NewBuffer(F16, []int64{0}, nil)
	standintest.WantErr(t, err, "dimension 0 is 0")
	_, err = lib.NewBuffer("f8", []int64{1}, nil)
	standintest.WantErr(t, err, `unknown dtype "f8"`)
}

func TestBindingValidation(t *testing.T) {
	lib, m := openArith(t)
	f, err := m.LoadFunction("axpy")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, b, y := mustBuffer(t, lib, F32, 4), mustBuffer(t, lib, F32, 4), mustBuffer(t, lib, F32, 4)
	cases := []struct {
		name    string
		in, out map[string]*Buffer
		want    []string
	}{
		{"missing input", map[string]*Buffer{"a": a}, map[string]*Buffer{"y": y}, []string{"1 inputs bound, the function has 2"}},
		{"unknown name", map[string]*Buffer{"a": a, "c": b}, map[string]*Buffer{"y": y}, []string{"input b is not bound"}},
		{"shape mismatch", map[string]*Buffer{"a": a, "b": mustBuffer(t, lib, F32, 5)}, map[string]*Buffer{"y": y}, []string{"input b wants f32 (4)", "buffer is f32 (5)"}},
		{"dtype mismatch", map[string]*Buffer{"a": a, "b": mustBuffer(t, lib, F16, 4)}, map[string]*Buffer{"y": y}, []string{"buffer is f16 (4)"}},
		{"alias", map[string]*Buffer{"a": a, "b": b}, map[string]*Buffer{"y": a}, []string{"input a aliases y"}},
		{"no output", map[string]*Buffer{"a": a, "b": b}, nil, []string{"0 outputs bound"}},
	}
	before := standin.Live()
	for _, c := range cases {
		_, err := f.Bind(c.in, c.out, nil)
		if err == nil {
			t.Fatalf("%s: bound", c.name)
		}
		standintest.WantErr(t, err, append([]string{"axpy"}, c.want...)...)
	}
	if standin.Live() != before {
		t.Fatalf("refused bindings leaked: %v → %v", before, standin.Live())
	}
	closed, _ := lib.NewBuffer(F32, []int64{4}, nil)
	closed.Close()
	_, err = f.Bind(map[string]*Buffer{"a": a, "b": closed}, map[string]*Buffer{"y": y}, nil)
	standintest.WantErr(t, err, "buffer for b is closed")
}

func TestRunComputesAndReportsErrors(t *testing.T) {
	lib, m := openArith(t)
	f, _ := m.LoadFunction("axpy")
	defer f.Close()
	a, b, y := mustBuffer(t, lib, F32, 4), mustBuffer(t, lib, F32, 4), mustBuffer(t, lib, F32, 4)
	copy(standintest.F32s(a.Bytes()), []float32{1, 2, 3, 4})
	copy(standintest.F32s(b.Bytes()), []float32{10, 20, 30, 40})
	bd, err := f.Bind(map[string]*Buffer{"a": a, "b": b}, map[string]*Buffer{"y": y}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	// Two bindings in one run execute in order: the second reads y of the first.
	y2 := mustBuffer(t, lib, F32, 4)
	bd2, err := f.Bind(map[string]*Buffer{"a": y, "b": b}, map[string]*Buffer{"y": y2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bd2.Close()
	times := make([]float64, 2)
	if err := lib.Run([]*Binding{bd, bd2}, times); err != nil {
		t.Fatal(err)
	}
	if got := standintest.F32s(y2.Bytes()); !slices.Equal(got, []float32{34, 68, 102, 136}) {
		t.Fatalf("y2 = %v", got)
	}
	if times[0] <= 0 || times[1] <= times[0] {
		t.Fatalf("times %v", times)
	}
	standintest.WantErr(t, lib.Run([]*Binding{bd}, make([]float64, 0, 1)), "0 timing slots")

	fb, _ := m.LoadFunction("boom")
	defer fb.Close()
	bb, err := fb.Bind(map[string]*Buffer{"a": a}, map[string]*Buffer{"y": mustBuffer(t, lib, F32, 4)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Close()
	// A failed run names the package and the function of the binding that
	// failed (the bridge says "binding 1 (boom): …").
	err = lib.Run([]*Binding{bd, bb}, nil)
	standintest.WantErr(t, err, "coreai: arith.aimodel entry boom: run: the program failed on purpose")
	var re *RunError
	if !errors.As(err, &re) || re.Package != "arith.aimodel" || re.Entry != "boom" || re.Err.Error() != "the program failed on purpose" {
		t.Fatalf("run error %#v", err)
	}
	// A message that names no binding is attributed to every package and
	// entry of the run.
	re = runError([]*Binding{bd, bd2, bb}, "the device went away")
	if re.Package != "arith.aimodel" || re.Entry != "axpy+boom" || re.Error() != "coreai: arith.aimodel entry axpy+boom: run: the device went away" {
		t.Fatalf("unattributed run error %#v: %v", re, re)
	}
	bb.Close()
	standintest.WantErr(t, lib.Run([]*Binding{bd, bb}, nil), "binding 1 is closed")
}

func TestPaddedStrides(t *testing.T) {
	lib, m := openArith(t)
	f, _ := m.LoadFunction("padded")
	defer f.Close()
	x, err := lib.NewBufferFor(f.Desc.Inputs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	y, _ := lib.NewBufferFor(f.Desc.Outputs[0])
	defer y.Close()
	for i := range x.Bytes() {
		x.Bytes()[i] = byte(i)
	}
	bd, err := f.Bind(map[string]*Buffer{"x": x}, map[string]*Buffer{"y": y}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	if err := lib.Run([]*Binding{bd}, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(x.Bytes(), y.Bytes()) {
		t.Fatal("padded copy differs")
	}
	// A packed buffer of the same shape is refused: the layout must be the preferred one.
	packed := mustBuffer(t, lib, F16, 3, 5)
	_, err = f.Bind(map[string]*Buffer{"x": packed}, map[string]*Buffer{"y": y}, nil)
	standintest.WantErr(t, err, "strides (8,1)")
}

// TestNoLeaksOver10000Calls creates, binds, runs and releases 10,000 times:
// the bridge's live object counts return to where they started, each run
// reached the model's compute once, and no callback is created after the
// first.
func TestNoLeaksOver10000Calls(t *testing.T) {
	lib, m := openArith(t)
	before := standin.Live()
	calls := arithRuns.Load()
	for i := 0; i < 10000; i++ {
		f, err := m.LoadFunction("axpy")
		if err != nil {
			t.Fatal(err)
		}
		a, _ := lib.NewBuffer(F32, []int64{4}, nil)
		b, _ := lib.NewBuffer(F32, []int64{4}, nil)
		y, _ := lib.NewBuffer(F32, []int64{4}, nil)
		standintest.F32s(a.Bytes())[0] = float32(i)
		bd, err := f.Bind(map[string]*Buffer{"a": a, "b": b}, map[string]*Buffer{"y": y}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := lib.Run([]*Binding{bd}, nil); err != nil {
			t.Fatal(err)
		}
		if got := standintest.F32s(y.Bytes())[0]; got != float32(2*i) {
			t.Fatalf("call %d: y[0] = %v", i, got)
		}
		bd.Close()
		a.Close()
		b.Close()
		y.Close()
		f.Close()
	}
	if after := standin.Live(); after != before {
		t.Fatalf("live models/functions/buffers/bindings %v → %v", before, after)
	}
	if n := arithRuns.Load() - calls; n != 10000 {
		t.Fatalf("%d compute calls, want 10000", n)
	}
	if n := standin.Callbacks(); n != 1 {
		t.Fatalf("%d purego callbacks created, want 1", n)
	}
}

// TestBufferCleanupReleases drops buffers without Close: the cleanup tied to
// the Go object releases the bridge memory.
func TestBufferCleanupReleases(t *testing.T) {
	lib, err := OpenLibrary(standintest.Bridge(t))
	if err != nil {
		t.Fatal(err)
	}
	before := standin.Live()[2]
	for i := 0; i < 20; i++ {
		if _, err := lib.NewBuffer(F32, []int64{16}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if standin.Live()[2] != before+20 {
		t.Fatalf("live buffers %d, want %d", standin.Live()[2], before+20)
	}
	deadline := time.Now().Add(5 * time.Second)
	for standin.Live()[2] != before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if standin.Live()[2] != before {
		t.Fatalf("unreachable buffers not released: %d live, want %d", standin.Live()[2], before)
	}
}

// TestSwiftBridgeExportsEverySymbol parses the Swift bridge's @_cdecl names.
func TestSwiftBridgeExportsEverySymbol(t *testing.T) {
	src, err := os.ReadFile("bridge/CoreAIBridge.swift")
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile(`@_cdecl\("([A-Za-z0-9_]+)"\)`).FindAllStringSubmatch(string(src), -1) {
		exported[m[1]] = true
	}
	for _, s := range Symbols() {
		if !exported[s] {
			t.Errorf("the Swift bridge does not export %s", s)
		}
	}
	// The C stand-in's source (ane/coreai/standin).
	c, err := os.ReadFile("../standin/csrc/bridge.c")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Symbols() {
		if !regexp.MustCompile(`\b` + s + `\(`).Match(c) {
			t.Errorf("the test bridge does not define %s", s)
		}
	}
	if len(exported) < len(Symbols()) {
		t.Errorf("only %d symbols exported", len(exported))
	}
}
