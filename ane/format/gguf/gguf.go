// Package gguf writes GGUF files (version 3), the model format of
// llama.cpp and ggml, so that the peer benchmark can run llama.cpp on the
// same synthetic checkpoints as the engine (bench/llamacpp): BF16 and F32
// tensors, which llama.cpp's own llama-quantize then turns into its
// quantized formats.
//
// The layout follows ggml's docs/gguf.md: a header (magic "GGUF",
// version, tensor count, key-value count), the metadata key-value pairs,
// one info record per tensor (name, dimensions fastest first, ggml type,
// offset into the data section), padding to the alignment, then the
// tensor data, each tensor starting on an aligned offset. Everything is
// little-endian; strings are a uint64 length and their bytes.
package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/forgedaemon/forged/ane/format/half"
)

// Alignment is the data alignment the writer uses (ggml's default,
// general.alignment absent).
const Alignment = 32

// Type is a ggml tensor type; the values are ggml's enum ggml_type.
type Type uint32

const (
	F32  Type = 0
	BF16 Type = 30
)

func (t Type) String() string {
	switch t {
	case F32:
		return "F32"
	case BF16:
		return "BF16"
	}
	return fmt.Sprintf("ggml_type(%d)", uint32(t))
}

// elemBytes is the storage of one element, or an error for a type the
// writer does not know.
func (t Type) elemBytes() (int, error) {
	switch t {
	case F32:
		return 4, nil
	case BF16:
		return 2, nil
	}
	return 0, fmt.Errorf("gguf: unsupported tensor type %v", t)
}

// Metadata value types (gguf_type).
const (
	typeUint32  = 4
	typeInt32   = 5
	typeFloat32 = 6
	typeBool    = 7
	typeString  = 8
	typeArray   = 9
)

// KV is one metadata pair; Value is a uint32, int32, float32, bool,
// string, []int32, []float32 or []string.
type KV struct {
	Key   string
	Value any
}

// Tensor is one tensor to write: Dims fastest first (ggml's ne: a matrix
// of rows×cols is {cols, rows}), Data already in Type's encoding.
type Tensor struct {
	Name string
	Dims []uint64
	Type Type
	Data []byte
}

// Write writes a GGUF file at path atomically (a temporary file renamed
// into place), checking each tensor's data length against its dimensions.
func Write(path string, kvs []KV, tensors []Tensor) error {
	if err := check(kvs, tensors); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".gguf-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // no-op after the rename
	w := bufio.NewWriterSize(f, 1<<20)
	if err = encode(w, kvs, tensors); err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Chmod(0o644) // CreateTemp's 0600 is for the half-written file
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("gguf: writing %s: %w", path, err)
	}
	return os.Rename(f.Name(), path)
}

func check(kvs []KV, tensors []Tensor) error {
	keys := map[string]bool{}
	for _, kv := range kvs {
		if keys[kv.Key] {
			return fmt.Errorf("gguf: duplicate metadata key %q", kv.Key)
		}
		keys[kv.Key] = true
	}
	names := map[string]bool{}
	for _, t := range tensors {
		if names[t.Name] {
			return fmt.Errorf("gguf: duplicate tensor %q", t.Name)
		}
		names[t.Name] = true
		if len(t.Dims) == 0 || len(t.Dims) > 4 || slices.Contains(t.Dims, 0) {
			return fmt.Errorf("gguf: tensor %q has dimensions %v (1 to 4, none zero)", t.Name, t.Dims)
		}
		size, err := t.Type.elemBytes()
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		want := uint64(size)
		for _, d := range t.Dims {
			want *= d
		}
		if uint64(len(t.Data)) != want {
			return fmt.Errorf("gguf: tensor %q (%v, %v) has %d bytes of data, want %d", t.Name, t.Type, t.Dims, len(t.Data), want)
		}
	}
	return nil
}

func encode(w io.Writer, kvs []KV, tensors []Tensor) error {
	e := &encoder{w: w}
	e.raw([]byte("GGUF"))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		e.value(kv.Key, kv.Value)
	}
	var off uint64
	for _, t := range tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(off)
		off = align(off + uint64(len(t.Data)))
	}
	e.pad()
	for _, t := range tensors {
		e.raw(t.Data)
		e.pad()
	}
	return e.err
}

func align(n uint64) uint64 { return (n + Alignment - 1) / Alignment * Alignment }

// encoder writes little-endian fields, keeping the first error and the
// byte count (for the padding).
type encoder struct {
	w   io.Writer
	n   uint64
	err error
}

func (e *encoder) raw(b []byte) {
	if e.err != nil {
		return
	}
	var k int
	k, e.err = e.w.Write(b)
	e.n += uint64(k)
}

func (e *encoder) u32(v uint32) { e.raw(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *encoder) u64(v uint64) { e.raw(binary.LittleEndian.AppendUint64(nil, v)) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }
func (e *encoder) pad()         { e.raw(make([]byte, align(e.n)-e.n)) }

func (e *encoder) value(key string, v any) {
	switch v := v.(type) {
	case uint32:
		e.u32(typeUint32)
		e.u32(v)
	case int32:
		e.u32(typeInt32)
		e.u32(uint32(v))
	case float32:
		e.u32(typeFloat32)
		e.u32(math.Float32bits(v))
	case bool:
		e.u32(typeBool)
		b := byte(0)
		if v {
			b = 1
		}
		e.raw([]byte{b})
	case string:
		e.u32(typeString)
		e.str(v)
	case []int32:
		e.u32(typeArray)
		e.u32(typeInt32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(uint32(x))
		}
	case []float32:
		e.u32(typeArray)
		e.u32(typeFloat32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(math.Float32bits(x))
		}
	case []string:
		e.u32(typeArray)
		e.u32(typeString)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.str(x)
		}
	default:
		if e.err == nil {
			e.err = fmt.Errorf("gguf: metadata %q: unsupported value type %T", key, v)
		}
	}
}

// Float32Bytes is x as F32 tensor data.
func Float32Bytes(x []float32) []byte {
	out := make([]byte, 0, 4*len(x))
	for _, v := range x {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out
}

// BF16Bytes is x rounded to bfloat16 as BF16 tensor data (exact for
// values read from a BF16 checkpoint).
func BF16Bytes(x []float32) []byte {
	out := make([]byte, 0, 2*len(x))
	for _, v := range x {
		out = binary.LittleEndian.AppendUint16(out, half.BF16(v))
	}
	return out
}
