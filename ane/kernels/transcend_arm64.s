//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// Vectorised exp, sigmoid and SiLU over n float32, n a multiple of 4: the
// same algorithm as expGo in transcend.go and transcend_amd64.s (Cephes
// expf), 4 lanes at a time, the same fused operations in the same order.
// The constants stay in V16–V31 for the whole call (LOADC).

DATA expc<>+0(SB)/4, $0xc2d00000  // lo = -104
DATA expc<>+4(SB)/4, $0x42b1999a  // hi = 88.8
DATA expc<>+8(SB)/4, $0x3fb8aa3b  // log2e
DATA expc<>+12(SB)/4, $0x4b400000 // magic = 1.5·2^23
DATA expc<>+16(SB)/4, $0x3f318000 // ln2hi = 0.693359375
DATA expc<>+20(SB)/4, $0xb95e8083 // ln2lo = -2.12194440e-4
DATA expc<>+24(SB)/4, $0x39506967 // c0 = 1.9875691500e-4
DATA expc<>+28(SB)/4, $0x3ab743ce // c1 = 1.3981999507e-3
DATA expc<>+32(SB)/4, $0x3c088908 // c2 = 8.3334519073e-3
DATA expc<>+36(SB)/4, $0x3d2aa9c1 // c3 = 4.1665795894e-2
DATA expc<>+40(SB)/4, $0x3e2aaaaa // c4 = 1.6666665459e-1
DATA expc<>+44(SB)/4, $0x3f000000 // c5 = 5.0000001201e-1
DATA expc<>+48(SB)/4, $0x3f800000 // one
DATA expc<>+52(SB)/4, $0x0000007f // bias = 127 (int32)
DATA expc<>+56(SB)/4, $0x80000000 // the sign bit
DATA expc<>+60(SB)/4, $0x7f7fffff // MaxFloat32
GLOBL expc<>(SB), RODATA|NOPTR, $64

// LOADC broadcasts the 16 constants into V16 (lo) … V31 (MaxFloat32).
#define LOADC \
	MOVD    $expc<>(SB), R3; \
	VLD1R.P 4(R3), [V16.S4]; \
	VLD1R.P 4(R3), [V17.S4]; \
	VLD1R.P 4(R3), [V18.S4]; \
	VLD1R.P 4(R3), [V19.S4]; \
	VLD1R.P 4(R3), [V20.S4]; \
	VLD1R.P 4(R3), [V21.S4]; \
	VLD1R.P 4(R3), [V22.S4]; \
	VLD1R.P 4(R3), [V23.S4]; \
	VLD1R.P 4(R3), [V24.S4]; \
	VLD1R.P 4(R3), [V25.S4]; \
	VLD1R.P 4(R3), [V26.S4]; \
	VLD1R.P 4(R3), [V27.S4]; \
	VLD1R.P 4(R3), [V28.S4]; \
	VLD1R.P 4(R3), [V29.S4]; \
	VLD1R.P 4(R3), [V30.S4]; \
	VLD1R.P 4(R3), [V31.S4]

// EXP replaces the 4 lanes of V0 by exp(V0) (clobbers V1–V3, V6). FMAX and
// FMIN return NaN for a NaN lane, so it stays NaN; the two-step scaling by
// 2^n1 · 2^n2 (n1 = n>>1) keeps both factors normal, so results in the
// subnormal range round once, in the last multiply. The polynomial is
// Horner's rule with each step one fused FMLA (c_k + p·r), alternating V3
// and V1.
#define EXP \
	FMAX4S(0, 0, 16); \
	FMIN4S(0, 0, 17); \
	VORR     V19.B16, V19.B16, V1.B16; \
	VFMLA    V18.S4, V0.S4, V1.S4; \
	FSUB4S(1, 1, 19); \
	FCVTZS4S(2, 1); \
	VFMLS    V20.S4, V1.S4, V0.S4; \
	VFMLS    V21.S4, V1.S4, V0.S4; \
	VORR     V23.B16, V23.B16, V3.B16; \
	VFMLA    V22.S4, V0.S4, V3.S4; \
	VORR     V24.B16, V24.B16, V1.B16; \
	VFMLA    V3.S4, V0.S4, V1.S4; \
	VORR     V25.B16, V25.B16, V3.B16; \
	VFMLA    V1.S4, V0.S4, V3.S4; \
	VORR     V26.B16, V26.B16, V1.B16; \
	VFMLA    V3.S4, V0.S4, V1.S4; \
	VORR     V27.B16, V27.B16, V3.B16; \
	VFMLA    V1.S4, V0.S4, V3.S4; \
	FMUL4S(1, 0, 0); \
	VORR     V0.B16, V0.B16, V6.B16; \
	VFMLA    V3.S4, V1.S4, V6.S4; \
	FADD4S(3, 6, 28); \
	SSHR4S(1, 2, 1); \
	VSUB     V1.S4, V2.S4, V2.S4; \
	VADD     V29.S4, V1.S4, V1.S4; \
	VADD     V29.S4, V2.S4, V2.S4; \
	VSHL     $23, V1.S4, V1.S4; \
	VSHL     $23, V2.S4, V2.S4; \
	FMUL4S(3, 3, 1); \
	FMUL4S(0, 3, 2)

// SIGMOID computes sigmoid(V4) as V0 + V1 (V0 the rounded quotient, V1
// the part it rounded off; V4 kept; clobbers V2, V3, V5–V7), as
// sigmoidParts in transcend.go: e = exp(−|x|), d = 1+e, t = (1−d)+e,
// num = x<0 ? e : 1, q = num/d, lo = (num − q·d − q·t) · (x<0 ? 1−q : q).
// V7 is all ones in the lanes whose sign bit is set (SSHR by 31).
#define SIGMOID \
	VORR  V30.B16, V4.B16, V0.B16; \
	EXP; \
	FADD4S(5, 0, 28); \
	FSUB4S(2, 28, 5); \
	FADD4S(2, 2, 0); \
	SSHR4S(7, 4, 31); \
	VORR  V28.B16, V28.B16, V1.B16; \
	VBIT  V7.B16, V0.B16, V1.B16; \
	FDIV4S(0, 1, 5); \
	VFMLS V0.S4, V5.S4, V1.S4; \
	VFMLS V0.S4, V2.S4, V1.S4; \
	FSUB4S(3, 28, 0); \
	VBIF  V7.B16, V0.B16, V3.B16; \
	FMUL4S(1, 1, 3)

// func expNEON(dst, x *float32, n int)
TEXT ·expNEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	LOADC

exp4:
	CBZ    R2, expdone
	VLD1.P 16(R1), [V0.S4]
	EXP
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R2
	B      exp4

expdone:
	RET

// func sigmoidNEON(dst, x *float32, n int)
TEXT ·sigmoidNEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	LOADC

sig4:
	CBZ    R2, sigdone
	VLD1.P 16(R1), [V4.S4]
	SIGMOID
	FADD4S(0, 0, 1)
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R2
	B      sig4

sigdone:
	RET

// func siluNEON(dst, x *float32, n int)
TEXT ·siluNEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	LOADC

silu4:
	CBZ    R2, siludone
	VLD1.P 16(R1), [V4.S4]
	SIGMOID
	FMIN4S(3, 4, 31) // x·lo is 0, not NaN, at x = +Inf
	FMUL4S(1, 1, 3)
	VFMLA  V4.S4, V0.S4, V1.S4
	VST1.P [V1.S4], 16(R0)
	SUB    $4, R2
	B      silu4

siludone:
	RET
