//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"
#include "q8_amd64.h"

// Q8BLOCK adds the block at off(SI) (weights), off(DI) (codes) times the
// scale at soff(BX) into acc (clobbers Y1, Y3, Y4, Y6; Y7 holds int16 ones).
#define Q8BLOCK(off, soff, acc) \
	VMOVDQU off(SI), Y1; \
	VPSIGNB Y1, Y1, Y3; \
	Q8ROW(off, DI, soff, BX, Y1, Y3, Y7, Y4, Y6, acc)

// func int8Q8DotAVX2(w *int8, q *int8, scale *float32, blocks int) float32
//
// Per 32-value block Q8ROW (q8_amd64.h): integer products, exact, then one
// FMA by the block's scale; two accumulators alternate blocks.
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
	PREFETCHT0 1024(SI)
	CMPQ CX, $2
	JLT  b1
	Q8BLOCK(0, 0, Y0)
	Q8BLOCK(32, 4, Y8)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $8, BX
	SUBQ $2, CX
	JMP  b2

b1:
	CMPQ CX, $1
	JLT  done
	Q8BLOCK(0, 0, Y0)

done:
	VADDPS Y8, Y0, Y0
	HSUM
	VZEROUPPER
	VMOVSS  X0, ret+32(FP)
	RET

