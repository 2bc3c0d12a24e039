//go:build !purego

#include "textflag.h"

// AVX-512 forms of the delta rule's row loops (vector.go's ScaleAxpyRows
// and AxpyThenAxpyRows) for rows of 128 floats, eight ZMM registers: the
// vector every row meets (acc, or x and out) stays in registers over all
// the rows, so a row costs one load and one store where the per-row calls
// load and store the vector too. Each element gets the per-row kernels'
// operations in the same order, so the results are theirs, bit for bit.

// LOAD128(base, r0…r7) loads the 128 floats at base into eight ZMM
// registers; STORE128 stores them back.
#define LOAD128(base, r0, r1, r2, r3, r4, r5, r6, r7) \
	VMOVUPS (base), r0; \
	VMOVUPS 64(base), r1; \
	VMOVUPS 128(base), r2; \
	VMOVUPS 192(base), r3; \
	VMOVUPS 256(base), r4; \
	VMOVUPS 320(base), r5; \
	VMOVUPS 384(base), r6; \
	VMOVUPS 448(base), r7

#define STORE128(base, r0, r1, r2, r3, r4, r5, r6, r7) \
	VMOVUPS r0, (base); \
	VMOVUPS r1, 64(base); \
	VMOVUPS r2, 128(base); \
	VMOVUPS r3, 192(base); \
	VMOVUPS r4, 256(base); \
	VMOVUPS r5, 320(base); \
	VMOVUPS r6, 384(base); \
	VMOVUPS r7, 448(base)

// func scaleAxpyRows128AVX512(S *float32, s float32, acc *float32, a *float32, rows int)
// For each row i of S (128 floats at S + 512i): row ← s·row, then
// acc += a[i]·row.
TEXT ·scaleAxpyRows128AVX512(SB), NOSPLIT, $0-40
	MOVQ         S+0(FP), DI
	VBROADCASTSS s+8(FP), Z16
	MOVQ         acc+16(FP), SI
	MOVQ         a+24(FP), DX
	MOVQ         rows+32(FP), CX
	LOAD128(SI, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	TESTQ        CX, CX
	JEQ          sdone

#define SROW(off, row, acc) \
	VMULPS      off(DI), Z16, row; \
	VMOVUPS     row, off(DI); \
	VFMADD231PS row, Z17, acc

srow:
	VBROADCASTSS (DX), Z17
	SROW(0, Z8, Z0)
	SROW(64, Z9, Z1)
	SROW(128, Z10, Z2)
	SROW(192, Z11, Z3)
	SROW(256, Z12, Z4)
	SROW(320, Z13, Z5)
	SROW(384, Z14, Z6)
	SROW(448, Z15, Z7)
	ADDQ         $512, DI
	ADDQ         $4, DX
	DECQ         CX
	JNE          srow

sdone:
	STORE128(SI, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	VZEROUPPER
	RET

// func axpyThenAxpyRows128AVX512(S *float32, a *float32, x *float32, out *float32, b *float32, rows int)
// For each row i of S: row += a[i]·x, then out += b[i]·row.
TEXT ·axpyThenAxpyRows128AVX512(SB), NOSPLIT, $0-48
	MOVQ    S+0(FP), DI
	MOVQ    a+8(FP), AX
	MOVQ    x+16(FP), SI
	MOVQ    out+24(FP), DX
	MOVQ    b+32(FP), BX
	MOVQ    rows+40(FP), CX
	LOAD128(SI, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	LOAD128(DX, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	TESTQ   CX, CX
	JEQ     tdone

#define TROW(off, row, x, out) \
	VMOVUPS     off(DI), row; \
	VFMADD231PS x, Z16, row; \
	VMOVUPS     row, off(DI); \
	VFMADD231PS row, Z17, out

trow:
	VBROADCASTSS (AX), Z16
	VBROADCASTSS (BX), Z17
	TROW(0, Z18, Z0, Z8)
	TROW(64, Z19, Z1, Z9)
	TROW(128, Z20, Z2, Z10)
	TROW(192, Z21, Z3, Z11)
	TROW(256, Z22, Z4, Z12)
	TROW(320, Z23, Z5, Z13)
	TROW(384, Z24, Z6, Z14)
	TROW(448, Z25, Z7, Z15)
	ADDQ         $512, DI
	ADDQ         $4, AX
	ADDQ         $4, BX
	DECQ         CX
	JNE          trow

tdone:
	STORE128(DX, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VZEROUPPER
	RET
