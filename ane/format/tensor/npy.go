package tensor

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/forgedaemon/forged/internal/atomicfile"
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
// T must match the descr: <f2 → uint16 (fp16 bits, see ane/format/half),
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
	w, err := NewNPYWriter(path, descr, shape)
	if err != nil {
		return err
	}
	if int64(len(data)) != w.size {
		w.Abort()
		return fmt.Errorf("%s: shape %v of %s needs %d bytes, data has %d", path, shape, descr, w.size, len(data))
	}
	if _, err := w.Write(data); err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}

// NPYWriter streams a .npy file too large to hold in memory (the 2.5 GB
// embedding table): the header is written first, then Write appends data in
// C order, and Commit checks the size, fsyncs and renames into place.
// Nothing appears at path unless Commit succeeds.
type NPYWriter struct {
	path    string
	tmp     *atomicfile.File
	size    int64 // bytes of data the shape needs
	written int64
}

// NewNPYWriter validates descr and shape and writes the header to a
// temporary file next to path.
func NewNPYWriter(path, descr string, shape []int) (*NPYWriter, error) {
	itemSize, ok := npyItemSizes[descr]
	if !ok {
		return nil, fmt.Errorf("%s: dtype %q is not supported (want <f2 <f4 <i4 <i8 |u1 |i1)", path, descr)
	}
	for i, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("%s: shape[%d] = %d is negative", path, i, d)
		}
	}
	size, ok := byteSize(shape, itemSize)
	if !ok {
		return nil, fmt.Errorf("%s: shape %v × %d bytes overflows", path, shape, itemSize)
	}
	tmp, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := tmp.Write(encodeNPYHeader(descr, shape)); err != nil {
		tmp.Abort()
		return nil, err
	}
	return &NPYWriter{path: path, tmp: tmp, size: size}, nil
}

// Write appends array data; writing past the size the shape implies fails.
func (w *NPYWriter) Write(p []byte) (int, error) {
	if w.tmp == nil {
		return 0, fmt.Errorf("%s: writer already committed or aborted", w.path)
	}
	if w.written+int64(len(p)) > w.size {
		return 0, fmt.Errorf("%s: writing %d more bytes would exceed the %d the shape holds", w.path, len(p), w.size)
	}
	n, err := w.tmp.Write(p)
	w.written += int64(n)
	return n, err
}

// Commit checks all data was written, then fsyncs and renames the file
// into place. On error the temporary file is removed.
func (w *NPYWriter) Commit() error {
	if w.tmp == nil {
		return fmt.Errorf("%s: writer already committed or aborted", w.path)
	}
	tmp := w.tmp
	w.tmp = nil
	if w.written != w.size {
		tmp.Abort()
		return fmt.Errorf("%s: %d of %d data bytes written; nothing was written", w.path, w.written, w.size)
	}
	return tmp.Commit()
}

// Abort discards the temporary file; path is untouched.
func (w *NPYWriter) Abort() error {
	if w.tmp == nil {
		return nil
	}
	tmp := w.tmp
	w.tmp = nil
	return tmp.Abort()
}
