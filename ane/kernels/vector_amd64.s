//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Vector kernels for the attention history and the delta rule's state, over
// n elements, n a multiple of 8. FP16 (IEEE half) inputs: VCVTPH2PS (F16C)
// widens 8 halves to a YMM of float32.

// func dotF16AVX2(h *uint16, x *float32, n int) float32
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ   h+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

h32:
	CMPQ        CX, $32
	JLT         h8
	VCVTPH2PS   (SI), Y4
	VCVTPH2PS   16(SI), Y5
	VCVTPH2PS   32(SI), Y6
	VCVTPH2PS   48(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         h32

h8:
	CMPQ        CX, $8
	JLT         hdone
	VCVTPH2PS   (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $16, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         h8

hdone:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	HSUM
	VMOVSS        X0, ret+24(FP)
	VZEROUPPER
	RET

// func axpyF16AVX2(dst *float32, a float32, h *uint16, n int)
// dst[i] += a·h[i].
TEXT ·axpyF16AVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	VBROADCASTSS a+8(FP), Y8
	MOVQ         h+16(FP), SI
	MOVQ         n+24(FP), CX

g32:
	CMPQ        CX, $32
	JLT         g8
	VCVTPH2PS   (SI), Y4
	VCVTPH2PS   16(SI), Y5
	VCVTPH2PS   32(SI), Y6
	VCVTPH2PS   48(SI), Y7
	VMOVUPS     (DI), Y0
	VMOVUPS     32(DI), Y1
	VMOVUPS     64(DI), Y2
	VMOVUPS     96(DI), Y3
	VFMADD231PS Y8, Y4, Y0
	VFMADD231PS Y8, Y5, Y1
	VFMADD231PS Y8, Y6, Y2
	VFMADD231PS Y8, Y7, Y3
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)
	VMOVUPS     Y2, 64(DI)
	VMOVUPS     Y3, 96(DI)
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         g32

g8:
	CMPQ        CX, $8
	JLT         gdone
	VCVTPH2PS   (SI), Y4
	VMOVUPS     (DI), Y0
	VFMADD231PS Y8, Y4, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $16, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         g8

gdone:
	VZEROUPPER
	RET

// func axpyInt8AVX2(dst *float32, a float32, q *int8, n int)
// dst[i] += a·q[i].
TEXT ·axpyInt8AVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	VBROADCASTSS a+8(FP), Y8
	MOVQ         q+16(FP), SI
	MOVQ         n+24(FP), CX

j8:
	CMPQ        CX, $8
	JLT         jdone
	VPMOVSXBD   (SI), Y4
	VCVTDQ2PS   Y4, Y4
	VMOVUPS     (DI), Y0
	VFMADD231PS Y8, Y4, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $8, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         j8

jdone:
	VZEROUPPER
	RET

// Float32 kernels for the delta rule's state rows.

// func axpyAVX2(dst *float32, a float32, x *float32, n int)
// dst[i] += a·x[i].
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	VBROADCASTSS a+8(FP), Y8
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX

p16:
	CMPQ        CX, $16
	JLT         p8
	VMOVUPS     (DI), Y0
	VMOVUPS     32(DI), Y1
	VFMADD231PS (SI), Y8, Y0
	VFMADD231PS 32(SI), Y8, Y1
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         p16

p8:
	CMPQ        CX, $8
	JLT         pdone
	VMOVUPS     (DI), Y0
	VFMADD231PS (SI), Y8, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         p8

pdone:
	VZEROUPPER
	RET

// func scaleAxpyAVX2(row *float32, s float32, acc *float32, a float32, n int)
// row[i] *= s, then acc[i] += a·row[i].
TEXT ·scaleAxpyAVX2(SB), NOSPLIT, $0-40
	MOVQ         row+0(FP), DI
	VBROADCASTSS s+8(FP), Y8
	MOVQ         acc+16(FP), SI
	VBROADCASTSS a+24(FP), Y9
	MOVQ         n+32(FP), CX

s8:
	CMPQ        CX, $8
	JLT         sdone
	VMULPS      (DI), Y8, Y0
	VMOVUPS     (SI), Y1
	VFMADD231PS Y0, Y9, Y1
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, (SI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         s8

sdone:
	VZEROUPPER
	RET

// func axpyThenAxpyAVX2(row *float32, a float32, x *float32, out *float32, b float32, n int)
// row[i] += a·x[i], then out[i] += b·row[i].
TEXT ·axpyThenAxpyAVX2(SB), NOSPLIT, $0-48
	MOVQ         row+0(FP), DI
	VBROADCASTSS a+8(FP), Y8
	MOVQ         x+16(FP), SI
	MOVQ         out+24(FP), DX
	VBROADCASTSS b+32(FP), Y9
	MOVQ         n+40(FP), CX

t8:
	CMPQ        CX, $8
	JLT         tdone
	VMOVUPS     (DI), Y0
	VFMADD231PS (SI), Y8, Y0
	VMOVUPS     (DX), Y1
	VFMADD231PS Y0, Y9, Y1
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, (DX)
	ADDQ        $32, SI
	ADDQ        $32, DI
	ADDQ        $32, DX
	SUBQ        $8, CX
	JMP         t8

tdone:
	VZEROUPPER
	RET
