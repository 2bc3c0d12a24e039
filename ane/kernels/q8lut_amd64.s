//go:build !purego

#include "textflag.h"

// func decodeNibQ8AVX2(code *int8, p *uint8, dst *int8, blocks int)
//
// Writes the int8 codes of blocks packed 32-index blocks (16 bytes: index
// j in the low nibble of byte j, index 16+j in the high one) to dst: one
// VPSHUFB lookup in the 16 codes at code per 16 indices.
TEXT ·decodeNibQ8AVX2(SB), NOSPLIT, $0-32
	MOVQ         code+0(FP), AX
	MOVQ         p+8(FP), SI
	MOVQ         dst+16(FP), DI
	MOVQ         blocks+24(FP), CX
	VMOVDQU      (AX), X0
	MOVL         $0x0f0f0f0f, DX
	VMOVQ         DX, X1
	VPBROADCASTD X1, X1

loop:
	TESTQ   CX, CX
	JZ      done
	VMOVDQU (SI), X2
	VPAND   X1, X2, X3
	VPSRLW  $4, X2, X4
	VPAND   X1, X4, X4
	VPSHUFB X3, X0, X3
	VPSHUFB X4, X0, X4
	VMOVDQU X3, (DI)
	VMOVDQU X4, 16(DI)
	ADDQ    $16, SI
	ADDQ    $32, DI
	DECQ    CX
	JMP     loop

done:
	RET
