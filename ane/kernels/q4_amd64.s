//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"
#include "stream_amd64.h"

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
// adds pairs to int32 (|code|, |q| ≤ 8191: exact), and both
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

// MASKS: IDX's constants, Y15's 0x0F bytes and Y2's shift counts (0 for
// lane 0, 4 for lane 1). Clobbers DX.
#define MASKS \
	MOVQ         $0x0f0f0f0f0f0f0f0f, DX; \
	VMOVQ        DX, X15; \
	VPBROADCASTQ X15, Y15; \
	MOVQ         $4, DX; \
	VMOVQ        DX, X2; \
	VPBROADCASTD X2, X2; \
	VPERMQ       $0x4e, Y2, Y2

#define SETUP(off) \
	MOVQ   p+off(FP), SI; \
	MOVQ   q+off+8(FP), DI; \
	MOVQ   scale+off+16(FP), BX; \
	MOVQ   blocks+off+24(FP), CX; \
	MASKS; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y8, Y8, Y8

// ROWSETUP: the per-call arguments of the VNNI kernels from off on (p,
// stride, q, scale, blocks, rows, out) into SI, R9, R10, R11, R12, R13,
// R14.
#define ROWSETUP(off) \
	MOVQ p+off(FP), SI; \
	MOVQ stride+off+8(FP), R9; \
	MOVQ q+off+16(FP), R10; \
	MOVQ scale+off+24(FP), R11; \
	MOVQ blocks+off+32(FP), R12; \
	MOVQ rows+off+40(FP), R13; \
	MOVQ out+off+48(FP), R14

// ROWSTART: the next row (at SI, remembered in AX) from the first block
// of q and its scales.
#define ROWSTART \
	MOVQ SI, AX; \
	MOVQ R10, DI; \
	MOVQ R11, BX; \
	MOVQ R12, CX

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

// The batch kernels (q4batch.go): one packed row against the Q16 blocks
// of G = 8 or 4 tokens, stored by block (token k's block at k·64 bytes
// into the block's G·64), their run scales by run (k·4 bytes into the
// run's G·4). Each block's indices are widened and looked up once (CODES)
// and meet every token's block as ROW meets one (BTOK); each token keeps
// the single-row kernel's int32 lanes through a run and its float lanes,
// which stay in acc (token k's eight at k·32 bytes) between runs. Y1 and
// Y5 are the temporaries, Y3 and Y4 the codes; Y0, Y6–Y11 and Y14 the
// tokens' int32 lanes.

// CODES: the block's 32 codes (indices in Y1, tables Y13 and Y12) as
// int16 in ROW's order, into Y3 and Y4. Clobbers Y1, Y5.
#define CODES \
	VPSHUFB    Y1, Y13, Y5; \
	VPSHUFB    Y1, Y12, Y1; \
	VPUNPCKLBW Y1, Y5, Y3; \
	VPUNPCKHBW Y1, Y5, Y4

// BTOK(off, acc): ROW's products for the token whose block is at off(DI).
#define BTOK(off, acc) \
	VPMADDWD off(DI), Y3, Y5; \
	VPMADDWD off+32(DI), Y4, Y1; \
	VPADDD   Y1, Y5, Y5; \
	VPADDD   Y5, acc, acc

// BFLUSH(acc, soff, aoff): a run's end for one token: its int32 lanes
// converted and added to its float lanes at aoff(DX) times its run scale
// at soff(BX), as the single-row kernel's FMA does.
#define BFLUSH(acc, soff, aoff) \
	VCVTDQ2PS    acc, acc; \
	VBROADCASTSS soff(BX), Y5; \
	VMOVUPS      aoff(DX), Y1; \
	VFMADD231PS  Y5, acc, Y1; \
	VMOVUPS      Y1, aoff(DX)

// The tokens' int32 lanes cleared (BZERO4, BZERO8), their blocks' products
// (BTOKS4, BTOKS8) and their runs' ends (BFLUSH4, BFLUSH8), for 4 and 8
// tokens.
#define BZERO4 \
	VPXOR Y0, Y0, Y0; \
	VPXOR Y6, Y6, Y6; \
	VPXOR Y7, Y7, Y7; \
	VPXOR Y8, Y8, Y8

#define BZERO8 \
	BZERO4; \
	VPXOR Y9, Y9, Y9; \
	VPXOR Y10, Y10, Y10; \
	VPXOR Y11, Y11, Y11; \
	VPXOR Y14, Y14, Y14

#define BTOKS4 \
	BTOK(0, Y0); \
	BTOK(64, Y6); \
	BTOK(128, Y7); \
	BTOK(192, Y8)

#define BTOKS8 \
	BTOKS4; \
	BTOK(256, Y9); \
	BTOK(320, Y10); \
	BTOK(384, Y11); \
	BTOK(448, Y14)

#define BFLUSH4 \
	BFLUSH(Y0, 0, 0); \
	BFLUSH(Y6, 4, 64); \
	BFLUSH(Y7, 8, 128); \
	BFLUSH(Y8, 12, 192)

#define BFLUSH8 \
	BFLUSH4; \
	BFLUSH(Y9, 16, 256); \
	BFLUSH(Y10, 20, 320); \
	BFLUSH(Y11, 24, 384); \
	BFLUSH(Y14, 28, 448)

#define BSETUP \
	MOVQ           lo+0(FP), AX; \
	VBROADCASTI128 (AX), Y13; \
	MOVQ           hi+8(FP), AX; \
	VBROADCASTI128 (AX), Y12; \
	MASKS; \
	MOVQ           p+16(FP), SI; \
	MOVQ           q+24(FP), DI; \
	MOVQ           scale+32(FP), BX; \
	MOVQ           blocks+40(FP), CX; \
	MOVQ           acc+48(FP), DX

// BRUN: R8 = the blocks of the next run (min(CX, 8), taken off CX).
#define BRUN \
	MOVQ    $8, R8; \
	CMPQ    CX, R8; \
	CMOVQLT CX, R8; \
	SUBQ    R8, CX

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

// func lutQ16Dot8AVX2(lo, hi *[16]uint8, p *uint8, q *int16, scale *float32, blocks int, acc *[8][16]float32)
TEXT ·lutQ16Dot8AVX2(SB), NOSPLIT, $0-56
	BSETUP

b8run:
	TESTQ CX, CX
	JEQ   b8done
	BRUN
	BZERO8

b8blk:
	PREFETCHT0 1024(SI)
	IDX
	CODES
	BTOKS8
	ADDQ       $16, SI
	ADDQ       $512, DI
	DECQ       R8
	JNE        b8blk
	BFLUSH8
	ADDQ       $32, BX
	JMP        b8run

b8done:
	VZEROUPPER
	RET

// func lutQ16Dot4AVX2(lo, hi *[16]uint8, p *uint8, q *int16, scale *float32, blocks int, acc *[8][16]float32)
TEXT ·lutQ16Dot4AVX2(SB), NOSPLIT, $0-56
	BSETUP

b4run:
	TESTQ CX, CX
	JEQ   b4done
	BRUN
	BZERO4

b4blk:
	PREFETCHT0 1024(SI)
	IDX
	CODES
	BTOKS4
	ADDQ       $16, SI
	ADDQ       $256, DI
	DECQ       R8
	JNE        b4blk
	BFLUSH4
	ADDQ       $16, BX
	JMP        b4run

b4done:
	VZEROUPPER
	RET

// The AVX-512 VNNI forms (simdVNNI) read Q16 in pairs of blocks (Q16's
// pairs layout): one VPMOVZXBW widens a pair's 32 packed bytes to words;
// VPERMW reads the low 5 bits of each, so with the 16 codes twice in its
// 32-word table (intCodebook.w32) the low nibbles need no mask, and after
// VPSRLW $4 the high ones look up the same way. VPDPWSSD multiplies the
// codes by the Q16 words and adds pairs to int32 lanes: exact, and 16
// products a lane a run of Q16Group blocks (q4.go's bound is 32). Per
// run one VCVTDQ2PS and one FMA by the run's scale, as in the AVX2 form.
// A whole run (8 blocks, 4 pairs) is one straight stretch whose first
// pairs set the int32 accumulators (VPMADDWD) and the rest add to them:
// the per-run work (zeroing, loop control, sums) costs as much as the
// lookups otherwise (a cache-resident throw-away test: 0.83 → 0.5 ns a
// block). The last, shorter run loops over pairs; a lone last block (in
// order) runs in YMM into its own accumulator, since a YMM write clears
// the upper half of a ZMM register.

// VLOOK(tab, poff, lo, hi): the codes of the pair at poff(SI), the low
// nibbles' into lo and the high ones' into hi.
#define VLOOK(tab, poff, lo, hi) \
	VPMOVZXBW poff(SI), lo; \
	VPSRLW    $4, lo, hi; \
	VPERMW    tab, lo, lo; \
	VPERMW    tab, hi, hi

// VPAIR(op, poff, qoff, a0, a1): one pair into the int32 accumulators a0
// (low nibbles) and a1 (high), op VPMADDWD (set) or VPDPWSSD (add);
// table Z31; clobbers Z2, Z3.
#define VPAIR(op, poff, qoff, a0, a1) \
	VLOOK(Z31, poff, Z2, Z3); \
	op qoff(DI), Z2, a0; \
	op qoff+64(DI), Z3, a1

// VLOOK2(op, poff, qoff, a0, a1, b0, b1): the pair at poff(SI) widened
// once, looked up in both rows' tables (Z31, Z30) and multiplied by the
// Q16 words at qoff(DI) into the first row's a0, a1 and the second's b0,
// b1 (op as in VPAIR); clobbers Z2–Z6, Z8.
#define VLOOK2(op, poff, qoff, a0, a1, b0, b1) \
	VPMOVZXBW poff(SI), Z2; \
	VPSRLW    $4, Z2, Z3; \
	VPERMW    Z31, Z2, Z4; \
	VPERMW    Z31, Z3, Z5; \
	VPERMW    Z30, Z2, Z2; \
	VPERMW    Z30, Z3, Z3; \
	VMOVDQU32 qoff(DI), Z6; \
	VMOVDQU32 qoff+64(DI), Z8; \
	op        Z6, Z4, a0; \
	op        Z8, Z5, a1; \
	op        Z6, Z2, b0; \
	op        Z8, Z3, b1

// VLONE(tab, acc): the lone block at (SI), (DI) added to Y-register acc;
// clobbers Y2, Y3.
#define VLONE(tab, acc) \
	VPMOVZXBW (SI), Y2; \
	VPSRLW    $4, Y2, Y3; \
	VPERMW    tab, Y2, Y2; \
	VPERMW    tab, Y3, Y3; \
	VPDPWSSD  (DI), Y2, acc; \
	VPDPWSSD  32(DI), Y3, acc

// VFLUSH(a, acc): the run's int32 sums a converted and added to the float
// accumulator acc times the run's scale (Z7).
#define VFLUSH(a, acc) \
	VCVTDQ2PS   a, a; \
	VFMADD231PS Z7, a, acc

// func lutQ16DotVNNI(tab *[32]int16, p *uint8, stride int, q *int16, scale *float32, blocks, rows int, out *float32)
//
// out[r] = the sum for packed row r (at p + r·stride): one call for all a
// worker's rows of a matrix, so the per-call work (Go's call, the setup,
// the final sums) is paid once per product rather than once per row.
TEXT ·lutQ16DotVNNI(SB), NOSPLIT, $0-64
	MOVQ      tab+0(FP), AX
	VMOVDQU16 (AX), Z31
	ROWSETUP(8)

vrow:
	ROWSTART
	VPXORD Z0, Z0, Z0

vrun:
	CMPQ         CX, $8
	JLT          vlast
	VBROADCASTSS (BX), Z7
	PREFETCHT0   AHEAD(SI)
	PREFETCHT0   AHEAD+64(SI)
	VPAIR(VPMADDWD, 0, 0, Z9, Z10)
	VPAIR(VPMADDWD, 32, 128, Z11, Z12)
	VPAIR(VPDPWSSD, 64, 256, Z9, Z10)
	VPAIR(VPDPWSSD, 96, 384, Z11, Z12)
	VPADDD       Z10, Z9, Z9
	VPADDD       Z12, Z11, Z11
	VPADDD       Z11, Z9, Z9
	VFLUSH(Z9, Z0)
	ADDQ         $32, BX
	ADDQ         $128, SI
	ADDQ         $512, DI
	SUBQ         $8, CX
	JMP          vrun

vlast:
	TESTQ        CX, CX
	JEQ          vdone
	VBROADCASTSS (BX), Z7
	VPXORD       Z9, Z9, Z9
	VPXORD       Z10, Z10, Z10
	VPXORD       Z13, Z13, Z13

vpair:
	CMPQ CX, $2
	JLT  vlone
	VPAIR(VPDPWSSD, 0, 0, Z9, Z10)
	ADDQ $32, SI
	ADDQ $128, DI
	SUBQ $2, CX
	JMP  vpair

vlone:
	TESTQ  CX, CX
	JEQ    vend
	VLONE(Y31, Y13)

vend:
	VPADDD Z10, Z9, Z9
	VPADDD Z13, Z9, Z9
	VFLUSH(Z9, Z0)

vdone:
	HSUM512
	VMOVSS X0, (R14)
	ADDQ   $4, R14
	LEAQ   (AX)(R9*1), SI
	DECQ   R13
	JNE    vrow
	VZEROUPPER
	RET

// func lutQ16Dot2VNNI(tab0, tab1 *[32]int16, p *uint8, stride int, q *int16, scale *float32, blocks, rows int, out *float32)
//
// Two rows sharing the indices (tables Z31, Z30), for each packed row r:
// out[2r], out[2r+1]. Each pair is widened once and its activations meet
// both rows' codes; per row two int32 accumulators (low and high nibbles;
// a run's pairs are far enough apart to cover VPDPWSSD's latency), one
// for a lone block, and one float accumulator (Z0, Z1).
TEXT ·lutQ16Dot2VNNI(SB), NOSPLIT, $0-72
	MOVQ      tab0+0(FP), AX
	VMOVDQU16 (AX), Z31
	MOVQ      tab1+8(FP), AX
	VMOVDQU16 (AX), Z30
	ROWSETUP(16)

wrow:
	ROWSTART
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1

wrun:
	CMPQ         CX, $8
	JLT          wlast
	VBROADCASTSS (BX), Z7
	PREFETCHT0   AHEAD(SI)
	PREFETCHT0   AHEAD+64(SI)
	VLOOK2(VPMADDWD, 0, 0, Z9, Z10, Z11, Z12)
	VLOOK2(VPDPWSSD, 32, 128, Z9, Z10, Z11, Z12)
	VLOOK2(VPDPWSSD, 64, 256, Z9, Z10, Z11, Z12)
	VLOOK2(VPDPWSSD, 96, 384, Z9, Z10, Z11, Z12)
	VPADDD       Z10, Z9, Z9
	VPADDD       Z12, Z11, Z11
	VFLUSH(Z9, Z0)
	VFLUSH(Z11, Z1)
	ADDQ         $32, BX
	ADDQ         $128, SI
	ADDQ         $512, DI
	SUBQ         $8, CX
	JMP          wrun

wlast:
	TESTQ        CX, CX
	JEQ          wdone
	VBROADCASTSS (BX), Z7
	VPXORD       Z9, Z9, Z9
	VPXORD       Z10, Z10, Z10
	VPXORD       Z11, Z11, Z11
	VPXORD       Z12, Z12, Z12
	VPXORD       Z17, Z17, Z17
	VPXORD       Z18, Z18, Z18

wpair:
	CMPQ CX, $2
	JLT  wlone
	VLOOK2(VPDPWSSD, 0, 0, Z9, Z10, Z11, Z12)
	ADDQ $32, SI
	ADDQ $128, DI
	SUBQ $2, CX
	JMP  wpair

wlone:
	TESTQ CX, CX
	JEQ   wend
	VLONE(Y31, Y17)
	VLONE(Y30, Y18)

wend:
	VPADDD Z10, Z9, Z9
	VPADDD Z17, Z9, Z9
	VPADDD Z12, Z11, Z11
	VPADDD Z18, Z11, Z11
	VFLUSH(Z9, Z0)
	VFLUSH(Z11, Z1)

wdone:
	VMOVAPS Z1, Z14
	HSUM512
	VMOVSS  X0, (R14)
	VMOVAPS Z14, Z0
	HSUM512
	VMOVSS  X0, 4(R14)
	ADDQ    $8, R14
	LEAQ    (AX)(R9*1), SI
	DECQ    R13
	JNE     wrow
	VZEROUPPER
	RET

// The VNNI batch kernels: one packed row against 8 (or 4) tokens' Q16
// blocks, slot-interleaved by block (q16Batch) in the pairs layout. Per
// pair of blocks the codes are looked up once (VPMOVZXBW, VPSRLW, two
// VPERMW) and meet each token's words in two VPDPWSSD into that token's
// int32 lanes: the lanes lutQ16DotVNNI's accumulators hold for the same
// token (int32 sums are exact, so their order does not matter). Per run
// each token's lanes are converted and added to its 16 float lanes by
// that kernel's FMA; the float lanes come from acc and go back to it, so
// the caller's column tiles continue each token's chain.
//
// Registers: table Z31, codes Z2 and Z3, a lone block's products Z1, the
// run scale Z7, the tokens' int32 lanes Z8–Z15, their float lanes
// Z16–Z23.

// VBTOK(lo, hi, acc): one token's products of a pair, its low nibbles'
// words at lo(DI) and its high ones' at hi(DI).
#define VBTOK(lo, hi, acc) \
	VPDPWSSD lo(DI), Z2, acc; \
	VPDPWSSD hi(DI), Z3, acc

// VBLONE(off, acc): one token's products of a lone (in-order) block at
// off(DI) into acc.
#define VBLONE(off, acc) \
	VPXORD   Z1, Z1, Z1; \
	VPDPWSSD off(DI), Y2, Y1; \
	VPDPWSSD off+32(DI), Y3, Y1; \
	VPADDD   Z1, acc, acc

// VBFLUSH(soff, a, f): a run's end for one token: its int32 lanes a
// converted and added to its float lanes f times its run scale at
// soff(BX).
#define VBFLUSH(soff, a, f) \
	VCVTDQ2PS    a, a; \
	VBROADCASTSS soff(BX), Z7; \
	VFMADD231PS  Z7, a, f

#define VBZERO4 \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11

#define VBZERO8 \
	VBZERO4; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15

// VBLOOK: the codes of the pair at (SI): low nibbles' into Z2, high
// ones' into Z3.
#define VBLOOK \
	PREFETCHT0 1024(SI); \
	VLOOK(Z31, 0, Z2, Z3)

// VBLOOK1: the codes of the lone block at (SI) into Y2 and Y3.
#define VBLOOK1 \
	VPMOVZXBW (SI), Y2; \
	VPSRLW    $4, Y2, Y3; \
	VPERMW    Y31, Y2, Y2; \
	VPERMW    Y31, Y3, Y3

// VBLANES4: the first four tokens' float lanes from acc (DX).
#define VBLANES4 \
	VMOVUPS 0(DX), Z16; \
	VMOVUPS 64(DX), Z17; \
	VMOVUPS 128(DX), Z18; \
	VMOVUPS 192(DX), Z19

// func lutQ16Dot8VNNI(tab *[32]int16, p *uint8, q *int16, scale *float32, blocks int, acc *[8][16]float32)
TEXT ·lutQ16Dot8VNNI(SB), NOSPLIT, $0-48
	MOVQ      tab+0(FP), AX
	VMOVDQU16 (AX), Z31
	MOVQ      p+8(FP), SI
	MOVQ      q+16(FP), DI
	MOVQ      scale+24(FP), BX
	MOVQ      blocks+32(FP), CX
	MOVQ      acc+40(FP), DX
	VBLANES4
	VMOVUPS 256(DX), Z20
	VMOVUPS 320(DX), Z21
	VMOVUPS 384(DX), Z22
	VMOVUPS 448(DX), Z23

v8run:
	TESTQ CX, CX
	JEQ   v8done
	BRUN
	VBZERO8

v8pair:
	CMPQ R8, $2
	JLT  v8lone
	VBLOOK
	VBTOK(0, 512, Z8)
	VBTOK(64, 576, Z9)
	VBTOK(128, 640, Z10)
	VBTOK(192, 704, Z11)
	VBTOK(256, 768, Z12)
	VBTOK(320, 832, Z13)
	VBTOK(384, 896, Z14)
	VBTOK(448, 960, Z15)
	ADDQ $32, SI
	ADDQ $1024, DI
	SUBQ $2, R8
	JMP  v8pair

v8lone:
	TESTQ R8, R8
	JEQ   v8flush
	VBLOOK1
	VBLONE(0, Z8)
	VBLONE(64, Z9)
	VBLONE(128, Z10)
	VBLONE(192, Z11)
	VBLONE(256, Z12)
	VBLONE(320, Z13)
	VBLONE(384, Z14)
	VBLONE(448, Z15)
	ADDQ  $16, SI
	ADDQ  $512, DI

v8flush:
	VBFLUSH(0, Z8, Z16)
	VBFLUSH(4, Z9, Z17)
	VBFLUSH(8, Z10, Z18)
	VBFLUSH(12, Z11, Z19)
	VBFLUSH(16, Z12, Z20)
	VBFLUSH(20, Z13, Z21)
	VBFLUSH(24, Z14, Z22)
	VBFLUSH(28, Z15, Z23)
	ADDQ $32, BX
	JMP  v8run

v8done:
	VMOVUPS Z16, 0(DX)
	VMOVUPS Z17, 64(DX)
	VMOVUPS Z18, 128(DX)
	VMOVUPS Z19, 192(DX)
	VMOVUPS Z20, 256(DX)
	VMOVUPS Z21, 320(DX)
	VMOVUPS Z22, 384(DX)
	VMOVUPS Z23, 448(DX)
	VZEROUPPER
	RET

// func lutQ16Dot4VNNI(tab *[32]int16, p *uint8, q *int16, scale *float32, blocks int, acc *[8][16]float32)
TEXT ·lutQ16Dot4VNNI(SB), NOSPLIT, $0-48
	MOVQ      tab+0(FP), AX
	VMOVDQU16 (AX), Z31
	MOVQ      p+8(FP), SI
	MOVQ      q+16(FP), DI
	MOVQ      scale+24(FP), BX
	MOVQ      blocks+32(FP), CX
	MOVQ      acc+40(FP), DX
	VBLANES4

v4run:
	TESTQ CX, CX
	JEQ   v4done
	BRUN
	VBZERO4

v4pair:
	CMPQ R8, $2
	JLT  v4lone
	VBLOOK
	VBTOK(0, 256, Z8)
	VBTOK(64, 320, Z9)
	VBTOK(128, 384, Z10)
	VBTOK(192, 448, Z11)
	ADDQ $32, SI
	ADDQ $512, DI
	SUBQ $2, R8
	JMP  v4pair

v4lone:
	TESTQ R8, R8
	JEQ   v4flush
	VBLOOK1
	VBLONE(0, Z8)
	VBLONE(64, Z9)
	VBLONE(128, Z10)
	VBLONE(192, Z11)
	ADDQ  $16, SI
	ADDQ  $256, DI

v4flush:
	VBFLUSH(0, Z8, Z16)
	VBFLUSH(4, Z9, Z17)
	VBFLUSH(8, Z10, Z18)
	VBFLUSH(12, Z11, Z19)
	ADDQ $16, BX
	JMP  v4run

v4done:
	VMOVUPS Z16, 0(DX)
	VMOVUPS Z17, 64(DX)
	VMOVUPS Z18, 128(DX)
	VMOVUPS Z19, 192(DX)
	VZEROUPPER
	RET
