//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// The integer Q8 kernels (q8_arm64.go): per 32-value block the exact int32
// sum of the 32 products w·q in four lanes of V9, converted (SCVTF4S,
// exact: |lane| ≤ 8·128·127 < 2^24) and added to a float accumulator times
// the block's scale (one FMLA) into V0.

// Q8SCALE: Vacc += float(V9) × the next block's scale (R2, post-incremented).
#define Q8SCALE(acc) \
	VLD1R.P 4(R2), [V8.S4]; \
	SCVTF4S(9, 9); \
	VFMLA   V9.S4, V8.S4, acc.S4

// Q8LOAD loads the next block's weights (V4, V5) and codes (V6, V7).
#define Q8LOAD \
	VLD1.P 32(R0), [V4.B16, V5.B16]; \
	VLD1.P 32(R1), [V6.B16, V7.B16]

// Q8SDOT: the block's products summed in V9 by SDOT, four bytes a lane.
#define Q8SDOT \
	Q8LOAD; \
	VEOR V9.B16, V9.B16, V9.B16; \
	SDOT4S(9, 4, 6); \
	SDOT4S(9, 5, 7)

// Q8SMULL: the same sum without SDOT: SMULL to int16 (|w·q| ≤ 128·128
// fits), SADALP pairs into int32.
#define Q8SMULL \
	Q8LOAD; \
	SMULL8H(10, 4, 6); \
	SMULL28H(11, 4, 6); \
	SMULL8H(12, 5, 7); \
	SMULL28H(13, 5, 7); \
	VEOR V9.B16, V9.B16, V9.B16; \
	SADALP4S(9, 10); \
	SADALP4S(9, 11); \
	SADALP4S(9, 12); \
	SADALP4S(9, 13)

// func int8Q8DotNEON(w *int8, q *int8, scale *float32, blocks int, sdot bool) float32
// One block a step, its sum by SDOT when sdot (a branch the CPU predicts
// every time), else by SMULL.
TEXT ·int8Q8DotNEON(SB), NOSPLIT, $0-44
	MOVD  w+0(FP), R0
	MOVD  q+8(FP), R1
	MOVD  scale+16(FP), R2
	MOVD  blocks+24(FP), R3
	MOVBU sdot+32(FP), R4
	VEOR  V0.B16, V0.B16, V0.B16

b1:
	CBZ R3, done
	CBZ R4, smull
	Q8SDOT
	B   scaled

smull:
	Q8SMULL

scaled:
	Q8SCALE(V0)
	SUB $1, R3
	B   b1

done:
	HSUM4(0, 1)
	FMOVS F0, ret+40(FP)
	RET
