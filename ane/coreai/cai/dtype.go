package cai

import "unsafe"

// DType is a bridge element type, named as cai_function_describe names it.
type DType string

// Element types and their ABI codes (0 f16 … 10 bool).
const (
	F16  DType = "f16"
	F32  DType = "f32"
	I32  DType = "i32"
	I8   DType = "i8"
	U8   DType = "u8"
	BF16 DType = "bf16"
	I16  DType = "i16"
	U16  DType = "u16"
	I64  DType = "i64"
	F64  DType = "f64"
	Bool DType = "bool"
)

var dtypeCodes = []DType{F16, F32, I32, I8, U8, BF16, I16, U16, I64, F64, Bool}

func (d DType) code() (int32, bool) {
	for i, c := range dtypeCodes {
		if c == d {
			return int32(i), true
		}
	}
	return -1, false
}

// Size is the element size in bytes (0 for an unknown type).
func (d DType) Size() int {
	switch d {
	case F16, BF16, I16, U16:
		return 2
	case F32, I32:
		return 4
	case I8, U8, Bool:
		return 1
	case I64, F64:
		return 8
	}
	return 0
}

// unsafePointer turns a bridge-returned address into a pointer. The memory
// is C-owned (never Go heap), so the GC neither moves nor frees it.
func unsafePointer(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}
