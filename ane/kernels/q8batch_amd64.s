//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"
#include "q8_amd64.h"

// ROWS4: the arguments of the 4-row kernels: the weights into SI, the
// blocks into CX, the four activation rows' codes into DI, R9, R10, R11
// and their scales into BX, DX, R12, R13 (clobbers AX, R8).
#define ROWS4 \
	MOVQ w+0(FP), SI; \
	MOVQ q+8(FP), DI; \
	MOVQ qstride+16(FP), AX; \
	MOVQ scale+24(FP), BX; \
	MOVQ sstride+32(FP), R8; \
	MOVQ blocks+40(FP), CX; \
	LEAQ (DI)(AX*1), R9; \
	LEAQ (R9)(AX*1), R10; \
	LEAQ (R10)(AX*1), R11; \
	LEAQ (BX)(R8*1), DX; \
	LEAQ (DX)(R8*1), R12; \
	LEAQ (R12)(R8*1), R13

// NEXT2: the 4-row kernels' pointers past a pair of blocks.
#define NEXT2 \
	ADDQ $64, SI; \
	ADDQ $64, DI; \
	ADDQ $64, R9; \
	ADDQ $64, R10; \
	ADDQ $64, R11; \
	ADDQ $8, BX; \
	ADDQ $8, DX; \
	ADDQ $8, R12; \
	ADDQ $8, R13; \
	SUBQ $2, CX

// Q8BLOCK4 loads the weight block at off(SI) once and adds its product
// with the four activation rows into a0…a3.
#define Q8BLOCK4(off, soff, a0, a1, a2, a3) \
	VMOVDQU off(SI), Y8; \
	VPSIGNB Y8, Y8, Y9; \
	Q8ROW(off, DI, soff, BX, Y8, Y9, Y12, Y10, Y11, a0); \
	Q8ROW(off, R9, soff, DX, Y8, Y9, Y12, Y13, Y14, a1); \
	Q8ROW(off, R10, soff, R12, Y8, Y9, Y12, Y10, Y11, a2); \
	Q8ROW(off, R11, soff, R13, Y8, Y9, Y12, Y13, Y14, a3)

// func int8Q8Dot4AVX2(w *int8, q *int8, qstride int, scale *float32, sstride int, blocks int) (s0, s1, s2, s3 float32)
//
// int8Q8DotAVX2 for one weight row against four quantized activation rows
// (codes q + t·qstride bytes, scales scale + t·sstride bytes): each weight
// block is loaded and made unsigned once for the four rows. Every row keeps
// the single-row kernel's Q8ROW, two accumulators (even blocks, odd
// blocks) and horizontal sum, so each s_t is bit-identical to
// int8Q8DotAVX2 of that row.
TEXT ·int8Q8Dot4AVX2(SB), NOSPLIT, $0-64
	ROWS4
	ZERO8
	VPCMPEQW Y12, Y12, Y12
	VPSRLW   $15, Y12, Y12

b2:
	PREFETCHT0 1024(SI)
	CMPQ CX, $2
	JLT  b1
	Q8BLOCK4(0, 0, Y0, Y1, Y2, Y3)
	Q8BLOCK4(32, 4, Y4, Y5, Y6, Y7)
	NEXT2
	JMP  b2

b1:
	CMPQ CX, $1
	JLT  done
	Q8BLOCK4(0, 0, Y0, Y1, Y2, Y3)

done:
	HSUM4(s0+48(FP), s1+52(FP), s2+56(FP), s3+60(FP))
	VZEROUPPER
	RET

// func int8Q8Dot4VNNI(w *int8, q *int8, qstride int, scale *float32, sstride int, blocks int) (s0, s1, s2, s3 float32)
//
// int8Q8Dot4AVX2 with VPDPBUSD, a pair of blocks a step (q8_amd64.h): each
// weight pair is loaded, made unsigned and its signs taken once for the
// four rows, and every row's accumulator halves are int8Q8DotAVX2's two
// accumulators, so each s_t is bit-identical to that kernel's result for
// that row.
TEXT ·int8Q8Dot4VNNI(SB), NOSPLIT, $0-64
	ROWS4
	Q8VSETUP
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19

v2:
	CMPQ       CX, $2
	JLT        v1
	PREFETCHT0 1024(SI)
	Q8VWEIGHTS(0)
	Q8VROW(0, DI, BX, Z16)
	Q8VROW(0, R9, DX, Z17)
	Q8VROW(0, R10, R12, Z18)
	Q8VROW(0, R11, R13, Z19)
	NEXT2
	JMP        v2

v1:
	CMPQ CX, $1
	JLT  vdone
	Q8VWEIGHTS1
	Q8VROW1(DI, BX, Z16)
	Q8VROW1(R9, DX, Z17)
	Q8VROW1(R10, R12, Z18)
	Q8VROW1(R11, R13, Z19)

vdone:
	VMOVAPS Z16, Z0
	HSUM512
	VMOVSS  X0, s0+48(FP)
	VMOVAPS Z17, Z0
	HSUM512
	VMOVSS  X0, s1+52(FP)
	VMOVAPS Z18, Z0
	HSUM512
	VMOVSS  X0, s2+56(FP)
	VMOVAPS Z19, Z0
	HSUM512
	VMOVSS  X0, s3+60(FP)
	VZEROUPPER
	RET
