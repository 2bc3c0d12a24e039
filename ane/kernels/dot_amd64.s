//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"
#include "lookup_amd64.h"

// Kernels over n elements, n a multiple of 8 (the Go wrappers add the tail).
// Each keeps independent accumulators and reduces them in a fixed order, so
// results are deterministic (HSUM: hsum_amd64.h).

// func dotAVX2(a, b *float32, n int) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

dot32:
	CMPQ CX, $32
	JLT  dot8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         dot32

dot8:
	CMPQ CX, $8
	JLT  dotdone
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         dot8

dotdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func bf16DotAVX2(w *uint16, x *float32, n int) float32
// A bf16 value is the high half of a float32: zero-extend to 32 bits, shift
// left 16.
TEXT ·bf16DotAVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

bf32:
	CMPQ CX, $32
	JLT  bf8
	VPMOVZXWD   (SI), Y4
	VPMOVZXWD   16(SI), Y5
	VPMOVZXWD   32(SI), Y6
	VPMOVZXWD   48(SI), Y7
	VPSLLD      $16, Y4, Y4
	VPSLLD      $16, Y5, Y5
	VPSLLD      $16, Y6, Y6
	VPSLLD      $16, Y7, Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         bf32

bf8:
	CMPQ CX, $8
	JLT  bfdone
	VPMOVZXWD   (SI), Y4
	VPSLLD      $16, Y4, Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $16, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         bf8

bfdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func int8DotAVX2(q *int8, x *float32, n int) float32
TEXT ·int8DotAVX2(SB), NOSPLIT, $0-28
	MOVQ q+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

i32:
	PREFETCHT0 1024(SI)
	CMPQ CX, $32
	JLT  i8
	VPMOVSXBD   (SI), Y4
	VPMOVSXBD   8(SI), Y5
	VPMOVSXBD   16(SI), Y6
	VPMOVSXBD   24(SI), Y7
	VCVTDQ2PS   Y4, Y4
	VCVTDQ2PS   Y5, Y5
	VCVTDQ2PS   Y6, Y6
	VCVTDQ2PS   Y7, Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $32, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         i32

i8:
	CMPQ CX, $8
	JLT  idone
	VPMOVSXBD   (SI), Y4
	VCVTDQ2PS   Y4, Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $8, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         i8

idone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// The nibble kernels read packed 4-bit indices (see LUT.nib and
// dot512_amd64.s): per 16-byte block, bytes 0–7 widen to indices 0–7 (low
// nibbles; VPERMPS reads bits 2:0, the blend bit 3) and 16–23 (high
// nibbles, after a shift), bytes 8–15 to indices 8–15 and 24–31.

// NIB8(off, xlo, xhi, acclo, acchi): the 8 bytes at off(SI) against
// x at xlo(DI) (low nibbles) and xhi(DI) (high nibbles), table Y8:Y9.
#define NIB8(off, xlo, xhi, acclo, acchi) \
	VPMOVZXBD   off(SI), Y4; \
	VPSLLD      $28, Y4, Y5; \
	LOOKUP16(Y8, Y9, Y7); \
	VFMADD231PS xlo(DI), Y7, acclo; \
	VPSRLD      $4, Y4, Y4; \
	VPSLLD      $28, Y4, Y5; \
	LOOKUP16(Y8, Y9, Y7); \
	VFMADD231PS xhi(DI), Y7, acchi

// func lutNibDotAVX2(tab *[16]float32, p *uint8, x *float32, blocks int) float32
TEXT ·lutNibDotAVX2(SB), NOSPLIT, $0-36
	MOVQ    tab+0(FP), AX
	MOVQ    p+8(FP), SI
	MOVQ    x+16(FP), DI
	MOVQ    blocks+24(FP), CX
	VMOVUPS (AX), Y8
	VMOVUPS 32(AX), Y9
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	TESTQ   CX, CX
	JEQ     ldone

l1:
	PREFETCHT0 1024(SI)
	NIB8(0, 0, 64, Y0, Y1)
	NIB8(8, 32, 96, Y2, Y3)
	ADDQ $16, SI
	ADDQ $128, DI
	DECQ CX
	JNE  l1

ldone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM
	VMOVSS  X0, ret+32(FP)
	VZEROUPPER
	RET

// NIB8x2(xoff, acc0, acc1): 8 indices (already in Y4) against x at
// xoff(DI) for both tables, Y8:Y9 into acc0 and Y11:Y12 into acc1.
#define NIB8x2(xoff, acc0, acc1) \
	VMOVUPS     xoff(DI), Y13; \
	VPSLLD      $28, Y4, Y5; \
	LOOKUP16(Y8, Y9, Y7); \
	VFMADD231PS Y13, Y7, acc0; \
	LOOKUP16(Y11, Y12, Y7); \
	VFMADD231PS Y13, Y7, acc1

// func lutNibDot2AVX2(tab *[2][16]float32, p *uint8, x *float32, blocks int) (s0, s1 float32)
TEXT ·lutNibDot2AVX2(SB), NOSPLIT, $0-40
	MOVQ    tab+0(FP), AX
	MOVQ    p+8(FP), SI
	MOVQ    x+16(FP), DI
	MOVQ    blocks+24(FP), CX
	VMOVUPS (AX), Y8
	VMOVUPS 32(AX), Y9
	VMOVUPS 64(AX), Y11
	VMOVUPS 96(AX), Y12
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	TESTQ   CX, CX
	JEQ     mdone

m1:
	PREFETCHT0 1024(SI)
	VPMOVZXBD (SI), Y4
	NIB8x2(0, Y0, Y1)
	VPSRLD    $4, Y4, Y4
	NIB8x2(64, Y2, Y3)
	VPMOVZXBD 8(SI), Y4
	NIB8x2(32, Y0, Y1)
	VPSRLD    $4, Y4, Y4
	NIB8x2(96, Y2, Y3)
	ADDQ      $16, SI
	ADDQ      $128, DI
	DECQ      CX
	JNE       m1

mdone:
	VADDPS  Y2, Y0, Y0
	VADDPS  Y3, Y1, Y1
	VMOVUPS Y1, Y14
	HSUM
	VMOVSS   X0, s0+32(FP)
	VMOVUPS Y14, Y0
	HSUM
	VMOVSS   X0, s1+36(FP)
	VZEROUPPER
	RET

// func dot4AVX2(w, x0, x1, x2, x3 *float32, n int) (s0, s1, s2, s3 float32)
// w·x_t for four activation rows, loading each weight once; two
// accumulators per row (16 elements a step) hide the FMA latency.
TEXT ·dot4AVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ x0+8(FP), R8
	MOVQ x1+16(FP), R9
	MOVQ x2+24(FP), R10
	MOVQ x3+32(FP), R11
	MOVQ n+40(FP), CX
	XORQ AX, AX
	ZERO8

d16:
	CMPQ CX, $16
	JLT  d8
	VMOVUPS     (SI)(AX*1), Y8
	VMOVUPS     32(SI)(AX*1), Y9
	VFMADD231PS (R8)(AX*1), Y8, Y0
	VFMADD231PS 32(R8)(AX*1), Y9, Y4
	VFMADD231PS (R9)(AX*1), Y8, Y1
	VFMADD231PS 32(R9)(AX*1), Y9, Y5
	VFMADD231PS (R10)(AX*1), Y8, Y2
	VFMADD231PS 32(R10)(AX*1), Y9, Y6
	VFMADD231PS (R11)(AX*1), Y8, Y3
	VFMADD231PS 32(R11)(AX*1), Y9, Y7
	ADDQ        $64, AX
	SUBQ        $16, CX
	JMP         d16

d8:
	CMPQ CX, $8
	JLT  d4done
	VMOVUPS     (SI)(AX*1), Y8
	VFMADD231PS (R8)(AX*1), Y8, Y0
	VFMADD231PS (R9)(AX*1), Y8, Y1
	VFMADD231PS (R10)(AX*1), Y8, Y2
	VFMADD231PS (R11)(AX*1), Y8, Y3
	ADDQ        $32, AX
	SUBQ        $8, CX
	JMP         d8

d4done:
	HSUM4(s0+48(FP), s1+52(FP), s2+56(FP), s3+60(FP))
	VZEROUPPER
	RET

// One 64-entry lookup of the 8 indices in Y4 from the eight 8-float
// quarters-of-halves at base(AX): a VPERMPS per 8 entries and a blend tree on
// index bits 3, 4, 5 (sign bits of Y5, Y6, Y7). Y9–Y11 are clobbered.
#define LOOKUP64(base, dst) \
	VPERMPS   base+0(AX), Y4, dst; \
	VPERMPS   base+32(AX), Y4, Y9; \
	VBLENDVPS Y5, Y9, dst, dst; \
	VPERMPS   base+64(AX), Y4, Y9; \
	VPERMPS   base+96(AX), Y4, Y10; \
	VBLENDVPS Y5, Y10, Y9, Y9; \
	VBLENDVPS Y6, Y9, dst, dst; \
	VPERMPS   base+128(AX), Y4, Y9; \
	VPERMPS   base+160(AX), Y4, Y10; \
	VBLENDVPS Y5, Y10, Y9, Y9; \
	VPERMPS   base+192(AX), Y4, Y10; \
	VPERMPS   base+224(AX), Y4, Y11; \
	VBLENDVPS Y5, Y11, Y10, Y10; \
	VBLENDVPS Y6, Y10, Y9, Y9; \
	VBLENDVPS Y7, Y9, dst, dst

// func lut64Dot2AVX2(tab *[2][64]float32, idx *uint8, x *float32, n int) (s0, s1 float32, over uint32)
// lut16Dot2AVX2 for codebooks of up to 64 entries (vector 2x64, 4x64);
// over is non-zero when some index is ≥ 64.
TEXT ·lut64Dot2AVX2(SB), NOSPLIT, $0-44
	MOVQ tab+0(FP), AX
	MOVQ idx+8(FP), SI
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	VPXOR  Y15, Y15, Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

q8:
	PREFETCHT0 1024(SI)
	CMPQ CX, $8
	JLT  qdone
	VMOVUPS     (DI), Y13
	VPMOVZXBD   (SI), Y4
	VPOR        Y4, Y15, Y15
	VPSLLD      $28, Y4, Y5
	VPSLLD      $27, Y4, Y6
	VPSLLD      $26, Y4, Y7
	LOOKUP64(0, Y8)
	VFMADD231PS Y13, Y8, Y0
	LOOKUP64(256, Y12)
	VFMADD231PS Y13, Y12, Y1
	ADDQ        $8, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         q8

qdone:
	VMOVUPS Y1, Y14
	HSUM
	VMOVSS  X0, s0+32(FP)
	VMOVUPS Y14, Y0
	HSUM
	VMOVSS  X0, s1+36(FP)
	VPSRLD $6, Y15, Y15
	XORL   AX, AX
	VPTEST Y15, Y15
	SETNE  AL
	MOVL   AX, over+40(FP)
	VZEROUPPER
	RET
