package tensor

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"

	"github.com/forgedaemon/forged/ane/format/half"
)

// SafeFile is an open, fully validated safetensors file.
type SafeFile struct {
	path   string
	m      *mappedFile
	l      *layout
	byName map[string]int
}

// OpenSafetensors opens path, validates its whole header (every rule in
// docs/FORMATS.md) and memory-maps it read-only. A file that breaks a rule
// yields a *FormatError naming the rule.
func OpenSafetensors(path string) (*SafeFile, error) {
	m, err := openMapped(path)
	if err != nil {
		return nil, err
	}
	// The header is read with pread, not through the mapping: touching
	// mapped pages would fault them in and make Close pay to unmap them.
	l, err := readLayout(m.f, m.size)
	if err != nil {
		m.Close()
		return nil, withPath(err, path)
	}
	f := &SafeFile{path: path, m: m, l: l, byName: make(map[string]int, len(l.tensors))}
	for i, t := range l.tensors {
		f.byName[t.Name] = i
	}
	return f, nil
}

// Close unmaps and closes the file; slices from Bytes and View become invalid.
func (f *SafeFile) Close() error { return f.m.Close() }

// Path is the file this was opened from.
func (f *SafeFile) Path() string { return f.path }

// Mapped reports whether the data is memory-mapped (false: ReadAt fallback,
// where Bytes and View return copies).
func (f *SafeFile) Mapped() bool { return f.m.mapped() }

// HeaderSize is the length of the JSON header; data starts 8 bytes later.
func (f *SafeFile) HeaderSize() int64 { return f.l.headerLen }

// Metadata returns a copy of the __metadata__ map (empty if absent).
func (f *SafeFile) Metadata() map[string]string { return maps.Clone(f.l.metadata) }

// Tensors lists the tensors in data-offset order.
func (f *SafeFile) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(f.l.tensors))
	for i, t := range f.l.tensors {
		t.Shape = append([]int(nil), t.Shape...)
		out[i] = t
	}
	return out
}

// Tensor looks a tensor up by name.
func (f *SafeFile) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.byName[name]
	if !ok {
		return TensorInfo{}, false
	}
	t := f.l.tensors[i]
	t.Shape = append([]int(nil), t.Shape...)
	return t, true
}

func (f *SafeFile) lookup(name string) (TensorInfo, error) {
	i, ok := f.byName[name]
	if !ok {
		return TensorInfo{}, fmt.Errorf("%s: no tensor named %q", f.path, name)
	}
	return f.l.tensors[i], nil
}

// Bytes returns the raw little-endian bytes of a tensor without copying
// (when mapped). The slice must not be written to and is valid until Close.
func (f *SafeFile) Bytes(name string) ([]byte, error) {
	t, err := f.lookup(name)
	if err != nil {
		return nil, err
	}
	return f.m.section(f.l.dataStart()+t.Offset, t.Size)
}

// View returns a tensor's elements as []T without copying. T must match the
// dtype (F16 and BF16 view as uint16, BOOL as uint8). The data is copied only
// if it is not aligned for T in the mapping or the file is not mapped.
func View[T Element](f *SafeFile, name string) ([]T, error) {
	t, err := f.lookup(name)
	if err != nil {
		return nil, err
	}
	if !viewable[T](t.DType) {
		return nil, fmt.Errorf("%s: tensor %q is %s, cannot view it as []%s", f.path, name, t.DType, typeName[T]())
	}
	if !littleEndianHost {
		return nil, fmt.Errorf("%s: zero-copy views need a little-endian host", f.path)
	}
	b, err := f.m.section(f.l.dataStart()+t.Offset, t.Size)
	if err != nil {
		return nil, err
	}
	return castSlice[T](b), nil
}

// Float32 returns a converted copy of an F16, BF16 or F32 tensor.
func (f *SafeFile) Float32(name string) ([]float32, error) {
	t, err := f.lookup(name)
	if err != nil {
		return nil, err
	}
	b, err := f.m.section(f.l.dataStart()+t.Offset, t.Size)
	if err != nil {
		return nil, err
	}
	switch t.DType {
	case F32:
		out := make([]float32, len(b)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return out, nil
	case F16, BF16:
		var src []uint16
		if littleEndianHost {
			src = castSlice[uint16](b) // copies only if unaligned
		} else {
			src = make([]uint16, len(b)/2)
			for i := range src {
				src[i] = binary.LittleEndian.Uint16(b[2*i:])
			}
		}
		out := make([]float32, len(src))
		if t.DType == F16 {
			half.F16ToF32(out, src)
		} else {
			half.BF16ToF32(out, src)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: tensor %q is %s, not a float type convertible to float32", f.path, name, t.DType)
}
