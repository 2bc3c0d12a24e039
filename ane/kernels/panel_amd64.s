//go:build !purego

#include "textflag.h"

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
	VPMOVZXBD (SI), Z0
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
