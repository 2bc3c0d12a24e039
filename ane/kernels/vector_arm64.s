//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// NEON vector kernels for the attention history and the delta rule's state
// (vector_arm64.go), the counterparts of vector_amd64.s with the same fused
// operations: n a multiple of 4 (8 for axpyInt8NEON). FP16 inputs widen
// with FCVTL (base ARMv8-A). A float argument is broadcast with VDUP.

// func dotF16NEON(h *uint16, x *float32, n int) float32
TEXT ·dotF16NEON(SB), NOSPLIT, $0-28
	MOVD h+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	ZERO4

h16:
	CMP    $16, R2
	BLT    h4
	VLD1.P 32(R0), [V4.H8, V5.H8]
	VLD1.P 64(R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	FCVTL4S(6, 4)
	FCVTL24S(7, 4)
	FCVTL4S(20, 5)
	FCVTL24S(21, 5)
	VFMLA  V6.S4, V16.S4, V0.S4
	VFMLA  V7.S4, V17.S4, V1.S4
	VFMLA  V20.S4, V18.S4, V2.S4
	VFMLA  V21.S4, V19.S4, V3.S4
	SUB    $16, R2
	B      h16

h4:
	CBZ    R2, hdone
	VLD1.P 8(R0), [V4.H4]
	VLD1.P 16(R1), [V16.S4]
	FCVTL4S(6, 4)
	VFMLA  V6.S4, V16.S4, V0.S4
	SUB    $4, R2
	B      h4

hdone:
	SUM4
	FMOVS F0, ret+24(FP)
	RET

// func axpyF16NEON(dst *float32, a float32, h *uint16, n int)
// dst[i] += a·h[i].
TEXT ·axpyF16NEON(SB), NOSPLIT, $0-32
	MOVD  dst+0(FP), R0
	FMOVS a+8(FP), F8
	MOVD  h+16(FP), R1
	MOVD  n+24(FP), R2
	VDUP  V8.S[0], V8.S4

g4:
	CBZ    R2, gdone
	VLD1.P 8(R1), [V4.H4]
	VLD1   (R0), [V0.S4]
	FCVTL4S(4, 4)
	VFMLA  V8.S4, V4.S4, V0.S4
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R2
	B      g4

gdone:
	RET

// func axpyInt8NEON(dst *float32, a float32, q *int8, n int)
// dst[i] += a·q[i]; n a multiple of 8.
TEXT ·axpyInt8NEON(SB), NOSPLIT, $0-32
	MOVD  dst+0(FP), R0
	FMOVS a+8(FP), F8
	MOVD  q+16(FP), R1
	MOVD  n+24(FP), R2
	VDUP  V8.S[0], V8.S4

j8:
	CBZ    R2, jdone
	VLD1.P 8(R1), [V4.B8]
	VLD1   (R0), [V0.S4, V1.S4]
	SXTL8H(5, 4)
	SXTL4S(6, 5)
	SXTL24S(7, 5)
	SCVTF4S(6, 6)
	SCVTF4S(7, 7)
	VFMLA  V8.S4, V6.S4, V0.S4
	VFMLA  V8.S4, V7.S4, V1.S4
	VST1.P [V0.S4, V1.S4], 32(R0)
	SUB    $8, R2
	B      j8

jdone:
	RET

// func axpyNEON(dst *float32, a float32, x *float32, n int)
// dst[i] += a·x[i].
TEXT ·axpyNEON(SB), NOSPLIT, $0-32
	MOVD  dst+0(FP), R0
	FMOVS a+8(FP), F8
	MOVD  x+16(FP), R1
	MOVD  n+24(FP), R2
	VDUP  V8.S[0], V8.S4

p4:
	CBZ    R2, pdone
	VLD1.P 16(R1), [V4.S4]
	VLD1   (R0), [V0.S4]
	VFMLA  V8.S4, V4.S4, V0.S4
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R2
	B      p4

pdone:
	RET

// func scaleAxpyNEON(row *float32, s float32, acc *float32, a float32, n int)
// row[i] *= s, then acc[i] += a·row[i].
TEXT ·scaleAxpyNEON(SB), NOSPLIT, $0-40
	MOVD  row+0(FP), R0
	FMOVS s+8(FP), F8
	MOVD  acc+16(FP), R1
	FMOVS a+24(FP), F9
	MOVD  n+32(FP), R2
	VDUP  V8.S[0], V8.S4
	VDUP  V9.S[0], V9.S4

s4:
	CBZ    R2, sdone
	VLD1   (R0), [V0.S4]
	VLD1   (R1), [V1.S4]
	FMUL4S(0, 0, 8)
	VFMLA  V9.S4, V0.S4, V1.S4
	VST1.P [V0.S4], 16(R0)
	VST1.P [V1.S4], 16(R1)
	SUB    $4, R2
	B      s4

sdone:
	RET

// func axpyThenAxpyNEON(row *float32, a float32, x *float32, out *float32, b float32, n int)
// row[i] += a·x[i], then out[i] += b·row[i].
TEXT ·axpyThenAxpyNEON(SB), NOSPLIT, $0-48
	MOVD  row+0(FP), R0
	FMOVS a+8(FP), F8
	MOVD  x+16(FP), R1
	MOVD  out+24(FP), R3
	FMOVS b+32(FP), F9
	MOVD  n+40(FP), R2
	VDUP  V8.S[0], V8.S4
	VDUP  V9.S[0], V9.S4

t4:
	CBZ    R2, tdone
	VLD1   (R0), [V0.S4]
	VLD1.P 16(R1), [V4.S4]
	VLD1   (R3), [V1.S4]
	VFMLA  V8.S4, V4.S4, V0.S4
	VFMLA  V9.S4, V0.S4, V1.S4
	VST1.P [V0.S4], 16(R0)
	VST1.P [V1.S4], 16(R3)
	SUB    $4, R2
	B      t4

tdone:
	RET
