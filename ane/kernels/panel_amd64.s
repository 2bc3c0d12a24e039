//go:build !purego

#include "textflag.h"
#include "lookup_amd64.h"

// The panel kernel of the matrix-matrix path (panel.go): twelve weight
// rows, decoded to float32, against 32 activation rows stored column by
// column. Per column, two loads bring the column's 32 activations, and
// each row's weight, broadcast, meets them in two FMAs: 24 FMAs per 14
// loads and no lookups, so the FMA ports set the pace.

// ROWFMA(addr, a, b): row weight at addr (broadcast) times the column's
// activations Z24 (tokens 0–15) and Z25 (16–31) into a and b.
#define ROWFMA(addr, a, b) \
	VBROADCASTSS addr, Z26; \
	VFMADD231PS  Z24, Z26, a; \
	VFMADD231PS  Z25, Z26, b

// func panel12x32AVX512(w *float32, wstride int, xt *float32, cols int, out *[12 * 32]float32)
// Row i's weights are at w + i·wstride bytes; column c's 32 activations at
// xt + 128·c. out[32i + t] += Σ_c w_i[c]·x_t[c], one FMA chain per
// output in column order, continued from out's value (a float32 store and
// load lose nothing, so a row split into column tiles gives the same chain).
TEXT ·panel12x32AVX512(SB), NOSPLIT, $0-40
	MOVQ   w+0(FP), SI
	MOVQ   wstride+8(FP), DX
	MOVQ   xt+16(FP), DI
	MOVQ   cols+24(FP), CX
	LEAQ   (DX)(DX*2), BX
	LEAQ   (SI)(DX*4), R8
	LEAQ   (R8)(DX*4), R9
	MOVQ   out+32(FP), AX
	VMOVUPS 0(AX), Z0
	VMOVUPS 64(AX), Z1
	VMOVUPS 128(AX), Z2
	VMOVUPS 192(AX), Z3
	VMOVUPS 256(AX), Z4
	VMOVUPS 320(AX), Z5
	VMOVUPS 384(AX), Z6
	VMOVUPS 448(AX), Z7
	VMOVUPS 512(AX), Z8
	VMOVUPS 576(AX), Z9
	VMOVUPS 640(AX), Z10
	VMOVUPS 704(AX), Z11
	VMOVUPS 768(AX), Z12
	VMOVUPS 832(AX), Z13
	VMOVUPS 896(AX), Z14
	VMOVUPS 960(AX), Z15
	VMOVUPS 1024(AX), Z16
	VMOVUPS 1088(AX), Z17
	VMOVUPS 1152(AX), Z18
	VMOVUPS 1216(AX), Z19
	VMOVUPS 1280(AX), Z20
	VMOVUPS 1344(AX), Z21
	VMOVUPS 1408(AX), Z22
	VMOVUPS 1472(AX), Z23
	TESTQ  CX, CX
	JEQ    done

col:
	VMOVUPS (DI), Z24
	VMOVUPS 64(DI), Z25
	ROWFMA((SI), Z0, Z1)
	ROWFMA((SI)(DX*1), Z2, Z3)
	ROWFMA((SI)(DX*2), Z4, Z5)
	ROWFMA((SI)(BX*1), Z6, Z7)
	ROWFMA((R8), Z8, Z9)
	ROWFMA((R8)(DX*1), Z10, Z11)
	ROWFMA((R8)(DX*2), Z12, Z13)
	ROWFMA((R8)(BX*1), Z14, Z15)
	ROWFMA((R9), Z16, Z17)
	ROWFMA((R9)(DX*1), Z18, Z19)
	ROWFMA((R9)(DX*2), Z20, Z21)
	ROWFMA((R9)(BX*1), Z22, Z23)
	ADDQ    $4, SI
	ADDQ    $4, R8
	ADDQ    $4, R9
	ADDQ    $128, DI
	DECQ    CX
	JNE     col

done:
	VMOVUPS Z0, 0(AX)
	VMOVUPS Z1, 64(AX)
	VMOVUPS Z2, 128(AX)
	VMOVUPS Z3, 192(AX)
	VMOVUPS Z4, 256(AX)
	VMOVUPS Z5, 320(AX)
	VMOVUPS Z6, 384(AX)
	VMOVUPS Z7, 448(AX)
	VMOVUPS Z8, 512(AX)
	VMOVUPS Z9, 576(AX)
	VMOVUPS Z10, 640(AX)
	VMOVUPS Z11, 704(AX)
	VMOVUPS Z12, 768(AX)
	VMOVUPS Z13, 832(AX)
	VMOVUPS Z14, 896(AX)
	VMOVUPS Z15, 960(AX)
	VMOVUPS Z16, 1024(AX)
	VMOVUPS Z17, 1088(AX)
	VMOVUPS Z18, 1152(AX)
	VMOVUPS Z19, 1216(AX)
	VMOVUPS Z20, 1280(AX)
	VMOVUPS Z21, 1344(AX)
	VMOVUPS Z22, 1408(AX)
	VMOVUPS Z23, 1472(AX)
	VZEROUPPER
	RET

// func decodeNibAVX512(tab *[16]float32, p *uint8, s float32, out *float32, blocks int)
// out[j] = tab[index j]·s for blocks whole 32-index blocks of a packed
// row (indices 0–15 in the low nibbles, 16–31 in the high ones).
TEXT ·decodeNibAVX512(SB), NOSPLIT, $0-40
	MOVQ         tab+0(FP), AX
	MOVQ         p+8(FP), SI
	VBROADCASTSS s+16(FP), Z3
	MOVQ         out+24(FP), DI
	MOVQ         blocks+32(FP), CX
	VMOVUPS      (AX), Z4
	TESTQ        CX, CX
	JEQ          ddone

dblk:
	PREFETCHT0 256(SI)
	VPMOVZXBD  (SI), Z0
	VPSRLD    $4, Z0, Z1
	VPERMPS   Z4, Z0, Z0
	VPERMPS   Z4, Z1, Z1
	VMULPS    Z3, Z0, Z0
	VMULPS    Z3, Z1, Z1
	VMOVUPS   Z0, (DI)
	VMOVUPS   Z1, 64(DI)
	ADDQ      $16, SI
	ADDQ      $128, DI
	DECQ      CX
	JNE       dblk

ddone:
	VZEROUPPER
	RET

// The AVX2 form of the panel kernel: 16 YMM registers hold a 6-row ×
// 16-token block (12 accumulators, two activation vectors, a broadcast),
// so panel12x32 calls it four times per 12 × 32 block. Per column: two
// loads, six broadcasts, twelve FMAs. Each output is the same FMA chain
// as panel12x32AVX512's (same order, same start), so both kernels give
// the same bits.

// ROWFMA8(addr, a, b): row weight at addr (broadcast) times the column's
// activations Y12 (tokens 0–7 of the half) and Y13 (8–15) into a and b.
#define ROWFMA8(addr, a, b) \
	VBROADCASTSS addr, Y14; \
	VFMADD231PS  Y12, Y14, a; \
	VFMADD231PS  Y13, Y14, b

// func panel6x16AVX2(w *float32, wstride int, xt *float32, cols int, out *float32)
// Row i's weights at w + i·wstride bytes; column c's 16 activations at
// xt + 128·c (one half of a 32-token column). out[32i + t] += Σ_c
// w_i[c]·x_t[c] for i < 6, t < 16, continued from out's value.
TEXT ·panel6x16AVX2(SB), NOSPLIT, $0-40
	MOVQ    w+0(FP), SI
	MOVQ    wstride+8(FP), DX
	MOVQ    xt+16(FP), DI
	MOVQ    cols+24(FP), CX
	MOVQ    out+32(FP), AX
	LEAQ    (DX)(DX*2), BX
	LEAQ    (SI)(DX*4), R8
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS 128(AX), Y2
	VMOVUPS 160(AX), Y3
	VMOVUPS 256(AX), Y4
	VMOVUPS 288(AX), Y5
	VMOVUPS 384(AX), Y6
	VMOVUPS 416(AX), Y7
	VMOVUPS 512(AX), Y8
	VMOVUPS 544(AX), Y9
	VMOVUPS 640(AX), Y10
	VMOVUPS 672(AX), Y11
	TESTQ   CX, CX
	JEQ     hdone

hcol:
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	ROWFMA8((SI), Y0, Y1)
	ROWFMA8((SI)(DX*1), Y2, Y3)
	ROWFMA8((SI)(DX*2), Y4, Y5)
	ROWFMA8((SI)(BX*1), Y6, Y7)
	ROWFMA8((R8), Y8, Y9)
	ROWFMA8((R8)(DX*1), Y10, Y11)
	ADDQ    $4, SI
	ADDQ    $4, R8
	ADDQ    $128, DI
	DECQ    CX
	JNE     hcol

hdone:
	VMOVUPS Y0, 0(AX)
	VMOVUPS Y1, 32(AX)
	VMOVUPS Y2, 128(AX)
	VMOVUPS Y3, 160(AX)
	VMOVUPS Y4, 256(AX)
	VMOVUPS Y5, 288(AX)
	VMOVUPS Y6, 384(AX)
	VMOVUPS Y7, 416(AX)
	VMOVUPS Y8, 512(AX)
	VMOVUPS Y9, 544(AX)
	VMOVUPS Y10, 640(AX)
	VMOVUPS Y11, 672(AX)
	VZEROUPPER
	RET

// DECODE8(dst): the 8 indices in Y4 looked up in Y8:Y9 (LOOKUP16), times
// the scale Y3, stored at dst.
#define DECODE8(dst) \
	VPSLLD  $28, Y4, Y5; \
	LOOKUP16(Y8, Y9, Y7); \
	VMULPS  Y3, Y7, Y7; \
	VMOVUPS Y7, dst

// func decodeNibAVX2(tab *[16]float32, p *uint8, s float32, out *float32, blocks int)
// decodeNibAVX512's contract with 8 lanes: bytes 0–7 of a block give
// values 0–7 (low nibbles) and 16–23 (high), bytes 8–15 values 8–15
// and 24–31.
TEXT ·decodeNibAVX2(SB), NOSPLIT, $0-40
	MOVQ         tab+0(FP), AX
	MOVQ         p+8(FP), SI
	VBROADCASTSS s+16(FP), Y3
	MOVQ         out+24(FP), DI
	MOVQ         blocks+32(FP), CX
	VMOVUPS      (AX), Y8
	VMOVUPS      32(AX), Y9
	TESTQ        CX, CX
	JEQ          d2done

d2blk:
	PREFETCHT0 256(SI)
	VPMOVZXBD  (SI), Y4
	DECODE8(0(DI))
	VPSRLD    $4, Y4, Y4
	DECODE8(64(DI))
	VPMOVZXBD 8(SI), Y4
	DECODE8(32(DI))
	VPSRLD    $4, Y4, Y4
	DECODE8(96(DI))
	ADDQ      $16, SI
	ADDQ      $128, DI
	DECQ      CX
	JNE       d2blk

d2done:
	VZEROUPPER
	RET

// The integer panel kernel (panelq.go): six rows of int16 codes against
// 16 tokens' int16 activation codes stored as column pairs. Per pair,
// two loads bring the 16 tokens' pairs; each row's pair, broadcast, meets
// them in two VPMADDWD (16 multiply-adds each) added to int32 lanes. A
// block of 16 pairs (32 columns) sums exactly (laneSum, q4.go); then each lane
// is converted and added to out by one FMA with its token's block scale.

// ROWMADD(addr, a, b): row pair at addr (broadcast) times the pairs Y12
// (tokens 0–7) and Y13 (8–15), added to a and b.
#define ROWMADD(addr, a, b) \
	VPBROADCASTD addr, Y14; \
	VPMADDWD     Y12, Y14, Y15; \
	VPADDD       Y15, a, a; \
	VPMADDWD     Y13, Y14, Y15; \
	VPADDD       Y15, b, b

// KPAIR: one column pair of the six rows (addresses r0…r5) at token pair
// offset xo.
#define KPAIR(r0, r1, r2, r3, r4, r5, xo) \
	VMOVDQU xo(DI), Y12; \
	VMOVDQU xo+32(DI), Y13; \
	ROWMADD(r0, Y0, Y1); \
	ROWMADD(r1, Y2, Y3); \
	ROWMADD(r2, Y4, Y5); \
	ROWMADD(r3, Y6, Y7); \
	ROWMADD(r4, Y8, Y9); \
	ROWMADD(r5, Y10, Y11)

// FLUSH(acc, o, so, tmp): out[o] += float(acc)·scale[so], one rounding.
#define FLUSH(acc, o, so, tmp) \
	VCVTDQ2PS   acc, acc; \
	VMOVUPS     o(AX), tmp; \
	VFMADD231PS so(R9), acc, tmp; \
	VMOVUPS     tmp, o(AX)

// func panelQ6x16AVX2(w *int16, wstride int, xq *int32, xs *float32, blocks int, out *float32)
// Row i's codes at w + i·wstride bytes; column pair p's 16 tokens at
// xq + 128p bytes (32-token groups), block b's 16 scales at xs + 128b;
// row i's 16 outputs at out + 128i.
TEXT ·panelQ6x16AVX2(SB), NOSPLIT, $0-48
	MOVQ  w+0(FP), SI
	MOVQ  wstride+8(FP), DX
	MOVQ  xq+16(FP), DI
	MOVQ  xs+24(FP), R9
	MOVQ  blocks+32(FP), CX
	MOVQ  out+40(FP), AX
	LEAQ  (DX)(DX*2), BX
	LEAQ  (SI)(DX*4), R8
	TESTQ CX, CX
	JEQ   qdone

qblk:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	MOVQ  $4, R10

qpair:
	KPAIR((SI), (SI)(DX*1), (SI)(DX*2), (SI)(BX*1), (R8), (R8)(DX*1), 0)
	KPAIR(4(SI), 4(SI)(DX*1), 4(SI)(DX*2), 4(SI)(BX*1), 4(R8), 4(R8)(DX*1), 128)
	KPAIR(8(SI), 8(SI)(DX*1), 8(SI)(DX*2), 8(SI)(BX*1), 8(R8), 8(R8)(DX*1), 256)
	KPAIR(12(SI), 12(SI)(DX*1), 12(SI)(DX*2), 12(SI)(BX*1), 12(R8), 12(R8)(DX*1), 384)
	ADDQ $16, SI
	ADDQ $16, R8
	ADDQ $512, DI
	DECQ R10
	JNE  qpair

	FLUSH(Y0, 0, 0, Y12)
	FLUSH(Y1, 32, 32, Y13)
	FLUSH(Y2, 128, 0, Y12)
	FLUSH(Y3, 160, 32, Y13)
	FLUSH(Y4, 256, 0, Y12)
	FLUSH(Y5, 288, 32, Y13)
	FLUSH(Y6, 384, 0, Y12)
	FLUSH(Y7, 416, 32, Y13)
	FLUSH(Y8, 512, 0, Y12)
	FLUSH(Y9, 544, 32, Y13)
	FLUSH(Y10, 640, 0, Y12)
	FLUSH(Y11, 672, 32, Y13)
	ADDQ $128, R9
	DECQ CX
	JNE  qblk

qdone:
	VZEROUPPER
	RET

// DECODEQ16(nib, dst): the 16 indices in nib looked up in the code byte
// tables X8 (low bytes) and X9 (high), the 16 int16 codes stored at dst.
#define DECODEQ16(nib, dst) \
	VPSHUFB    nib, X8, X3; \
	VPSHUFB    nib, X9, X4; \
	VPUNPCKLBW X4, X3, X5; \
	VPUNPCKHBW X4, X3, X6; \
	VMOVDQU    X5, dst; \
	VMOVDQU    X6, 16+dst

// func decodeNibQ16AVX2(lo, hi *[16]uint8, p *uint8, out *int16, blocks int)
// The packed layout: byte j of a block holds index j (low nibble) and
// 16+j (high). A tile is 128 bytes of each of panelRows rows, too short a
// stream for the hardware prefetcher, so the loop fetches two tiles ahead
// as decodeNibAVX512 does (without it, on the Zen 4 VM of session 14,
// whose 32 MiB L3 does not hold the medium preset, the decode took 30% of
// the integer panel path waiting on DRAM).
TEXT ·decodeNibQ16AVX2(SB), NOSPLIT, $0-40
	MOVQ         lo+0(FP), AX
	MOVQ         hi+8(FP), BX
	MOVQ         p+16(FP), SI
	MOVQ         out+24(FP), DI
	MOVQ         blocks+32(FP), CX
	VMOVDQU      (AX), X8
	VMOVDQU      (BX), X9
	MOVL         $0x0f0f0f0f, DX
	VMOVD        DX, X7
	VPBROADCASTD X7, X7
	TESTQ        CX, CX
	JEQ          q16done

q16blk:
	PREFETCHT0 256(SI)
	VMOVDQU    (SI), X0
	VPAND      X7, X0, X1
	VPSRLW     $4, X0, X2
	VPAND      X7, X2, X2
	DECODEQ16(X1, 0(DI))
	DECODEQ16(X2, 32(DI))
	ADDQ       $16, SI
	ADDQ       $64, DI
	DECQ       CX
	JNE        q16blk

q16done:
	RET

// func decodeNibQ16VNNI(tab *[32]int16, p *uint8, out *int16, blocks int)
// Two blocks a step: one VPMOVZXBW of their 32 bytes gives the low
// nibbles' words (block b's then b+1's; VPERMW reads 5 index bits, which
// the doubled table absorbs), a shift the high ones'; the halves of the
// two lookups are the two blocks' codes in order. A lone last block runs
// in YMM (VPERMW there reads 4 bits). Prefetched as decodeNibQ16AVX2.
TEXT ·decodeNibQ16VNNI(SB), NOSPLIT, $0-32
	MOVQ      tab+0(FP), AX
	MOVQ      p+8(FP), SI
	MOVQ      out+16(FP), DI
	MOVQ      blocks+24(FP), CX
	VMOVDQU16 (AX), Z31

q16zpair:
	CMPQ          CX, $2
	JLT           q16zlone
	PREFETCHT0    256(SI)
	VPMOVZXBW     (SI), Z0
	VPSRLW        $4, Z0, Z1
	VPERMW        Z31, Z0, Z0
	VPERMW        Z31, Z1, Z1
	VMOVDQU       Y0, (DI)
	VMOVDQU       Y1, 32(DI)
	VEXTRACTI64X4 $1, Z0, 64(DI)
	VEXTRACTI64X4 $1, Z1, 96(DI)
	ADDQ          $32, SI
	ADDQ          $128, DI
	SUBQ          $2, CX
	JMP           q16zpair

q16zlone:
	TESTQ     CX, CX
	JEQ       q16zdone
	VPMOVZXBW (SI), Y0
	VPSRLW    $4, Y0, Y1
	VPERMW    Y31, Y0, Y0
	VPERMW    Y31, Y1, Y1
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)

q16zdone:
	VZEROUPPER
	RET

// The integer panel kernel with AVX-512 VNNI (simdVNNI): the whole 12-row
// × 32-token block in one call, the same data as panelQ6x16AVX2's. Per
// column pair two loads bring the 32 tokens' pairs (Z24: tokens 0–15,
// Z25: 16–31); each row's pair, broadcast, meets them in two VPDPWSSD (32
// multiply-adds each, the add fused) into the row's int32 lanes (Z0–Z23,
// two a row). A block of 16 pairs sums exactly, as in the AVX2 kernel
// (32 products a lane, laneSum); each lane then goes to out by the same
// conversion and FMA, so both kernels give the same bits.

// ZROW(addr, a, b): one row's pair at addr, broadcast, times Z24 and Z25
// into a and b.
#define ZROW(addr, a, b) \
	VPBROADCASTD addr, Z26; \
	VPDPWSSD     Z24, Z26, a; \
	VPDPWSSD     Z25, Z26, b

// ZPAIR(o, xo): column pair o/4 of the twelve rows (row bases SI, R8 =
// SI + 4·stride, R11 = SI + 8·stride; DX the stride, BX 3·stride) against
// the tokens' pairs at xo(DI).
#define ZPAIR(o, xo) \
	VMOVDQU32 xo(DI), Z24; \
	VMOVDQU32 xo+64(DI), Z25; \
	ZROW(o(SI), Z0, Z1); \
	ZROW(o(SI)(DX*1), Z2, Z3); \
	ZROW(o(SI)(DX*2), Z4, Z5); \
	ZROW(o(SI)(BX*1), Z6, Z7); \
	ZROW(o(R8), Z8, Z9); \
	ZROW(o(R8)(DX*1), Z10, Z11); \
	ZROW(o(R8)(DX*2), Z12, Z13); \
	ZROW(o(R8)(BX*1), Z14, Z15); \
	ZROW(o(R11), Z16, Z17); \
	ZROW(o(R11)(DX*1), Z18, Z19); \
	ZROW(o(R11)(DX*2), Z20, Z21); \
	ZROW(o(R11)(BX*1), Z22, Z23)

// ZFLUSH(acc, o, so): acc's 16 lanes converted and added to out at o(AX)
// times the token scales at so(R9).
#define ZFLUSH(acc, o, so) \
	VCVTDQ2PS   acc, acc; \
	VMOVUPS     o(AX), Z26; \
	VFMADD231PS so(R9), acc, Z26; \
	VMOVUPS     Z26, o(AX)

// func panelQ12x32VNNI(w *int16, wstride int, xq *int32, xs *float32, blocks int, out *[panelRows * panelTokens]float32)
// Row i's codes at w + i·wstride bytes; column pair p's 32 tokens at
// xq + 128p bytes, block b's 32 scales at xs + 128b; row i's 32 outputs
// at out + 128i.
TEXT ·panelQ12x32VNNI(SB), NOSPLIT, $0-48
	MOVQ  w+0(FP), SI
	MOVQ  wstride+8(FP), DX
	MOVQ  xq+16(FP), DI
	MOVQ  xs+24(FP), R9
	MOVQ  blocks+32(FP), CX
	MOVQ  out+40(FP), AX
	LEAQ  (DX)(DX*2), BX
	LEAQ  (SI)(DX*4), R8
	LEAQ  (R8)(DX*4), R11
	TESTQ CX, CX
	JEQ   zdone

zblk:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	MOVQ   $4, R10

zpair:
	ZPAIR(0, 0)
	ZPAIR(4, 128)
	ZPAIR(8, 256)
	ZPAIR(12, 384)
	ADDQ $16, SI
	ADDQ $16, R8
	ADDQ $16, R11
	ADDQ $512, DI
	DECQ R10
	JNE  zpair

	ZFLUSH(Z0, 0, 0)
	ZFLUSH(Z1, 64, 64)
	ZFLUSH(Z2, 128, 0)
	ZFLUSH(Z3, 192, 64)
	ZFLUSH(Z4, 256, 0)
	ZFLUSH(Z5, 320, 64)
	ZFLUSH(Z6, 384, 0)
	ZFLUSH(Z7, 448, 64)
	ZFLUSH(Z8, 512, 0)
	ZFLUSH(Z9, 576, 64)
	ZFLUSH(Z10, 640, 0)
	ZFLUSH(Z11, 704, 64)
	ZFLUSH(Z12, 768, 0)
	ZFLUSH(Z13, 832, 64)
	ZFLUSH(Z14, 896, 0)
	ZFLUSH(Z15, 960, 64)
	ZFLUSH(Z16, 1024, 0)
	ZFLUSH(Z17, 1088, 64)
	ZFLUSH(Z18, 1152, 0)
	ZFLUSH(Z19, 1216, 64)
	ZFLUSH(Z20, 1280, 0)
	ZFLUSH(Z21, 1344, 64)
	ZFLUSH(Z22, 1408, 0)
	ZFLUSH(Z23, 1472, 64)
	ADDQ $128, R9
	DECQ CX
	JNE  zblk

zdone:
	VZEROUPPER
	RET
