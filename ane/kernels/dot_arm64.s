//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// NEON kernels of the matrix products (dot_arm64.go), the counterparts of
// dot_amd64.s: 4-lane FMLA into independent accumulators, reduced in a
// fixed order (FADD4S pairs, then HSUM4), so results are deterministic.
// Go's arm64 operand order is sources first, destination last
// (VFMLA Vm, Vn, Vd: Vd += Vn·Vm); the WORD macros of neon_arm64.h are in
// ARM order.

// func dotNEON(a, b *float32, n int) float32
// n a multiple of 4: 16 elements a step into V0–V3, then 4 into V0.
TEXT ·dotNEON(SB), NOSPLIT, $0-28
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD n+16(FP), R2
	ZERO4

dot16:
	CMP    $16, R2
	BLT    dot4
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	VFMLA  V4.S4, V16.S4, V0.S4
	VFMLA  V5.S4, V17.S4, V1.S4
	VFMLA  V6.S4, V18.S4, V2.S4
	VFMLA  V7.S4, V19.S4, V3.S4
	SUB    $16, R2
	B      dot16

dot4:
	CBZ    R2, dotdone
	VLD1.P 16(R0), [V4.S4]
	VLD1.P 16(R1), [V16.S4]
	VFMLA  V4.S4, V16.S4, V0.S4
	SUB    $4, R2
	B      dot4

dotdone:
	SUM4
	FMOVS F0, ret+24(FP)
	RET

// func bf16DotNEON(w *uint16, x *float32, n int) float32
// n a multiple of 8. A bf16 value is the high half of a float32: ZIP1/ZIP2
// with a zero register (V31) interleave 0 below each half.
TEXT ·bf16DotNEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	ZERO4
	VEOR V31.B16, V31.B16, V31.B16

bf16:
	CMP    $16, R2
	BLT    bf8
	VLD1.P 32(R0), [V4.H8, V5.H8]
	VLD1.P 64(R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	VZIP1  V4.H8, V31.H8, V6.H8
	VZIP2  V4.H8, V31.H8, V7.H8
	VZIP1  V5.H8, V31.H8, V20.H8
	VZIP2  V5.H8, V31.H8, V21.H8
	VFMLA  V6.S4, V16.S4, V0.S4
	VFMLA  V7.S4, V17.S4, V1.S4
	VFMLA  V20.S4, V18.S4, V2.S4
	VFMLA  V21.S4, V19.S4, V3.S4
	SUB    $16, R2
	B      bf16

bf8:
	CBZ    R2, bfdone
	VLD1.P 16(R0), [V4.H8]
	VLD1.P 32(R1), [V16.S4, V17.S4]
	VZIP1  V4.H8, V31.H8, V6.H8
	VZIP2  V4.H8, V31.H8, V7.H8
	VFMLA  V6.S4, V16.S4, V0.S4
	VFMLA  V7.S4, V17.S4, V1.S4

bfdone:
	SUM4
	FMOVS F0, ret+24(FP)
	RET

// func int8DotNEON(q *int8, x *float32, n int) float32
// n a multiple of 8: sign-extend bytes to int16 (SXTL8H) and to int32
// (SXTL4S), convert (SCVTF4S, exact), FMLA.
TEXT ·int8DotNEON(SB), NOSPLIT, $0-28
	MOVD q+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	ZERO4

i16:
	CMP    $16, R2
	BLT    i8
	VLD1.P 16(R0), [V4.B16]
	VLD1.P 64(R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	SXTL8H(5, 4)
	SXTL28H(6, 4)
	SXTL4S(20, 5)
	SXTL24S(21, 5)
	SXTL4S(22, 6)
	SXTL24S(23, 6)
	SCVTF4S(20, 20)
	SCVTF4S(21, 21)
	SCVTF4S(22, 22)
	SCVTF4S(23, 23)
	VFMLA  V20.S4, V16.S4, V0.S4
	VFMLA  V21.S4, V17.S4, V1.S4
	VFMLA  V22.S4, V18.S4, V2.S4
	VFMLA  V23.S4, V19.S4, V3.S4
	SUB    $16, R2
	B      i16

i8:
	CBZ    R2, idone
	VLD1.P 8(R0), [V4.B8]
	VLD1.P 32(R1), [V16.S4, V17.S4]
	SXTL8H(5, 4)
	SXTL4S(20, 5)
	SXTL24S(21, 5)
	SCVTF4S(20, 20)
	SCVTF4S(21, 21)
	VFMLA  V20.S4, V16.S4, V0.S4
	VFMLA  V21.S4, V17.S4, V1.S4

idone:
	SUM4
	FMOVS F0, ret+24(FP)
	RET

// func dot4NEON(w, x0, x1, x2, x3 *float32, n int) (s0, s1, s2, s3 float32)
// w·x_t for four activation rows, loading each weight once; n a multiple
// of 4. Two accumulators per row (V0–V3, V4–V7), 8 elements a step.
TEXT ·dot4NEON(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD x0+8(FP), R1
	MOVD x1+16(FP), R2
	MOVD x2+24(FP), R3
	MOVD x3+32(FP), R4
	MOVD n+40(FP), R5
	ZERO4
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16

d8:
	CMP    $8, R5
	BLT    d4
	VLD1.P 32(R0), [V16.S4, V17.S4]
	VLD1.P 32(R1), [V18.S4, V19.S4]
	VLD1.P 32(R2), [V20.S4, V21.S4]
	VLD1.P 32(R3), [V22.S4, V23.S4]
	VLD1.P 32(R4), [V24.S4, V25.S4]
	VFMLA  V16.S4, V18.S4, V0.S4
	VFMLA  V17.S4, V19.S4, V4.S4
	VFMLA  V16.S4, V20.S4, V1.S4
	VFMLA  V17.S4, V21.S4, V5.S4
	VFMLA  V16.S4, V22.S4, V2.S4
	VFMLA  V17.S4, V23.S4, V6.S4
	VFMLA  V16.S4, V24.S4, V3.S4
	VFMLA  V17.S4, V25.S4, V7.S4
	SUB    $8, R5
	B      d8

d4:
	CBZ    R5, d4done
	VLD1.P 16(R0), [V16.S4]
	VLD1.P 16(R1), [V18.S4]
	VLD1.P 16(R2), [V20.S4]
	VLD1.P 16(R3), [V22.S4]
	VLD1.P 16(R4), [V24.S4]
	VFMLA  V16.S4, V18.S4, V0.S4
	VFMLA  V16.S4, V20.S4, V1.S4
	VFMLA  V16.S4, V22.S4, V2.S4
	VFMLA  V16.S4, V24.S4, V3.S4

d4done:
	FADD4S(0, 0, 4)
	FADD4S(1, 1, 5)
	FADD4S(2, 2, 6)
	FADD4S(3, 3, 7)
	HSUM4(0, 16)
	HSUM4(1, 17)
	HSUM4(2, 18)
	HSUM4(3, 19)
	FMOVS F0, s0+48(FP)
	FMOVS F1, s1+52(FP)
	FMOVS F2, s2+56(FP)
	FMOVS F3, s3+60(FP)
	RET

// The nibble kernels read packed 4-bit indices (LUT.nib in lut.go): per
// 16-byte block, the low nibbles are indices 0–15 and the high ones 16–31.
// The 16-entry float codebook is held as four byte planes (VLD4: plane b
// holds byte b of every entry), so one TBL per plane looks up byte b of 16
// entries from the 16 nibbles, and two rounds of ZIP (bytes, then halves)
// put the four bytes of each entry back together: 12 instructions per 16
// floats, all single-register TBLs. (The alternative, each index ×4 plus
// byte offsets into a 4-register TBL, is as many instructions with the
// slower 4-register TBL.)

// LOOK4(idx, p0, p1, p2, p3, f0, f1, f2, f3): the 16 entries selected by
// the indices in Vidx (each < 16) from the planes Vp0–Vp3, as floats in
// Vf0–Vf3 (indices 0–3, 4–7, 8–11, 12–15); Vf0–Vf3 first hold the planes'
// byte lookups. Clobbers V16–V19.
#define LOOK4(idx, p0, p1, p2, p3, f0, f1, f2, f3) \
	VTBL  idx.B16, [p0.B16], f0.B16; \
	VTBL  idx.B16, [p1.B16], f1.B16; \
	VTBL  idx.B16, [p2.B16], f2.B16; \
	VTBL  idx.B16, [p3.B16], f3.B16; \
	VZIP1 f1.B16, f0.B16, V16.B16; \
	VZIP2 f1.B16, f0.B16, V17.B16; \
	VZIP1 f3.B16, f2.B16, V18.B16; \
	VZIP2 f3.B16, f2.B16, V19.B16; \
	VZIP1 V18.H8, V16.H8, f0.H8; \
	VZIP2 V18.H8, V16.H8, f1.H8; \
	VZIP1 V19.H8, V17.H8, f2.H8; \
	VZIP2 V19.H8, V17.H8, f3.H8

// X4FMA(row, accA, accB): the next 16 activations of one row (post-
// incremented pointer Rrow) against row A's entries (V8–V11) into accA and
// row B's (V12–V15) into accB.
#define X4FMA(row, accA, accB) \
	VLD1.P 64(row), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	VFMLA  V8.S4, V16.S4, accA.S4; \
	VFMLA  V12.S4, V16.S4, accB.S4; \
	VFMLA  V9.S4, V17.S4, accA.S4; \
	VFMLA  V13.S4, V17.S4, accB.S4; \
	VFMLA  V10.S4, V18.S4, accA.S4; \
	VFMLA  V14.S4, V18.S4, accB.S4; \
	VFMLA  V11.S4, V19.S4, accA.S4; \
	VFMLA  V15.S4, V19.S4, accB.S4

// NIBIDX loads the next 16-byte block at (R1) and splits it into the low
// nibbles (V5) and the high ones (V6); V31 holds 0x0f bytes.
#define NIBIDX \
	VLD1.P 16(R1), [V4.B16]; \
	VAND   V31.B16, V4.B16, V5.B16; \
	VUSHR  $4, V4.B16, V6.B16

// func lutNibDotNEON(tab *[16]float32, p *uint8, x *float32, blocks int) float32
TEXT ·lutNibDotNEON(SB), NOSPLIT, $0-36
	MOVD  tab+0(FP), R0
	MOVD  p+8(FP), R1
	MOVD  x+16(FP), R2
	MOVD  blocks+24(FP), R3
	VLD4  (R0), [V24.B16, V25.B16, V26.B16, V27.B16]
	VMOVI $15, V31.B16
	ZERO4
	CBZ   R3, ldone

l1:
	NIBIDX
	LOOK4(V5, V24, V25, V26, V27, V8, V9, V10, V11)
	VLD1.P 64(R2), [V16.S4, V17.S4, V18.S4, V19.S4]
	VFMLA  V8.S4, V16.S4, V0.S4
	VFMLA  V9.S4, V17.S4, V1.S4
	VFMLA  V10.S4, V18.S4, V2.S4
	VFMLA  V11.S4, V19.S4, V3.S4
	LOOK4(V6, V24, V25, V26, V27, V8, V9, V10, V11)
	VLD1.P 64(R2), [V16.S4, V17.S4, V18.S4, V19.S4]
	VFMLA  V8.S4, V16.S4, V0.S4
	VFMLA  V9.S4, V17.S4, V1.S4
	VFMLA  V10.S4, V18.S4, V2.S4
	VFMLA  V11.S4, V19.S4, V3.S4
	SUBS   $1, R3
	BNE    l1

ldone:
	SUM4
	FMOVS F0, ret+32(FP)
	RET

// func lutNibDot2NEON(tab *[2][16]float32, p *uint8, x *float32, blocks int) (s0, s1 float32)
// The same lookup for two tables sharing each index and each x load: table
// 0's planes in V24–V27 (accumulators V0, V1 for the low and high nibbles),
// table 1's in V20–V23 (V2, V3).
TEXT ·lutNibDot2NEON(SB), NOSPLIT, $0-40
	MOVD   tab+0(FP), R0
	MOVD   p+8(FP), R1
	MOVD   x+16(FP), R2
	MOVD   blocks+24(FP), R3
	VLD4.P 64(R0), [V24.B16, V25.B16, V26.B16, V27.B16]
	VLD4   (R0), [V20.B16, V21.B16, V22.B16, V23.B16]
	VMOVI  $15, V31.B16
	ZERO4
	CBZ    R3, mdone

m1:
	NIBIDX
	LOOK4(V5, V24, V25, V26, V27, V8, V9, V10, V11)
	LOOK4(V5, V20, V21, V22, V23, V12, V13, V14, V15)
	X4FMA(R2, V0, V2)
	LOOK4(V6, V24, V25, V26, V27, V8, V9, V10, V11)
	LOOK4(V6, V20, V21, V22, V23, V12, V13, V14, V15)
	X4FMA(R2, V1, V3)
	SUBS $1, R3
	BNE  m1

mdone:
	FADD4S(0, 0, 1)
	FADD4S(2, 2, 3)
	HSUM4(0, 1)
	HSUM4(2, 3)
	FMOVS F0, s0+32(FP)
	FMOVS F2, s1+36(FP)
	RET

// HALFLO, HALFHI: the low (VAND with V31) or high (VUSHR) nibbles of the
// next block of both packed rows, looked up (A: V8–V11, B: V12–V15).
#define HALFLO \
	VLD1   (R2), [V28.B16]; \
	VAND   V31.B16, V28.B16, V28.B16; \
	LOOK4(V28, V24, V25, V26, V27, V8, V9, V10, V11); \
	VLD1   (R3), [V28.B16]; \
	VAND   V31.B16, V28.B16, V28.B16; \
	LOOK4(V28, V20, V21, V22, V23, V12, V13, V14, V15)

#define HALFHI \
	VLD1.P 16(R2), [V28.B16]; \
	VUSHR  $4, V28.B16, V28.B16; \
	LOOK4(V28, V24, V25, V26, V27, V8, V9, V10, V11); \
	VLD1.P 16(R3), [V28.B16]; \
	VUSHR  $4, V28.B16, V28.B16; \
	LOOK4(V28, V20, V21, V22, V23, V12, V13, V14, V15)

#define XROWS \
	X4FMA(R8, V0, V4); \
	X4FMA(R9, V1, V5); \
	X4FMA(R10, V2, V6); \
	X4FMA(R11, V3, V7)

// func lutNibDot2x4NEON(tabA, tabB *[16]float32, pA, pB *uint8, x *float32, xstride, blocks int, out *[8]float32)
// Two packed rows (A, B) against four activation rows xstride bytes
// apart: each half-block of indices is looked up once per row, and each
// activation vector, loaded once, feeds both rows' FMLAs. Accumulators:
// V0–V3 (A, rows 0–3), V4–V7 (B).
TEXT ·lutNibDot2x4NEON(SB), NOSPLIT, $0-64
	MOVD  tabA+0(FP), R0
	MOVD  tabB+8(FP), R1
	MOVD  pA+16(FP), R2
	MOVD  pB+24(FP), R3
	MOVD  x+32(FP), R8
	MOVD  xstride+40(FP), R5
	MOVD  blocks+48(FP), R6
	MOVD  out+56(FP), R7
	ADD   R5, R8, R9
	ADD   R5, R9, R10
	ADD   R5, R10, R11
	VLD4  (R0), [V24.B16, V25.B16, V26.B16, V27.B16]
	VLD4  (R1), [V20.B16, V21.B16, V22.B16, V23.B16]
	VMOVI $15, V31.B16
	ZERO4
	VEOR  V4.B16, V4.B16, V4.B16
	VEOR  V5.B16, V5.B16, V5.B16
	VEOR  V6.B16, V6.B16, V6.B16
	VEOR  V7.B16, V7.B16, V7.B16
	CBZ   R6, cdone

c1:
	HALFLO
	XROWS
	HALFHI
	XROWS
	SUBS $1, R6
	BNE  c1

cdone:
	HSUM4(0, 16)
	HSUM4(1, 17)
	HSUM4(2, 18)
	HSUM4(3, 19)
	HSUM4(4, 16)
	HSUM4(5, 17)
	HSUM4(6, 18)
	HSUM4(7, 19)
	FMOVS F0, 0(R7)
	FMOVS F1, 4(R7)
	FMOVS F2, 8(R7)
	FMOVS F3, 12(R7)
	FMOVS F4, 16(R7)
	FMOVS F5, 20(R7)
	FMOVS F6, 24(R7)
	FMOVS F7, 28(R7)
	RET
