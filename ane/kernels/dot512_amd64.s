//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

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
	PREFETCHT0  1024(SI)
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
	MOVSS  X0, ret+32(FP)
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
	PREFETCHT0  1024(SI)
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
	MOVSS   X0, s0+32(FP)
	VMOVAPS Z14, Z0
	HSUM512
	MOVSS   X0, s1+36(FP)
	VZEROUPPER
	RET

// OUT2(hi, lo, off): the sum of the 32 lanes of lo and hi stored at off(AX)
// (clobbers Z0, Y1).
#define OUT2(hi, lo, off) \
	VADDPS hi, lo, Z0; \
	HSUM512; \
	MOVSS  X0, off(AX)

// ROW4(xlo, xhi, alo, ahi, blo, bhi): one activation row's block (its low
// and high 16 floats at xlo, xhi) against the looked-up values of rows A
// (Z16, Z17) and B (Z18, Z19); clobbers Z20, Z21.
#define ROW4(xlo, xhi, alo, ahi, blo, bhi) \
	VMOVUPS     xlo, Z20; \
	VMOVUPS     xhi, Z21; \
	VFMADD231PS Z20, Z16, alo; \
	VFMADD231PS Z21, Z17, ahi; \
	VFMADD231PS Z20, Z18, blo; \
	VFMADD231PS Z21, Z19, bhi

// func lutNibDot2x4AVX512(tabA, tabB *[16]float32, pA, pB *uint8, x *float32, xstride, blocks int, out *[8]float32)
// The matrix-matrix form: two packed rows (A with tabA, B with tabB; the
// two rows of a vector group share one index row) against four activation
// rows at x + t·xstride bytes; out = A·x_0…3, B·x_0…3. Each block's
// indices are widened and looked up once, and each activation vector,
// loaded once, feeds four FMAs: the activations of four long rows do not
// fit L1, so loads, not FMAs, set the pace. Sixteen accumulators (A and
// B, four rows, low and high half) keep both FMA ports busy.
TEXT ·lutNibDot2x4AVX512(SB), NOSPLIT, $0-64
	MOVQ    tabA+0(FP), AX
	MOVQ    tabB+8(FP), BX
	MOVQ    pA+16(FP), SI
	MOVQ    pB+24(FP), R9
	MOVQ    x+32(FP), DI
	MOVQ    xstride+40(FP), DX
	MOVQ    blocks+48(FP), CX
	LEAQ    (DI)(DX*2), R8
	VMOVUPS (AX), Z8
	VMOVUPS (BX), Z9
	VPXORD  Z0, Z0, Z0
	VPXORD  Z1, Z1, Z1
	VPXORD  Z2, Z2, Z2
	VPXORD  Z3, Z3, Z3
	VPXORD  Z4, Z4, Z4
	VPXORD  Z5, Z5, Z5
	VPXORD  Z6, Z6, Z6
	VPXORD  Z7, Z7, Z7
	VPXORD  Z24, Z24, Z24
	VPXORD  Z25, Z25, Z25
	VPXORD  Z26, Z26, Z26
	VPXORD  Z27, Z27, Z27
	VPXORD  Z28, Z28, Z28
	VPXORD  Z29, Z29, Z29
	VPXORD  Z30, Z30, Z30
	VPXORD  Z31, Z31, Z31
	TESTQ   CX, CX
	JEQ     cdone

c1:
	PREFETCHT0  1024(SI)
	PREFETCHT0  1024(R9)
	VPMOVZXBD   (SI), Z16
	VPMOVZXBD   (R9), Z18
	VPSRLD      $4, Z16, Z17
	VPSRLD      $4, Z18, Z19
	VPERMPS     Z8, Z16, Z16
	VPERMPS     Z8, Z17, Z17
	VPERMPS     Z9, Z18, Z18
	VPERMPS     Z9, Z19, Z19
	ROW4(0(DI), 64(DI), Z0, Z1, Z24, Z25)
	ROW4(0(DI)(DX*1), 64(DI)(DX*1), Z2, Z3, Z26, Z27)
	ROW4(0(R8), 64(R8), Z4, Z5, Z28, Z29)
	ROW4(0(R8)(DX*1), 64(R8)(DX*1), Z6, Z7, Z30, Z31)
	ADDQ        $16, SI
	ADDQ        $16, R9
	ADDQ        $128, DI
	ADDQ        $128, R8
	DECQ        CX
	JNE         c1

cdone:
	MOVQ out+56(FP), AX
	OUT2(Z1, Z0, 0)
	OUT2(Z3, Z2, 4)
	OUT2(Z5, Z4, 8)
	OUT2(Z7, Z6, 12)
	OUT2(Z25, Z24, 16)
	OUT2(Z27, Z26, 20)
	OUT2(Z29, Z28, 24)
	OUT2(Z31, Z30, 28)
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
	PREFETCHT0  1024(SI)
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
	MOVSS  X0, ret+24(FP)
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
	PREFETCHT0  1024(SI)
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
	MOVSS     X0, s0+32(FP)
	VMOVAPS   Z14, Z0
	HSUM512
	MOVSS     X0, s1+36(FP)
	VPSRLD    $6, Z10, Z10
	VPTESTMD  Z10, Z10, K1
	KMOVW     K1, AX
	XORL      DX, DX
	TESTL     AX, AX
	SETNE     DL
	MOVL      DX, over+40(FP)
	VZEROUPPER
	RET
