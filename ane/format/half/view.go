package half

import "unsafe"

// View reads little-endian bytes as 16-bit values in place (a copy only
// when b is not 2-byte aligned); the machines this runs on, amd64 and
// arm64, are little-endian. fp16 and bf16 tables are read through it.
func View(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	if uintptr(unsafe.Pointer(&b[0]))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
	}
	out := make([]uint16, len(b)/2)
	for i := range out {
		out[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	return out
}
