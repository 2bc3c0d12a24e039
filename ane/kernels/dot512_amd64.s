//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"
#include "stream_amd64.h"

// AVX-512 forms of the codebook kernels, over n elements, n a multiple of
// 16 (the Go wrappers add the tail). A 16-entry float32 codebook is exactly
// one ZMM register, so one VPERMPS looks up 16 indices; the AVX2 kernels
// need two permutes and a blend per 8. Results are deterministic: fixed
// accumulators reduced in a fixed order.

// The nibble kernels read packed 4-bit indices (see LUT.nib): a block of
// 32 indices is 16 bytes, byte j holding index j in its low nibble and
// index 16+j in its high one. One VPMOVZXBD widens a block; VPERMPS reads
// only bits 3:0 of each lane, so the low nibbles need no mask and the high
// ones one shift.

// func lutNibDotAVX512(tab *[16]float32, p *uint8, x *float32, blocks int) float32
TEXT ·lutNibDotAVX512(SB), NOSPLIT, $0-36
	MOVQ    tab+0(FP), AX
	MOVQ    p+8(FP), SI
	MOVQ    x+16(FP), DI
	MOVQ    blocks+24(FP), CX
	VMOVUPS (AX), Z8
	VPXORD  Z0, Z0, Z0
	VPXORD  Z1, Z1, Z1
	VPXORD  Z2, Z2, Z2
	VPXORD  Z3, Z3, Z3

a2:
	CMPQ        CX, $2
	JLT         a1
	PREFETCHT0  AHEAD(SI)
	VPMOVZXBD   (SI), Z4
	VPMOVZXBD   16(SI), Z6
	VPSRLD      $4, Z4, Z5
	VPSRLD      $4, Z6, Z7
	VPERMPS     Z8, Z4, Z4
	VPERMPS     Z8, Z5, Z5
	VPERMPS     Z8, Z6, Z6
	VPERMPS     Z8, Z7, Z7
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ        $32, SI
	ADDQ        $256, DI
	SUBQ        $2, CX
	JMP         a2

a1:
	CMPQ        CX, $1
	JLT         adone
	VPMOVZXBD   (SI), Z4
	VPSRLD      $4, Z4, Z5
	VPERMPS     Z8, Z4, Z4
	VPERMPS     Z8, Z5, Z5
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1

adone:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	HSUM512
	VMOVSS  X0, ret+32(FP)
	VZEROUPPER
	RET

// func lutNibDot2AVX512(tab *[2][16]float32, p *uint8, x *float32, blocks int) (s0, s1 float32)
// Two tables (two output rows of a vector codebook) sharing the indices and x.
TEXT ·lutNibDot2AVX512(SB), NOSPLIT, $0-40
	MOVQ    tab+0(FP), AX
	MOVQ    p+8(FP), SI
	MOVQ    x+16(FP), DI
	MOVQ    blocks+24(FP), CX
	VMOVUPS (AX), Z8
	VMOVUPS 64(AX), Z9
	VPXORD  Z0, Z0, Z0
	VPXORD  Z1, Z1, Z1
	VPXORD  Z2, Z2, Z2
	VPXORD  Z3, Z3, Z3
	TESTQ   CX, CX
	JEQ     bdone

b1:
	PREFETCHT0  AHEAD(SI)
	VMOVUPS     (DI), Z12
	VMOVUPS     64(DI), Z13
	VPMOVZXBD   (SI), Z4
	VPSRLD      $4, Z4, Z5
	VPERMPS     Z8, Z4, Z6
	VPERMPS     Z9, Z4, Z7
	VFMADD231PS Z12, Z6, Z0
	VFMADD231PS Z12, Z7, Z1
	VPERMPS     Z8, Z5, Z6
	VPERMPS     Z9, Z5, Z7
	VFMADD231PS Z13, Z6, Z2
	VFMADD231PS Z13, Z7, Z3
	ADDQ        $16, SI
	ADDQ        $128, DI
	DECQ        CX
	JNE         b1

bdone:
	VADDPS  Z2, Z0, Z0
	VADDPS  Z3, Z1, Z1
	VMOVAPS Z1, Z14
	HSUM512
	VMOVSS   X0, s0+32(FP)
	VMOVAPS Z14, Z0
	HSUM512
	VMOVSS   X0, s1+36(FP)
	VZEROUPPER
	RET

// OUT1(acc, off): the sum of acc's 16 lanes stored at off(AX) (clobbers
// Z0, Y1).
#define OUT1(acc, off) \
	HSUM512TO(acc, off(AX))

// OUT2TO9 stores the sums of Z2–Z9 at 0(AX)…28(AX).
#define OUT2TO9 \
	OUT1(Z2, 0); \
	OUT1(Z3, 4); \
	OUT1(Z4, 8); \
	OUT1(Z5, 12); \
	OUT1(Z6, 16); \
	OUT1(Z7, 20); \
	OUT1(Z8, 24); \
	OUT1(Z9, 28)

// NIBLOOK(p, tab, lo, hi): the 32 looked-up values of the packed block at
// (p) from the codebook tab, indices 0–15 into lo and 16–31 into hi.
#define NIBLOOK(p, tab, lo, hi) \
	VPMOVZXBD (p), lo; \
	VPSRLD    $4, lo, hi; \
	VPERMPS   tab, lo, lo; \
	VPERMPS   tab, hi, hi

// ZERO2TO9 clears Z2–Z9, accumulators of the matrix-matrix kernels.
#define ZERO2TO9 \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9

// TOKEN(xlo, xhi, a, b): one activation row's block (its low and high 16
// floats at xlo, xhi) against rows A (Z16, Z17) and B (Z18, Z19) into
// their accumulators a and b, low half then high half; clobbers Z20, Z21.
// Both matrix-matrix kernels accumulate every (row, token) output in this
// order, so a row's result does not depend on which kernel computed it.
#define TOKEN(xlo, xhi, a, b) \
	VMOVUPS     xlo, Z20; \
	VMOVUPS     xhi, Z21; \
	VFMADD231PS Z20, Z16, a; \
	VFMADD231PS Z20, Z18, b; \
	VFMADD231PS Z21, Z17, a; \
	VFMADD231PS Z21, Z19, b

// TOKEN4(xlo, xhi, a, b, c, d): TOKEN for four rows, C (Z22, Z23) and D
// (Z24, Z25) too.
#define TOKEN4(xlo, xhi, a, b, c, d) \
	VMOVUPS     xlo, Z20; \
	VMOVUPS     xhi, Z21; \
	VFMADD231PS Z20, Z16, a; \
	VFMADD231PS Z20, Z18, b; \
	VFMADD231PS Z20, Z22, c; \
	VFMADD231PS Z20, Z24, d; \
	VFMADD231PS Z21, Z17, a; \
	VFMADD231PS Z21, Z19, b; \
	VFMADD231PS Z21, Z23, c; \
	VFMADD231PS Z21, Z25, d

// func lutNibDot2x4AVX512(tabA, tabB *[16]float32, pA, pB *uint8, x *float32, xstride, blocks int, out *[8]float32)
// The matrix-matrix form: two packed rows (A with tabA, B with tabB; the
// two rows of a vector group share one index row) against four activation
// rows at x + t·xstride bytes; out = A·x_0…3, B·x_0…3. Each block's
// indices are widened and looked up once, and each activation vector,
// loaded once, feeds the FMAs of both rows. Eight accumulators, one per
// output (Z2–Z9).
TEXT ·lutNibDot2x4AVX512(SB), NOSPLIT, $0-64
	MOVQ    tabA+0(FP), AX
	MOVQ    tabB+8(FP), BX
	MOVQ    pA+16(FP), SI
	MOVQ    pB+24(FP), R9
	MOVQ    x+32(FP), DI
	MOVQ    xstride+40(FP), DX
	MOVQ    blocks+48(FP), CX
	LEAQ    (DI)(DX*2), R8
	VMOVUPS (AX), Z26
	VMOVUPS (BX), Z27
	ZERO2TO9
	TESTQ   CX, CX
	JEQ     cdone

c1:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1024(R9)
	NIBLOOK(SI, Z26, Z16, Z17)
	NIBLOOK(R9, Z27, Z18, Z19)
	TOKEN(0(DI), 64(DI), Z2, Z6)
	TOKEN(0(DI)(DX*1), 64(DI)(DX*1), Z3, Z7)
	TOKEN(0(R8), 64(R8), Z4, Z8)
	TOKEN(0(R8)(DX*1), 64(R8)(DX*1), Z5, Z9)
	ADDQ       $16, SI
	ADDQ       $16, R9
	ADDQ       $128, DI
	ADDQ       $128, R8
	DECQ       CX
	JNE        c1

cdone:
	MOVQ out+56(FP), AX
	OUT2TO9
	VZEROUPPER
	RET

// func lutNibDot4x4AVX512(q *nibQuad, x *float32, xstride, blocks int, out *[16]float32)
// Four packed rows (q.p[i] with q.tab[i]; pointers may repeat, as the rows
// of a vector group share an index row) against four activation rows:
// out[4i+t] = row i · x_t. Each activation vector, loaded once, feeds the
// FMAs of four rows: half the loads per FMA of lutNibDot2x4AVX512, whose
// per-output arithmetic it repeats exactly. Sixteen accumulators (Z2–Z15,
// Z30, Z31).
TEXT ·lutNibDot4x4AVX512(SB), NOSPLIT, $0-40
	MOVQ    q+0(FP), AX
	MOVQ    0(AX), BX
	VMOVUPS (BX), Z26
	MOVQ    8(AX), BX
	VMOVUPS (BX), Z27
	MOVQ    16(AX), BX
	VMOVUPS (BX), Z28
	MOVQ    24(AX), BX
	VMOVUPS (BX), Z29
	MOVQ    32(AX), SI
	MOVQ    40(AX), R9
	MOVQ    48(AX), R10
	MOVQ    56(AX), R11
	MOVQ    x+8(FP), DI
	MOVQ    xstride+16(FP), DX
	MOVQ    blocks+24(FP), CX
	LEAQ    (DI)(DX*2), R8
	ZERO2TO9
	VPXORD  Z10, Z10, Z10
	VPXORD  Z11, Z11, Z11
	VPXORD  Z12, Z12, Z12
	VPXORD  Z13, Z13, Z13
	VPXORD  Z14, Z14, Z14
	VPXORD  Z15, Z15, Z15
	VPXORD  Z30, Z30, Z30
	VPXORD  Z31, Z31, Z31
	TESTQ   CX, CX
	JEQ     qdone

q1:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1024(R9)
	PREFETCHT0 1024(R10)
	PREFETCHT0 1024(R11)
	NIBLOOK(SI, Z26, Z16, Z17)
	NIBLOOK(R9, Z27, Z18, Z19)
	NIBLOOK(R10, Z28, Z22, Z23)
	NIBLOOK(R11, Z29, Z24, Z25)
	TOKEN4(0(DI), 64(DI), Z2, Z6, Z10, Z14)
	TOKEN4(0(DI)(DX*1), 64(DI)(DX*1), Z3, Z7, Z11, Z15)
	TOKEN4(0(R8), 64(R8), Z4, Z8, Z12, Z30)
	TOKEN4(0(R8)(DX*1), 64(R8)(DX*1), Z5, Z9, Z13, Z31)
	ADDQ       $16, SI
	ADDQ       $16, R9
	ADDQ       $16, R10
	ADDQ       $16, R11
	ADDQ       $128, DI
	ADDQ       $128, R8
	DECQ       CX
	JNE        q1

qdone:
	MOVQ out+32(FP), AX
	OUT2TO9
	OUT1(Z10, 32)
	OUT1(Z11, 36)
	OUT1(Z12, 40)
	OUT1(Z13, 44)
	OUT1(Z14, 48)
	OUT1(Z15, 52)
	OUT1(Z30, 56)
	OUT1(Z31, 60)
	VZEROUPPER
	RET

// func int8DotAVX512(q *int8, x *float32, n int) float32
TEXT ·int8DotAVX512(SB), NOSPLIT, $0-28
	MOVQ   q+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   n+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

c64:
	CMPQ        CX, $64
	JLT         c16
	PREFETCHT0  AHEAD(SI)
	VPMOVSXBD   (SI), Z4
	VPMOVSXBD   16(SI), Z5
	VPMOVSXBD   32(SI), Z6
	VPMOVSXBD   48(SI), Z7
	VCVTDQ2PS   Z4, Z4
	VCVTDQ2PS   Z5, Z5
	VCVTDQ2PS   Z6, Z6
	VCVTDQ2PS   Z7, Z7
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ        $64, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         c64

c16:
	CMPQ        CX, $16
	JLT         cdone
	VPMOVSXBD   (SI), Z4
	VCVTDQ2PS   Z4, Z4
	VFMADD231PS (DI), Z4, Z0
	ADDQ        $16, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         c16

cdone:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	HSUM512
	VMOVSS  X0, ret+24(FP)
	VZEROUPPER
	RET

// One 64-entry lookup of the 16 indices in Z4 from the table in lo (entries
// 0–31, two registers A, B) and hi (32–63, C, D): VPERMI2PS picks among 32
// entries by the low 5 bits, overwriting its index register (so each works
// on a copy); K2 (index bit 5) selects the high half. Result in dst.
#define LOOKUP64(A, B, C, D, dst) \
	VMOVDQA32 Z4, dst; \
	VPERMI2PS B, A, dst; \
	VMOVDQA32 Z4, Z7; \
	VPERMI2PS D, C, Z7; \
	VMOVAPS   Z7, K2, dst

// func lut64Dot2AVX512(tab *[2][64]float32, idx *uint8, x *float32, n int) (s0, s1 float32, over uint32)
// lut16Dot2AVX512 for codebooks of up to 64 entries (vector 2x64, 4x64);
// over is non-zero when some index is ≥ 64.
TEXT ·lut64Dot2AVX512(SB), NOSPLIT, $0-44
	MOVQ    tab+0(FP), AX
	MOVQ    idx+8(FP), SI
	MOVQ    x+16(FP), DI
	MOVQ    n+24(FP), CX
	VMOVUPS (AX), Z16
	VMOVUPS 64(AX), Z17
	VMOVUPS 128(AX), Z18
	VMOVUPS 192(AX), Z19
	VMOVUPS 256(AX), Z20
	VMOVUPS 320(AX), Z21
	VMOVUPS 384(AX), Z22
	VMOVUPS 448(AX), Z23
	MOVL    $32, DX
	VPBROADCASTD DX, Z11
	VPXORD  Z10, Z10, Z10
	VPXORD  Z0, Z0, Z0
	VPXORD  Z1, Z1, Z1

d16:
	CMPQ        CX, $16
	JLT         ddone
	PREFETCHT0  AHEAD(SI)
	VMOVUPS     (DI), Z12
	VPMOVZXBD   (SI), Z4
	VPORD       Z4, Z10, Z10
	VPTESTMD    Z11, Z4, K2
	LOOKUP64(Z16, Z17, Z18, Z19, Z5)
	VFMADD231PS Z12, Z5, Z0
	LOOKUP64(Z20, Z21, Z22, Z23, Z6)
	VFMADD231PS Z12, Z6, Z1
	ADDQ        $16, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         d16

ddone:
	VMOVAPS   Z1, Z14
	HSUM512
	VMOVSS     X0, s0+32(FP)
	VMOVAPS   Z14, Z0
	HSUM512
	VMOVSS     X0, s1+36(FP)
	VPSRLD    $6, Z10, Z10
	VPTESTMD  Z10, Z10, K1
	KMOVW     K1, AX
	XORL      DX, DX
	TESTL     AX, AX
	SETNE     DL
	MOVL      DX, over+40(FP)
	VZEROUPPER
	RET
