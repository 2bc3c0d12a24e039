//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// func int8Q8DotAVX2(w *int8, q *int8, scale *float32, blocks int) float32
//
// Per 32-value block: VPMADDUBSW multiplies unsigned by signed bytes, so
// the weights' signs move onto the activations (VPSIGNB: |w| and q·sign w;
// |−128| reads as unsigned 128) and pairs add to int16 (|sum| ≤ 2·128·127,
// no saturation); VPMADDWD by ones adds those to 8 int32, exact. The block
// sum, converted to float, meets the block's scale in one FMA; two
// accumulators alternate blocks.
TEXT ·int8Q8DotAVX2(SB), NOSPLIT, $0-36
	MOVQ     w+0(FP), SI
	MOVQ     q+8(FP), DI
	MOVQ     scale+16(FP), BX
	MOVQ     blocks+24(FP), CX
	VXORPS   Y0, Y0, Y0
	VXORPS   Y8, Y8, Y8
	VPCMPEQW Y7, Y7, Y7
	VPSRLW   $15, Y7, Y7

b2:
	CMPQ         CX, $2
	JLT          b1
	VMOVDQU      (SI), Y1
	VMOVDQU      (DI), Y2
	VPSIGNB      Y1, Y1, Y3
	VPSIGNB      Y1, Y2, Y4
	VPMADDUBSW   Y4, Y3, Y5
	VPMADDWD     Y7, Y5, Y5
	VCVTDQ2PS    Y5, Y5
	VBROADCASTSS (BX), Y6
	VFMADD231PS  Y6, Y5, Y0
	VMOVDQU      32(SI), Y9
	VMOVDQU      32(DI), Y10
	VPSIGNB      Y9, Y9, Y11
	VPSIGNB      Y9, Y10, Y12
	VPMADDUBSW   Y12, Y11, Y13
	VPMADDWD     Y7, Y13, Y13
	VCVTDQ2PS    Y13, Y13
	VBROADCASTSS 4(BX), Y14
	VFMADD231PS  Y14, Y13, Y8
	ADDQ         $64, SI
	ADDQ         $64, DI
	ADDQ         $8, BX
	SUBQ         $2, CX
	JMP          b2

b1:
	CMPQ         CX, $1
	JLT          done
	VMOVDQU      (SI), Y1
	VMOVDQU      (DI), Y2
	VPSIGNB      Y1, Y1, Y3
	VPSIGNB      Y1, Y2, Y4
	VPMADDUBSW   Y4, Y3, Y5
	VPMADDWD     Y7, Y5, Y5
	VCVTDQ2PS    Y5, Y5
	VBROADCASTSS (BX), Y6
	VFMADD231PS  Y6, Y5, Y0

done:
	VADDPS Y8, Y0, Y0
	HSUM
	VZEROUPPER
	MOVSS  X0, ret+32(FP)
	RET
