package tensor

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/forgedaemon/forged/internal/atomicfile"
)

// Tensor is one tensor to write: raw little-endian bytes of the given shape.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// Spec declares a tensor for the streaming Writer before its data exists.
type Spec struct {
	Name  string
	DType DType
	Shape []int
}

// WriteSafetensors writes a complete safetensors file atomically (see
// Writer for the layout). Every tensor is checked before the file is created.
func WriteSafetensors(path string, metadata map[string]string, tensors []Tensor) error {
	specs := make([]Spec, len(tensors))
	for i, t := range tensors {
		specs[i] = Spec{t.Name, t.DType, t.Shape}
		if want, ok := byteSize(t.Shape, t.DType.Size()); ok && t.DType.Size() > 0 && want != int64(len(t.Data)) {
			return fmt.Errorf("%s: tensor %q: shape %v of %s needs %d bytes, data has %d", path, t.Name, t.Shape, t.DType, want, len(t.Data))
		}
	}
	w, err := NewWriter(path, metadata, specs)
	if err != nil {
		return err
	}
	for _, t := range tensors {
		if err := w.Write(t.Name, t.Data); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Commit()
}

// Writer streams a safetensors file whose tensors are too large to hold at
// once. The header is fixed from the specs up front, so tensors may be
// written in any order, each in as many chunks as convenient. Nothing
// appears at path until Commit succeeds.
//
// The layout is deterministic: tensors are ordered by element size
// (largest first) then name, which keeps every tensor naturally aligned;
// __metadata__ comes first with sorted keys; the header is padded with
// spaces so the data section starts at a multiple of 8.
type Writer struct {
	path    string
	tmp     *atomicfile.File
	l       *layout
	byName  map[string]int
	written []int64
}

// NewWriter validates the specs, creates the temporary file and writes the header.
func NewWriter(path string, metadata map[string]string, specs []Spec) (*Writer, error) {
	l, err := planLayout(metadata, specs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	hdr := encodeHeader(l)
	l.headerLen = int64(len(hdr))
	tmp, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, err
	}
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(hdr)))
	if _, err := tmp.Write(append(prefix[:], hdr...)); err != nil {
		tmp.Abort()
		return nil, err
	}
	var total int64
	if n := len(l.tensors); n > 0 {
		total = l.tensors[n-1].Offset + l.tensors[n-1].Size
	}
	if err := tmp.Truncate(l.dataStart() + total); err != nil {
		tmp.Abort()
		return nil, err
	}
	w := &Writer{path: path, tmp: tmp, l: l, byName: map[string]int{}, written: make([]int64, len(l.tensors))}
	for i, t := range l.tensors {
		w.byName[t.Name] = i
	}
	return w, nil
}

// Write appends p to the named tensor's data.
func (w *Writer) Write(name string, p []byte) error {
	if w.tmp == nil {
		return fmt.Errorf("%s: writer already committed or aborted", w.path)
	}
	i, ok := w.byName[name]
	if !ok {
		return fmt.Errorf("%s: no tensor %q was declared", w.path, name)
	}
	t := w.l.tensors[i]
	if w.written[i]+int64(len(p)) > t.Size {
		return fmt.Errorf("%s: tensor %q: writing %d more bytes would exceed its %d bytes", w.path, name, len(p), t.Size-w.written[i])
	}
	if _, err := w.tmp.WriteAt(p, w.l.dataStart()+t.Offset+w.written[i]); err != nil {
		return err
	}
	w.written[i] += int64(len(p))
	return nil
}

// Commit checks every tensor is complete, then fsyncs and renames the file
// into place. On error the temporary file is removed.
func (w *Writer) Commit() error {
	if w.tmp == nil {
		return fmt.Errorf("%s: writer already committed or aborted", w.path)
	}
	tmp := w.tmp
	w.tmp = nil
	for i, t := range w.l.tensors {
		if w.written[i] != t.Size {
			tmp.Abort()
			return fmt.Errorf("%s: tensor %q has %d of its %d bytes; nothing was written", w.path, t.Name, w.written[i], t.Size)
		}
	}
	return tmp.Commit()
}

// Abort discards the temporary file; path is untouched.
func (w *Writer) Abort() error {
	if w.tmp == nil {
		return nil
	}
	tmp := w.tmp
	w.tmp = nil
	return tmp.Abort()
}

// planLayout validates specs and assigns offsets in the canonical order.
func planLayout(metadata map[string]string, specs []Spec) (*layout, error) {
	l := &layout{metadata: metadata, tensors: make([]TensorInfo, len(specs))}
	for k, v := range metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, fmt.Errorf("metadata %q: keys and values must be valid UTF-8", k)
		}
	}
	seen := map[string]bool{}
	for i, s := range specs {
		if !utf8.ValidString(s.Name) {
			return nil, fmt.Errorf("tensor name %q is not valid UTF-8", s.Name)
		}
		if s.Name == "__metadata__" {
			return nil, errors.New(`"__metadata__" is reserved and cannot name a tensor`)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("tensor %q declared twice", s.Name)
		}
		seen[s.Name] = true
		if s.DType.Size() == 0 {
			return nil, fmt.Errorf("tensor %q: unknown dtype %q", s.Name, s.DType)
		}
		for j, d := range s.Shape {
			if d < 0 {
				return nil, fmt.Errorf("tensor %q: shape[%d] = %d is negative", s.Name, j, d)
			}
		}
		size, ok := byteSize(s.Shape, s.DType.Size())
		if !ok {
			return nil, fmt.Errorf("tensor %q: shape %v overflows", s.Name, s.Shape)
		}
		l.tensors[i] = TensorInfo{Name: s.Name, DType: s.DType, Shape: slices.Clone(s.Shape), Size: size}
	}
	slices.SortFunc(l.tensors, func(a, b TensorInfo) int {
		if a.DType.Size() != b.DType.Size() {
			return b.DType.Size() - a.DType.Size()
		}
		return strings.Compare(a.Name, b.Name)
	})
	var off int64
	for i := range l.tensors {
		l.tensors[i].Offset = off
		if off+l.tensors[i].Size < off {
			return nil, errors.New("total tensor size overflows")
		}
		off += l.tensors[i].Size
	}
	return l, nil
}

// encodeHeader renders the JSON header in the canonical key order.
func encodeHeader(l *layout) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			b.WriteByte(',')
		}
		first = false
	}
	if len(l.metadata) > 0 {
		sep()
		b.WriteString(`"__metadata__":{`)
		keys := slices.Sorted(maps.Keys(l.metadata))
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(&b, k)
			b.WriteByte(':')
			writeJSONString(&b, l.metadata[k])
		}
		b.WriteByte('}')
	}
	for _, t := range l.tensors {
		sep()
		writeJSONString(&b, t.Name)
		b.WriteString(`:{"dtype":`)
		writeJSONString(&b, string(t.DType))
		b.WriteString(`,"shape":[`)
		for i, d := range t.Shape {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, t.Offset, t.Offset+t.Size)
	}
	b.WriteByte('}')
	for (8+b.Len())%8 != 0 {
		b.WriteByte(' ')
	}
	return b.Bytes()
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // marshalling a string cannot fail
	b.Write(enc)
}
