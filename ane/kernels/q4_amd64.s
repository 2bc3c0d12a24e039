//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// CODES(poff, dst): the 32 indices of the packed block at poff(SI) as
// bytes in order (low nibbles of the 16 bytes, then high ones), looked up
// in the code table Y13 (both lanes) into dst. Y15 holds 0x0F bytes;
// clobbers X1, X2.
#define CODES(poff, tab, dst) \
	VMOVDQU     poff(SI), X1; \
	VPSRLW      $4, X1, X2; \
	VINSERTI128 $1, X2, Y1, Y1; \
	VPAND       Y15, Y1, Y1; \
	VPSHUFB     Y1, tab, dst

// MADD(w, x, dst): the 8 int32 sums of 4 products of signed bytes w and x
// (VPSIGNB moves w's signs onto x so VPMADDUBSW can take |w| unsigned;
// |−128| reads as 128, pairs ≤ 2·128·127, no saturation; VPMADDWD by the
// int16 ones in Y14 widens exactly), converted to float. Clobbers Y3, Y4.
#define MADD(w, x, dst) \
	VPSIGNB    w, w, Y3; \
	VPSIGNB    w, x, Y4; \
	VPMADDUBSW Y4, Y3, dst; \
	VPMADDWD   Y14, dst, dst; \
	VCVTDQ2PS  dst, dst

// Q4BLOCK(poff, qoff, soff, acc): one 32-weight block of one row times
// the Q8 block at qoff(DI) and its scale at soff(BX), into acc.
#define Q4BLOCK(poff, qoff, soff, acc) \
	CODES(poff, Y13, Y5); \
	VMOVDQU      qoff(DI), Y2; \
	MADD(Y5, Y2, Y6); \
	VBROADCASTSS soff(BX), Y7; \
	VFMADD231PS  Y7, Y6, acc

#define SETUP \
	MOVQ         p+8(FP), SI; \
	MOVQ         q+16(FP), DI; \
	MOVQ         scale+24(FP), BX; \
	MOVQ         blocks+32(FP), CX; \
	VPCMPEQW     Y14, Y14, Y14; \
	VPSRLW       $15, Y14, Y14; \
	MOVL         $0x0f0f0f0f, DX; \
	MOVL         DX, X15; \
	VPBROADCASTD X15, Y15

// func lutQ8DotAVX2(code *[16]int8, p *uint8, q *int8, scale *float32, blocks int) float32
//
// Per 32-weight block: one VPSHUFB looks the 32 nibbles up in the int8
// codes, an exact int32 dot product with the Q8 codes, one FMA by the
// block's scale; two accumulators alternate blocks.
TEXT ·lutQ8DotAVX2(SB), NOSPLIT, $0-44
	MOVQ           code+0(FP), AX
	VBROADCASTI128 (AX), Y13
	SETUP
	VXORPS         Y0, Y0, Y0
	VXORPS         Y8, Y8, Y8

s2:
	CMPQ CX, $2
	JLT  s1
	Q4BLOCK(0, 0, 0, Y0)
	Q4BLOCK(16, 32, 4, Y8)
	ADDQ $32, SI
	ADDQ $64, DI
	ADDQ $8, BX
	SUBQ $2, CX
	JMP  s2

s1:
	CMPQ CX, $1
	JLT  sdone
	Q4BLOCK(0, 0, 0, Y0)

sdone:
	VADDPS Y8, Y0, Y0
	HSUM
	VZEROUPPER
	MOVSS  X0, ret+40(FP)
	RET

// Q4PAIR(poff, qoff, soff, acc0, acc1): one block of two rows sharing the
// indices (codes Y13 and Y12): the indices widened and x loaded once.
#define Q4PAIR(poff, qoff, soff, acc0, acc1) \
	CODES(poff, Y13, Y5); \
	VPSHUFB      Y1, Y12, Y9; \
	VMOVDQU      qoff(DI), Y2; \
	MADD(Y5, Y2, Y6); \
	MADD(Y9, Y2, Y10); \
	VBROADCASTSS soff(BX), Y7; \
	VFMADD231PS  Y7, Y6, acc0; \
	VFMADD231PS  Y7, Y10, acc1

// func lutQ8Dot2AVX2(code *[2][16]int8, p *uint8, q *int8, scale *float32, blocks int) (s0, s1 float32)
//
// One accumulator per row (the registers are taken); a block's two FMAs
// are independent.
TEXT ·lutQ8Dot2AVX2(SB), NOSPLIT, $0-48
	MOVQ           code+0(FP), AX
	VBROADCASTI128 (AX), Y13
	VBROADCASTI128 16(AX), Y12
	SETUP
	VXORPS         Y0, Y0, Y0
	VXORPS         Y8, Y8, Y8
	TESTQ          CX, CX
	JEQ            pdone

p1:
	Q4PAIR(0, 0, 0, Y0, Y8)
	ADDQ $16, SI
	ADDQ $32, DI
	ADDQ $4, BX
	DECQ CX
	JNE  p1

pdone:
	HSUM
	MOVSS  X0, s0+40(FP)
	VMOVAPS Y8, Y0
	HSUM
	MOVSS  X0, s1+44(FP)
	VZEROUPPER
	RET
