//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// IDX: the 32 indices of the packed block at (SI) as bytes, lane 0 the low
// nibbles (indices 0–15), lane 1 the high ones (16–31), into Y1: the block
// in both lanes, lane 1 shifted right by 4 (Y2's counts), masked by Y15's
// 0x0F bytes.
#define IDX \
	VBROADCASTI128 (SI), Y1; \
	VPSRLVD        Y2, Y1, Y1; \
	VPAND          Y15, Y1, Y1

// ROW(lo, hi, acc): the block's 32 codes (low bytes from table lo, high
// bytes from hi, VPSHUFB of the indices Y1) unpacked to int16, in the
// order 0–7, 16–23 (Y3) and 8–15, 24–31 (Y4) that Q16 stores the
// activations in; VPMADDWD multiplies them by the Q16 block at (DI) and
// adds pairs to int32 (|code| ≤ 2047, |q| ≤ 32767: exact), and both
// halves are added to the int32 lanes of acc (a run of Q16Group blocks
// stays exact: q4.go). Clobbers Y3–Y6.
#define ROW(lo, hi, acc) \
	VPSHUFB    Y1, lo, Y5; \
	VPSHUFB    Y1, hi, Y6; \
	VPUNPCKLBW Y6, Y5, Y3; \
	VPUNPCKHBW Y6, Y5, Y4; \
	VPMADDWD   (DI), Y3, Y3; \
	VPMADDWD   32(DI), Y4, Y4; \
	VPADDD     Y4, Y3, Y3; \
	VPADDD     Y3, acc, acc

#define SETUP(off) \
	MOVQ         p+off(FP), SI; \
	MOVQ         q+off+8(FP), DI; \
	MOVQ         scale+off+16(FP), BX; \
	MOVQ         blocks+off+24(FP), CX; \
	MOVQ         $0x0f0f0f0f0f0f0f0f, DX; \
	VMOVQ        DX, X15; \
	VPBROADCASTQ X15, Y15; \
	MOVQ         $4, DX; \
	VMOVQ        DX, X2; \
	VPBROADCASTD X2, X2; \
	VPERMQ       $0x4e, Y2, Y2; \
	VXORPS       Y0, Y0, Y0; \
	VXORPS       Y8, Y8, Y8

#define NEXT \
	ADDQ $16, SI; \
	ADDQ $64, DI

// RUN: R8 = the blocks of the next run (min(CX, 8), taken off CX), its
// scale (the run's first block's; Q16 repeats it through the run)
// broadcast into Y7, and BX moved to the next run's.
#define RUN \
	MOVQ         $8, R8; \
	CMPQ         CX, R8; \
	CMOVQLT      CX, R8; \
	SUBQ         R8, CX; \
	VBROADCASTSS (BX), Y7; \
	LEAQ         (BX)(R8*4), BX

// func lutQ16DotAVX2(lo, hi *[16]uint8, p *uint8, q *int16, scale *float32, blocks int) float32
//
// Per run of Q16Group blocks: per block, two VPSHUFB look the nibbles up
// and the exact int32 products with the Q16 codes are added to the run's
// int32 lanes; then one conversion and one FMA by the run's scale.
TEXT ·lutQ16DotAVX2(SB), NOSPLIT, $0-52
	MOVQ           lo+0(FP), AX
	VBROADCASTI128 (AX), Y13
	MOVQ           hi+8(FP), AX
	VBROADCASTI128 (AX), Y12
	SETUP(16)

srun:
	TESTQ CX, CX
	JEQ   sdone
	RUN
	VPXOR Y9, Y9, Y9

sblk:
	PREFETCHT0 1024(SI)
	IDX
	ROW(Y13, Y12, Y9)
	NEXT
	DECQ       R8
	JNE        sblk
	VCVTDQ2PS   Y9, Y9
	VFMADD231PS Y7, Y9, Y0
	JMP         srun

sdone:
	HSUM
	VZEROUPPER
	VMOVSS X0, ret+48(FP)
	RET

// func lutQ16Dot2AVX2(lo0, hi0, lo1, hi1 *[16]uint8, p *uint8, q *int16, scale *float32, blocks int) (s0, s1 float32)
//
// Two rows sharing the indices: each block's indices are widened once and
// looked up in both rows' tables; one int32 and one float accumulator per
// row.
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

prun:
	TESTQ CX, CX
	JEQ   pdone
	RUN
	VPXOR Y9, Y9, Y9
	VPXOR Y14, Y14, Y14

pblk:
	PREFETCHT0 1024(SI)
	IDX
	ROW(Y13, Y12, Y9)
	ROW(Y11, Y10, Y14)
	NEXT
	DECQ       R8
	JNE        pblk
	VCVTDQ2PS   Y9, Y9
	VCVTDQ2PS   Y14, Y14
	VFMADD231PS Y7, Y9, Y0
	VFMADD231PS Y7, Y14, Y8
	JMP         prun

pdone:
	HSUM
	VMOVSS  X0, s0+64(FP)
	VMOVAPS Y8, Y0
	HSUM
	VMOVSS  X0, s1+68(FP)
	VZEROUPPER
	RET
