// Package tensor reads and writes the tensor file formats the model
// pipeline uses: safetensors (checkpoints and exports) and NumPy .npy
// (the FP16 embedding table). Readers validate every byte of a header before
// anything is used and memory-map the data read-only, so opening a
// multi-gigabyte file costs the same as opening a small one.
package tensor

import (
	"encoding/binary"
	"unsafe"
)

// DType is a safetensors element type; its value is the name used in files.
type DType string

// The safetensors dtypes this package accepts.
const (
	Bool DType = "BOOL"
	U8   DType = "U8"
	I8   DType = "I8"
	U16  DType = "U16"
	I16  DType = "I16"
	F16  DType = "F16"
	BF16 DType = "BF16"
	U32  DType = "U32"
	I32  DType = "I32"
	F32  DType = "F32"
	U64  DType = "U64"
	I64  DType = "I64"
	F64  DType = "F64"
)

// dtypes lists every known dtype (used for round-trip tests and messages).
var dtypes = []DType{Bool, U8, I8, U16, I16, F16, BF16, U32, I32, F32, U64, I64, F64}

// Size is the size of one element in bytes, or 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case Bool, U8, I8:
		return 1
	case U16, I16, F16, BF16:
		return 2
	case U32, I32, F32:
		return 4
	case U64, I64, F64:
		return 8
	}
	return 0
}

// Element is a Go type a tensor's bytes can be viewed as without copying.
// F16 and BF16 are viewed as uint16 bit patterns (see package ane/format/half);
// BOOL as uint8.
type Element interface {
	uint8 | int8 | uint16 | int16 | uint32 | int32 | uint64 | int64 | float32 | float64
}

// viewable reports whether a tensor of dtype d can be viewed as []T.
func viewable[T Element](d DType) bool {
	var zero T
	switch any(zero).(type) {
	case uint8:
		return d == U8 || d == Bool
	case int8:
		return d == I8
	case uint16:
		return d == U16 || d == F16 || d == BF16
	case int16:
		return d == I16
	case uint32:
		return d == U32
	case int32:
		return d == I32
	case uint64:
		return d == U64
	case int64:
		return d == I64
	case float32:
		return d == F32
	case float64:
		return d == F64
	}
	return false
}

// typeName names T for error messages.
func typeName[T Element]() string {
	var zero T
	switch any(zero).(type) {
	case uint8:
		return "uint8"
	case int8:
		return "int8"
	case uint16:
		return "uint16"
	case int16:
		return "int16"
	case uint32:
		return "uint32"
	case int32:
		return "int32"
	case uint64:
		return "uint64"
	case int64:
		return "int64"
	case float32:
		return "float32"
	}
	return "float64"
}

// littleEndianHost is true on every platform forged targets (amd64, arm64);
// zero-copy views reinterpret little-endian file bytes and need it.
var littleEndianHost = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// castSlice reinterprets b as []T, copying only when b is not aligned for T.
func castSlice[T Element](b []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	n := len(b) / size
	if n == 0 {
		return []T{}
	}
	if uintptr(unsafe.Pointer(&b[0]))%unsafe.Alignof(zero) != 0 {
		out := make([]T, n)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), n*size), b)
		return out
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// bytesOf is the byte view of a typed slice (for writing typed data).
func bytesOf[T Element](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(zero)))
}
