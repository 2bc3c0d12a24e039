//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// The integer Q8 kernels (q8_arm64.go): per 32-value block the exact int32
// sum of the 32 products w·q in four lanes of V9, converted (SCVTF4S,
// exact: |lane| ≤ 8·128·127 < 2^24) and added to a float accumulator times
// the block's scale (one FMLA); V0 and V1 alternate blocks.

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

// func int8Q8DotSDOT(w *int8, q *int8, scale *float32, blocks int) float32
TEXT ·int8Q8DotSDOT(SB), NOSPLIT, $0-36
	MOVD w+0(FP), R0
	MOVD q+8(FP), R1
	MOVD scale+16(FP), R2
	MOVD blocks+24(FP), R3
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16

s2:
	CMP $2, R3
	BLT s1
	Q8SDOT
	Q8SCALE(V0)
	Q8SDOT
	Q8SCALE(V1)
	SUB $2, R3
	B   s2

s1:
	CBZ R3, sdone
	Q8SDOT
	Q8SCALE(V0)

sdone:
	FADD4S(0, 0, 1)
	HSUM4(0, 1)
	FMOVS F0, ret+32(FP)
	RET

// func int8Q8DotNEON(w *int8, q *int8, scale *float32, blocks int) float32
TEXT ·int8Q8DotNEON(SB), NOSPLIT, $0-36
	MOVD w+0(FP), R0
	MOVD q+8(FP), R1
	MOVD scale+16(FP), R2
	MOVD blocks+24(FP), R3
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16

n2:
	CMP $2, R3
	BLT n1
	Q8SMULL
	Q8SCALE(V0)
	Q8SMULL
	Q8SCALE(V1)
	SUB $2, R3
	B   n2

n1:
	CBZ R3, ndone
	Q8SMULL
	Q8SCALE(V0)

ndone:
	FADD4S(0, 0, 1)
	HSUM4(0, 1)
	FMOVS F0, ret+32(FP)
	RET
