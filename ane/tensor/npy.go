package tensor

import (
	"fmt"
	"io"
	"slices"
	"sync"
)

// NPYFile is an open, validated .npy file whose data is memory-mapped.
type NPYFile struct {
	path   string
	m      *mappedFile
	h      NPYHeader
	rowLen int64 // bytes per index of the first axis

	fallbackOnce sync.Once // Data() without a mapping reads the file once
	fallback     []byte
}

// OpenNPY opens a .npy file, validates its header and its size
// (header + product(shape) × itemsize == file size) and maps it read-only.
func OpenNPY(path string) (*NPYFile, error) {
	m, err := openMapped(path)
	if err != nil {
		return nil, err
	}
	h, err := ReadNPYHeader(io.NewSectionReader(m.f, 0, m.size)) // pread: see OpenSafetensors
	if err == nil && h.DataOffset+h.DataSize() != m.size {
		err = formatErr(RuleNPYSize, "header (%d bytes) + shape %v × %d bytes = %d, but the file is %d bytes",
			h.DataOffset, h.Shape, h.ItemSize(), h.DataOffset+h.DataSize(), m.size)
	}
	if err != nil {
		m.Close()
		return nil, withPath(err, path)
	}
	f := &NPYFile{path: path, m: m, h: h}
	if len(h.Shape) > 0 {
		f.rowLen, _ = byteSize(h.Shape[1:], h.ItemSize())
	}
	return f, nil
}

// Header returns the parsed header.
func (f *NPYFile) Header() NPYHeader {
	h := f.h
	h.Shape = slices.Clone(h.Shape)
	return h
}

// Row returns the bytes of index i along the first axis (for the embedding
// table, token i's vector) without copying when mapped.
func (f *NPYFile) Row(i int) ([]byte, error) {
	if len(f.h.Shape) == 0 {
		return nil, fmt.Errorf("%s: a 0-dimensional array has no rows", f.path)
	}
	if i < 0 || i >= f.h.Shape[0] {
		return nil, fmt.Errorf("%s: row %d out of range [0, %d)", f.path, i, f.h.Shape[0])
	}
	return f.m.section(f.h.DataOffset+int64(i)*f.rowLen, f.rowLen)
}

// npyDTypes maps each .npy descr to the safetensors dtype with the same
// element layout, so views share one compatibility table.
var npyDTypes = map[string]DType{"<f2": F16, "<f4": F32, "<i4": I32, "<i8": I64, "|u1": U8, "|i1": I8}

// NPYRow returns row i as []T without copying (when mapped and aligned).
// T must match the descr: <f2 → uint16 (fp16 bits, see ane/half),
// <f4 → float32, <i4 → int32, <i8 → int64, |u1 → uint8, |i1 → int8.
func NPYRow[T Element](f *NPYFile, i int) ([]T, error) {
	if !viewable[T](npyDTypes[f.h.Descr]) {
		return nil, fmt.Errorf("%s: array is %s, cannot view it as []%s", f.path, f.h.Descr, typeName[T]())
	}
	if !littleEndianHost {
		return nil, fmt.Errorf("%s: zero-copy views need a little-endian host", f.path)
	}
	b, err := f.Row(i)
	if err != nil {
		return nil, err
	}
	return castSlice[T](b), nil
}

// Data returns the whole array's bytes: zero-copy when mapped; otherwise
// the file is read into memory once (nil if that fails). Prefer Row for
// large arrays.
func (f *NPYFile) Data() []byte {
	if f.m.mapped() {
		b, _ := f.m.section(f.h.DataOffset, f.h.DataSize())
		return b
	}
	f.fallbackOnce.Do(func() {
		f.fallback, _ = f.m.section(f.h.DataOffset, f.h.DataSize())
	})
	return f.fallback
}

// Close unmaps and closes the file; slices from Row and Data become invalid.
func (f *NPYFile) Close() error { return f.m.Close() }

// WriteNPY writes a C-order .npy file atomically (temporary file, fsync,
// rename). descr is one of <f2 <f4 <i4 <i8 |u1 |i1 and data holds
// product(shape) × itemsize little-endian bytes.
func WriteNPY(path, descr string, shape []int, data []byte) error {
	size, ok := npyItemSizes[descr]
	if !ok {
		return fmt.Errorf("%s: dtype %q is not supported (want <f2 <f4 <i4 <i8 |u1 |i1)", path, descr)
	}
	for i, d := range shape {
		if d < 0 {
			return fmt.Errorf("%s: shape[%d] = %d is negative", path, i, d)
		}
	}
	want, ok := byteSize(shape, size)
	if !ok {
		return fmt.Errorf("%s: shape %v × %d bytes overflows", path, shape, size)
	}
	if want != int64(len(data)) {
		return fmt.Errorf("%s: shape %v of %s needs %d bytes, data has %d", path, shape, descr, want, len(data))
	}
	tmp, err := createTemp(path)
	if err != nil {
		return err
	}
	if _, err := tmp.Write(encodeNPYHeader(descr, shape)); err != nil {
		abortTemp(tmp)
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		abortTemp(tmp)
		return err
	}
	return commitTemp(tmp, path)
}
