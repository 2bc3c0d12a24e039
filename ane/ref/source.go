package ref

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/kernels"
)

// Tensor is one stored tensor: a safetensors dtype name ("BF16", "F16",
// "F32", "U8", "I8"), its shape and its little-endian bytes.
type Tensor struct {
	DType string
	Shape []int
	Data  []byte
}

// Source looks tensors up by name. Loaders read weights only through it, so
// tests can build models in memory; checkpoints and exports adapt files to it.
type Source interface {
	Tensor(name string) (Tensor, bool)
}

// MapSource is an in-memory Source.
type MapSource map[string]Tensor

func (m MapSource) Tensor(name string) (Tensor, bool) { t, ok := m[name]; return t, ok }

// reader fetches tensors from a source with checks; errors name the tensor
// and the file (where) it was expected in.
type reader struct {
	src   Source
	where string
	bytes int64 // bytes of everything read, for the memory report
}

func (r *reader) get(name string, shape ...int) (Tensor, error) {
	t, ok := r.src.Tensor(name)
	if !ok {
		return Tensor{}, fmt.Errorf("%s: tensor %q is missing", r.where, name)
	}
	if !slices.Equal(t.Shape, shape) {
		return Tensor{}, fmt.Errorf("%s: tensor %q has shape %v, the config needs %v", r.where, name, t.Shape, shape)
	}
	return t, nil
}

// Floats reads the BF16, F16 or F32 tensor name of src, which must have
// the given shape, as float32 (a copy): for tools that convert checkpoints
// (bench/cpu's GGUF conversion).
func Floats(src Source, name string, shape ...int) ([]float32, error) {
	r := &reader{src: src, where: "checkpoint"}
	return r.vector(name, shape...)
}

// vector reads a BF16/F16/F32 tensor of the given shape as float32 (a copy).
func (r *reader) vector(name string, shape ...int) ([]float32, error) {
	t, err := r.get(name, shape...)
	if err != nil {
		return nil, err
	}
	return r.floats(name, t)
}

func (r *reader) floats(name string, t Tensor) ([]float32, error) {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	out := make([]float32, n)
	switch t.DType {
	case "BF16":
		half.BF16ToF32(out, half.View(t.Data))
	case "F16":
		half.F16ToF32(out, half.View(t.Data))
	case "F32":
		copy(out, f32(t.Data))
	default:
		return nil, fmt.Errorf("%s: tensor %q has dtype %s, want BF16, F16 or F32", r.where, name, t.DType)
	}
	r.bytes += int64(len(out)) * 4
	return out, nil
}

// dense reads a rows×cols weight matrix, keeping BF16 in place (zero-copy).
func (r *reader) dense(name string, rows, cols int) (kernels.Matrix, error) {
	t, err := r.get(name, rows, cols)
	if err != nil {
		return nil, err
	}
	if t.DType == "BF16" {
		r.bytes += int64(len(t.Data))
		return kernels.NewBF16(rows, cols, half.View(t.Data))
	}
	w, err := r.floats(name, t)
	if err != nil {
		return nil, err
	}
	return kernels.NewF32(rows, cols, w)
}

func f32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), len(out)*4), b)
	return out
}

// bf16Embedding reads rows of a BF16 (vocab, hidden) table in place.
type bf16Embedding struct {
	rows, cols int
	w          []uint16
}

func (e *bf16Embedding) Rows() int    { return e.rows }
func (e *bf16Embedding) Cols() int    { return e.cols }
func (e *bf16Embedding) Bytes() int64 { return int64(len(e.w)) * 2 }
func (e *bf16Embedding) Row(id int, dst []float32) {
	half.BF16ToF32(dst, e.w[id*e.cols:(id+1)*e.cols])
}

// i8 views bytes as int8 values (same size, no copy).
func i8(b []byte) []int8 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(&b[0])), len(b))
}
