//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"
#include "q8_amd64.h"

// The AVX-512 VNNI form of the 4-row kernel (int8Q8Dot4VNNI) takes a pair of
// blocks a ZMM: VPDPBUSD adds |w| (unsigned; VPABSB, |−128| reads as
// 128) times the codes, negated where w < 0 (VPMOVB2M's mask on a VPSUBB
// from zero; the codes are within ±127), four bytes a lane: the int32
// lanes Q8ROW's VPMADDUBSW and VPMADDWD make, block b in lanes 0–7 and
// b+1 in 8–15. Converted, they meet the pair's scales (b's broadcast into
// the low half, b+1's into the high) in one FMA into an accumulator whose
// halves are Q8ROW's even- and odd-block accumulators, so HSUM512 ends
// with the AVX2 kernels' bits (the one-row kernel stays int8Q8DotAVX2). A lone last block adds into the low half
// only (mask K2). Z31 is zero throughout; K2 holds the low 8 lanes.

// Q8VSETUP: Z31 zero, K2 the low 8 lanes (clobbers AX).
#define Q8VSETUP \
	VPXORD Z31, Z31, Z31; \
	MOVL   $0xff, AX; \
	KMOVW  AX, K2

// Q8VWEIGHTS(off): the pair of weight blocks at off(SI): |w| into Z9,
// their signs into K1.
#define Q8VWEIGHTS(off) \
	VMOVDQU8 off(SI), Z8; \
	VPABSB   Z8, Z9; \
	VPMOVB2M Z8, K1

// Q8VROW(off, qp, sp, acc): one activation row's pair of blocks at
// off(qp), with scales at (sp) and 4(sp), into acc (Z10–Z12 clobbered).
#define Q8VROW(off, qp, sp, acc) \
	VMOVDQU8      off(qp), Z10; \
	VPSUBB        Z10, Z31, K1, Z10; \
	VPXORD        Z11, Z11, Z11; \
	VPDPBUSD      Z10, Z9, Z11; \
	VCVTDQ2PS     Z11, Z11; \
	VBROADCASTSS  (sp), Z12; \
	VBROADCASTSS  4(sp), Y10; \
	VINSERTF64X4  $1, Y10, Z12, Z12; \
	VFMADD231PS   Z12, Z11, acc

// Q8VWEIGHTS1 and Q8VROW1(qp, sp, acc): the same for a lone block at (SI)
// and (qp), its scale at (sp), into acc's low half.
#define Q8VWEIGHTS1 \
	VMOVDQU8 (SI), Y8; \
	VPABSB   Y8, Y9; \
	VPMOVB2M Y8, K1

#define Q8VROW1(qp, sp, acc) \
	VMOVDQU8     (qp), Y10; \
	VPSUBB       Y10, Y31, K1, Y10; \
	VPXORD       Y11, Y11, Y11; \
	VPDPBUSD     Y10, Y9, Y11; \
	VCVTDQ2PS    Y11, Y11; \
	VBROADCASTSS (sp), Y12; \
	VFMADD231PS  Z12, Z11, K2, acc

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
// int8Q8Dot4AVX2 with VPDPBUSD, a pair of blocks a step (above): each
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
	HSUM512TO(Z16, s0+48(FP))
	HSUM512TO(Z17, s1+52(FP))
	HSUM512TO(Z18, s2+56(FP))
	HSUM512TO(Z19, s3+60(FP))
	VZEROUPPER
	RET
