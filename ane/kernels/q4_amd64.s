//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// IDX: the 32 indices of the packed block at (SI) as bytes, lane 0 the low
// nibbles (indices 0–15), lane 1 the high ones (16–31), into Y1. Y15 holds
// 0x0F bytes; clobbers X2.
#define IDX \
	VMOVDQU     (SI), X1; \
	VPSRLW      $4, X1, X2; \
	VINSERTI128 $1, X2, Y1, Y1; \
	VPAND       Y15, Y1, Y1

// ROW(lo, hi, dst): the block's 32 codes (low bytes from table lo, high
// bytes from hi, VPSHUFB of the indices Y1) unpacked to int16, in the
// order 0–7, 16–23 (Y3) and 8–15, 24–31 (Y4) that Q16 stores the
// activations in; VPMADDWD multiplies them by the Q16 block at (DI) and
// adds pairs to int32 (|code| ≤ 2047, |q| ≤ 32767: exact), VPADDD adds the
// two halves, and dst gets the 8 lane sums as float. Clobbers Y3–Y6.
#define ROW(lo, hi, dst) \
	VPSHUFB    Y1, lo, Y5; \
	VPSHUFB    Y1, hi, Y6; \
	VPUNPCKLBW Y6, Y5, Y3; \
	VPUNPCKHBW Y6, Y5, Y4; \
	VPMADDWD   (DI), Y3, Y3; \
	VPMADDWD   32(DI), Y4, Y4; \
	VPADDD     Y4, Y3, Y3; \
	VCVTDQ2PS  Y3, dst

#define SETUP(off) \
	MOVQ         p+off(FP), SI; \
	MOVQ         q+off+8(FP), DI; \
	MOVQ         scale+off+16(FP), BX; \
	MOVQ         blocks+off+24(FP), CX; \
	MOVL         $0x0f0f0f0f, DX; \
	MOVL         DX, X15; \
	VPBROADCASTD X15, Y15; \
	VXORPS       Y0, Y0, Y0; \
	VXORPS       Y8, Y8, Y8

#define NEXT \
	ADDQ $16, SI; \
	ADDQ $64, DI; \
	ADDQ $4, BX

// func lutQ16DotAVX2(lo, hi *[16]uint8, p *uint8, q *int16, scale *float32, blocks int) float32
//
// Per 32-weight block: two VPSHUFB look the nibbles up, the exact int32
// dot product with the Q16 codes, one FMA by the block's scale; two
// accumulators alternate blocks.
TEXT ·lutQ16DotAVX2(SB), NOSPLIT, $0-52
	MOVQ           lo+0(FP), AX
	VBROADCASTI128 (AX), Y13
	MOVQ           hi+8(FP), AX
	VBROADCASTI128 (AX), Y12
	SETUP(16)

s2:
	PREFETCHT0 1024(SI)
	CMPQ         CX, $2
	JLT          s1
	IDX
	ROW(Y13, Y12, Y9)
	VBROADCASTSS (BX), Y7
	VFMADD231PS  Y7, Y9, Y0
	NEXT
	IDX
	ROW(Y13, Y12, Y9)
	VBROADCASTSS (BX), Y7
	VFMADD231PS  Y7, Y9, Y8
	NEXT
	SUBQ         $2, CX
	JMP          s2

s1:
	CMPQ         CX, $1
	JLT          sdone
	IDX
	ROW(Y13, Y12, Y9)
	VBROADCASTSS (BX), Y7
	VFMADD231PS  Y7, Y9, Y0

sdone:
	VADDPS Y8, Y0, Y0
	HSUM
	VZEROUPPER
	MOVSS  X0, ret+48(FP)
	RET

// func lutQ16Dot2AVX2(lo0, hi0, lo1, hi1 *[16]uint8, p *uint8, q *int16, scale *float32, blocks int) (s0, s1 float32)
//
// Two rows sharing the indices: each block's indices are widened once and
// looked up in both rows' tables; one accumulator per row.
TEXT ·lutQ16Dot2AVX2(SB), NOSPLIT, $0-72
	MOVQ           lo0+0(FP), AX
	VBROADCASTI128 (AX), Y13
	MOVQ           hi0+8(FP), AX
	VBROADCASTI128 (AX), Y12
	MOVQ           lo1+16(FP), AX
	VBROADCASTI128 (AX), Y11
	MOVQ           hi1+24(FP), AX
	VBROADCASTI128 (AX), Y10
	SETUP(32)
	TESTQ          CX, CX
	JEQ            pdone

p1:
	PREFETCHT0 1024(SI)
	IDX
	ROW(Y13, Y12, Y9)
	ROW(Y11, Y10, Y14)
	VBROADCASTSS (BX), Y7
	VFMADD231PS  Y7, Y9, Y0
	VFMADD231PS  Y7, Y14, Y8
	NEXT
	DECQ         CX
	JNE          p1

pdone:
	HSUM
	MOVSS   X0, s0+64(FP)
	VMOVAPS Y8, Y0
	HSUM
	MOVSS   X0, s1+68(FP)
	VZEROUPPER
	RET

// The AVX-512 VNNI forms (simdVNNI) work on pairs of blocks, the layout
// QuantizeQ16 gives Q16 then (q16Pairs): per pair, the activations of
// indices 0–15 of both blocks, then 16–31 of both. One VPMOVZXBW widens
// the pair's 32 packed bytes to words; VPERMW reads the low 5 bits of
// each, so with the 16 codes twice in its 32-word table the low nibble
// needs no mask, and after VPSRLW $4 the high one looks up the same way.
// VPMADDWD and VPDPWSSD give each block's exact int32 sums in 8 lanes
// (lanes 0–7 the first block, 8–15 the second), VCVTDQ2PS and one FMA by
// the pair's scales, each repeated 8 times (Q16's scaleX). A lone last
// block (natural order) runs the same in YMM.

// PAIR(poff, qoff, soff, acc): one pair of blocks into the float
// accumulator acc; table Z31; clobbers Z2–Z4.
#define PAIR(poff, qoff, soff, acc) \
	VPMOVZXBW   poff(SI), Z2; \
	VPSRLW      $4, Z2, Z3; \
	VPERMW      Z31, Z2, Z2; \
	VPERMW      Z31, Z3, Z3; \
	VPMADDWD    qoff(DI), Z2, Z4; \
	VPDPWSSD    qoff+64(DI), Z3, Z4; \
	VCVTDQ2PS   Z4, Z4; \
	VFMADD231PS soff(BX), Z4, acc

// LONE(tab, acc): the lone last block at (SI), (DI), scale (R8), in YMM
// (the first 16 words of the table are the codes) into acc; clobbers
// Y2–Y5.
#define LONE(tab, acc) \
	VPMOVZXBW    (SI), Y2; \
	VPSRLW       $4, Y2, Y3; \
	VPERMW       tab, Y2, Y2; \
	VPERMW       tab, Y3, Y3; \
	VPMADDWD     (DI), Y2, Y4; \
	VPDPWSSD     32(DI), Y3, Y4; \
	VCVTDQ2PS    Y4, Y4; \
	VBROADCASTSS (R8), Y5; \
	VFMADD231PS  Y5, Y4, acc

// VNNIZERO clears the accumulators.
#define VNNIZERO \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7

// func lutQ16DotVNNI(tab *[32]int16, p *uint8, q *int16, scalex, scale *float32, blocks int) float32
// Two accumulators alternate pairs; the lone block's goes in Z6 (a YMM
// write would clear the upper half of a ZMM accumulator).
TEXT ·lutQ16DotVNNI(SB), NOSPLIT, $0-52
	MOVQ      tab+0(FP), AX
	VMOVDQU16 (AX), Z31
	MOVQ      p+8(FP), SI
	MOVQ      q+16(FP), DI
	MOVQ      scalex+24(FP), BX
	MOVQ      scale+32(FP), R8
	MOVQ      blocks+40(FP), CX
	VNNIZERO

v4:
	CMPQ       CX, $4
	JLT        v2
	PREFETCHT0 1024(SI)
	PAIR(0, 0, 0, Z0)
	PAIR(32, 128, 64, Z1)
	ADDQ       $64, SI
	ADDQ       $256, DI
	ADDQ       $128, BX
	ADDQ       $16, R8
	SUBQ       $4, CX
	JMP        v4

v2:
	CMPQ CX, $2
	JLT  v1
	PAIR(0, 0, 0, Z0)
	ADDQ $32, SI
	ADDQ $128, DI
	ADDQ $64, BX
	ADDQ $8, R8
	SUBQ $2, CX

v1:
	CMPQ CX, $1
	JLT  vdone
	LONE(Y31, Y6)

vdone:
	VADDPS Z1, Z0, Z0
	VADDPS Z6, Z0, Z0
	HSUM512
	MOVSS  X0, ret+48(FP)
	VZEROUPPER
	RET

// func lutQ16Dot2VNNI(tab0, tab1 *[32]int16, p *uint8, q *int16, scalex, scale *float32, blocks int) (s0, s1 float32)
// Two rows sharing the indices: each pair is widened and its activations
// loaded once for both rows' tables (Z31, Z30); one accumulator per row.
TEXT ·lutQ16Dot2VNNI(SB), NOSPLIT, $0-64
	MOVQ      tab0+0(FP), AX
	VMOVDQU16 (AX), Z31
	MOVQ      tab1+8(FP), AX
	VMOVDQU16 (AX), Z30
	MOVQ      p+16(FP), SI
	MOVQ      q+24(FP), DI
	MOVQ      scalex+32(FP), BX
	MOVQ      scale+40(FP), R8
	MOVQ      blocks+48(FP), CX
	VNNIZERO

w2:
	CMPQ        CX, $2
	JLT         w1
	PREFETCHT0  1024(SI)
	VPMOVZXBW   (SI), Z2
	VPSRLW      $4, Z2, Z3
	VPERMW      Z31, Z2, Z4
	VPERMW      Z31, Z3, Z5
	VPERMW      Z30, Z2, Z2
	VPERMW      Z30, Z3, Z3
	VMOVDQU16   (DI), Z8
	VMOVDQU16   64(DI), Z9
	VPMADDWD    Z8, Z4, Z10
	VPDPWSSD    Z9, Z5, Z10
	VPMADDWD    Z8, Z2, Z11
	VPDPWSSD    Z9, Z3, Z11
	VCVTDQ2PS   Z10, Z10
	VCVTDQ2PS   Z11, Z11
	VMOVUPS     (BX), Z12
	VFMADD231PS Z12, Z10, Z0
	VFMADD231PS Z12, Z11, Z1
	ADDQ        $32, SI
	ADDQ        $128, DI
	ADDQ        $64, BX
	ADDQ        $8, R8
	SUBQ        $2, CX
	JMP         w2

w1:
	CMPQ CX, $1
	JLT  wdone
	LONE(Y31, Y6)
	LONE(Y30, Y7)

wdone:
	VADDPS  Z6, Z0, Z0
	VADDPS  Z7, Z1, Z1
	VMOVAPS Z1, Z14
	HSUM512
	MOVSS   X0, s0+56(FP)
	VMOVAPS Z14, Z0
	HSUM512
	MOVSS   X0, s1+60(FP)
	VZEROUPPER
	RET
