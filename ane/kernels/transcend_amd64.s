//go:build !purego

#include "textflag.h"

// Vectorised exp, sigmoid and SiLU over n float32, n a multiple of 8: the
// same algorithm as expGo in transcend.go (Cephes expf), 8 lanes at a time.

// +0: lo = -104
DATA expc<>+0(SB)/4, $0xc2d00000
DATA expc<>+4(SB)/4, $0xc2d00000
DATA expc<>+8(SB)/4, $0xc2d00000
DATA expc<>+12(SB)/4, $0xc2d00000
DATA expc<>+16(SB)/4, $0xc2d00000
DATA expc<>+20(SB)/4, $0xc2d00000
DATA expc<>+24(SB)/4, $0xc2d00000
DATA expc<>+28(SB)/4, $0xc2d00000
// +32: hi = 88.8
DATA expc<>+32(SB)/4, $0x42b1999a
DATA expc<>+36(SB)/4, $0x42b1999a
DATA expc<>+40(SB)/4, $0x42b1999a
DATA expc<>+44(SB)/4, $0x42b1999a
DATA expc<>+48(SB)/4, $0x42b1999a
DATA expc<>+52(SB)/4, $0x42b1999a
DATA expc<>+56(SB)/4, $0x42b1999a
DATA expc<>+60(SB)/4, $0x42b1999a
// +64: log2e = 1.44269504088896341
DATA expc<>+64(SB)/4, $0x3fb8aa3b
DATA expc<>+68(SB)/4, $0x3fb8aa3b
DATA expc<>+72(SB)/4, $0x3fb8aa3b
DATA expc<>+76(SB)/4, $0x3fb8aa3b
DATA expc<>+80(SB)/4, $0x3fb8aa3b
DATA expc<>+84(SB)/4, $0x3fb8aa3b
DATA expc<>+88(SB)/4, $0x3fb8aa3b
DATA expc<>+92(SB)/4, $0x3fb8aa3b
// +96: magic = 1.5·2^23
DATA expc<>+96(SB)/4, $0x4b400000
DATA expc<>+100(SB)/4, $0x4b400000
DATA expc<>+104(SB)/4, $0x4b400000
DATA expc<>+108(SB)/4, $0x4b400000
DATA expc<>+112(SB)/4, $0x4b400000
DATA expc<>+116(SB)/4, $0x4b400000
DATA expc<>+120(SB)/4, $0x4b400000
DATA expc<>+124(SB)/4, $0x4b400000
// +128: ln2hi = 0.693359375
DATA expc<>+128(SB)/4, $0x3f318000
DATA expc<>+132(SB)/4, $0x3f318000
DATA expc<>+136(SB)/4, $0x3f318000
DATA expc<>+140(SB)/4, $0x3f318000
DATA expc<>+144(SB)/4, $0x3f318000
DATA expc<>+148(SB)/4, $0x3f318000
DATA expc<>+152(SB)/4, $0x3f318000
DATA expc<>+156(SB)/4, $0x3f318000
// +160: ln2lo = -2.12194440e-4
DATA expc<>+160(SB)/4, $0xb95e8083
DATA expc<>+164(SB)/4, $0xb95e8083
DATA expc<>+168(SB)/4, $0xb95e8083
DATA expc<>+172(SB)/4, $0xb95e8083
DATA expc<>+176(SB)/4, $0xb95e8083
DATA expc<>+180(SB)/4, $0xb95e8083
DATA expc<>+184(SB)/4, $0xb95e8083
DATA expc<>+188(SB)/4, $0xb95e8083
// +192: c0 = 1.9875691500e-4
DATA expc<>+192(SB)/4, $0x39506967
DATA expc<>+196(SB)/4, $0x39506967
DATA expc<>+200(SB)/4, $0x39506967
DATA expc<>+204(SB)/4, $0x39506967
DATA expc<>+208(SB)/4, $0x39506967
DATA expc<>+212(SB)/4, $0x39506967
DATA expc<>+216(SB)/4, $0x39506967
DATA expc<>+220(SB)/4, $0x39506967
// +224: c1 = 1.3981999507e-3
DATA expc<>+224(SB)/4, $0x3ab743ce
DATA expc<>+228(SB)/4, $0x3ab743ce
DATA expc<>+232(SB)/4, $0x3ab743ce
DATA expc<>+236(SB)/4, $0x3ab743ce
DATA expc<>+240(SB)/4, $0x3ab743ce
DATA expc<>+244(SB)/4, $0x3ab743ce
DATA expc<>+248(SB)/4, $0x3ab743ce
DATA expc<>+252(SB)/4, $0x3ab743ce
// +256: c2 = 8.3334519073e-3
DATA expc<>+256(SB)/4, $0x3c088908
DATA expc<>+260(SB)/4, $0x3c088908
DATA expc<>+264(SB)/4, $0x3c088908
DATA expc<>+268(SB)/4, $0x3c088908
DATA expc<>+272(SB)/4, $0x3c088908
DATA expc<>+276(SB)/4, $0x3c088908
DATA expc<>+280(SB)/4, $0x3c088908
DATA expc<>+284(SB)/4, $0x3c088908
// +288: c3 = 4.1665795894e-2
DATA expc<>+288(SB)/4, $0x3d2aa9c1
DATA expc<>+292(SB)/4, $0x3d2aa9c1
DATA expc<>+296(SB)/4, $0x3d2aa9c1
DATA expc<>+300(SB)/4, $0x3d2aa9c1
DATA expc<>+304(SB)/4, $0x3d2aa9c1
DATA expc<>+308(SB)/4, $0x3d2aa9c1
DATA expc<>+312(SB)/4, $0x3d2aa9c1
DATA expc<>+316(SB)/4, $0x3d2aa9c1
// +320: c4 = 1.6666665459e-1
DATA expc<>+320(SB)/4, $0x3e2aaaaa
DATA expc<>+324(SB)/4, $0x3e2aaaaa
DATA expc<>+328(SB)/4, $0x3e2aaaaa
DATA expc<>+332(SB)/4, $0x3e2aaaaa
DATA expc<>+336(SB)/4, $0x3e2aaaaa
DATA expc<>+340(SB)/4, $0x3e2aaaaa
DATA expc<>+344(SB)/4, $0x3e2aaaaa
DATA expc<>+348(SB)/4, $0x3e2aaaaa
// +352: c5 = 5.0000001201e-1
DATA expc<>+352(SB)/4, $0x3f000000
DATA expc<>+356(SB)/4, $0x3f000000
DATA expc<>+360(SB)/4, $0x3f000000
DATA expc<>+364(SB)/4, $0x3f000000
DATA expc<>+368(SB)/4, $0x3f000000
DATA expc<>+372(SB)/4, $0x3f000000
DATA expc<>+376(SB)/4, $0x3f000000
DATA expc<>+380(SB)/4, $0x3f000000
// +384: one = 1
DATA expc<>+384(SB)/4, $0x3f800000
DATA expc<>+388(SB)/4, $0x3f800000
DATA expc<>+392(SB)/4, $0x3f800000
DATA expc<>+396(SB)/4, $0x3f800000
DATA expc<>+400(SB)/4, $0x3f800000
DATA expc<>+404(SB)/4, $0x3f800000
DATA expc<>+408(SB)/4, $0x3f800000
DATA expc<>+412(SB)/4, $0x3f800000
// +416: bias = 127 (int32)
DATA expc<>+416(SB)/4, $0x0000007f
DATA expc<>+420(SB)/4, $0x0000007f
DATA expc<>+424(SB)/4, $0x0000007f
DATA expc<>+428(SB)/4, $0x0000007f
DATA expc<>+432(SB)/4, $0x0000007f
DATA expc<>+436(SB)/4, $0x0000007f
DATA expc<>+440(SB)/4, $0x0000007f
DATA expc<>+444(SB)/4, $0x0000007f
// +448: sign = the sign bit
DATA expc<>+448(SB)/4, $0x80000000
DATA expc<>+452(SB)/4, $0x80000000
DATA expc<>+456(SB)/4, $0x80000000
DATA expc<>+460(SB)/4, $0x80000000
DATA expc<>+464(SB)/4, $0x80000000
DATA expc<>+468(SB)/4, $0x80000000
DATA expc<>+472(SB)/4, $0x80000000
DATA expc<>+476(SB)/4, $0x80000000
// +480: maxf = MaxFloat32
DATA expc<>+480(SB)/4, $0x7f7fffff
DATA expc<>+484(SB)/4, $0x7f7fffff
DATA expc<>+488(SB)/4, $0x7f7fffff
DATA expc<>+492(SB)/4, $0x7f7fffff
DATA expc<>+496(SB)/4, $0x7f7fffff
DATA expc<>+500(SB)/4, $0x7f7fffff
DATA expc<>+504(SB)/4, $0x7f7fffff
DATA expc<>+508(SB)/4, $0x7f7fffff
GLOBL expc<>(SB), RODATA|NOPTR, $512

// EXP replaces the 8 lanes of Y0 by exp(Y0) (clobbers Y1–Y3). The clamps
// keep the input as their second operand, so a NaN lane stays NaN; the
// two-step scaling by 2^n1 · 2^n2 (n1 = n>>1) keeps both factors normal, so
// results in the subnormal range round once, in the last multiply.
#define EXP \
	VMOVUPS      expc<>+0(SB), Y1; \
	VMAXPS       Y0, Y1, Y0; \
	VMOVUPS      expc<>+32(SB), Y1; \
	VMINPS       Y0, Y1, Y0; \
	VMOVUPS      expc<>+96(SB), Y1; \
	VFMADD231PS  expc<>+64(SB), Y0, Y1; \
	VSUBPS       expc<>+96(SB), Y1, Y1; \
	VCVTPS2DQ    Y1, Y2; \
	VFNMADD231PS expc<>+128(SB), Y1, Y0; \
	VFNMADD231PS expc<>+160(SB), Y1, Y0; \
	VMOVUPS      expc<>+192(SB), Y3; \
	VFMADD213PS  expc<>+224(SB), Y0, Y3; \
	VFMADD213PS  expc<>+256(SB), Y0, Y3; \
	VFMADD213PS  expc<>+288(SB), Y0, Y3; \
	VFMADD213PS  expc<>+320(SB), Y0, Y3; \
	VFMADD213PS  expc<>+352(SB), Y0, Y3; \
	VMULPS       Y0, Y0, Y1; \
	VFMADD213PS  Y0, Y1, Y3; \
	VADDPS       expc<>+384(SB), Y3, Y3; \
	VPSRAD       $1, Y2, Y1; \
	VPSUBD       Y1, Y2, Y2; \
	VPADDD       expc<>+416(SB), Y1, Y1; \
	VPADDD       expc<>+416(SB), Y2, Y2; \
	VPSLLD       $23, Y1, Y1; \
	VPSLLD       $23, Y2, Y2; \
	VMULPS       Y1, Y3, Y3; \
	VMULPS       Y2, Y3, Y0

// SIGMOID computes sigmoid(Y4) as Y0 + Y1 (Y0 the rounded quotient, Y1
// the part it rounded off; Y4 kept; clobbers Y2, Y3, Y5), as sigmoidParts
// in transcend.go: e = exp(−|x|), d = 1+e, t = (1−d)+e, num = x<0 ? e : 1,
// q = num/d, lo = (num − q·d − q·t) · (x<0 ? 1−q : q).
#define SIGMOID \
	VORPS        expc<>+448(SB), Y4, Y0; \
	EXP; \
	VADDPS       expc<>+384(SB), Y0, Y5; \
	VMOVUPS      expc<>+384(SB), Y1; \
	VSUBPS       Y5, Y1, Y2; \
	VADDPS       Y0, Y2, Y2; \
	VBLENDVPS    Y4, Y0, Y1, Y1; \
	VDIVPS       Y5, Y1, Y0; \
	VFNMADD231PS Y0, Y5, Y1; \
	VFNMADD231PS Y0, Y2, Y1; \
	VMOVUPS      expc<>+384(SB), Y3; \
	VSUBPS       Y0, Y3, Y3; \
	VBLENDVPS    Y4, Y3, Y0, Y3; \
	VMULPS       Y3, Y1, Y1

// func expAVX2(dst, x *float32, n int)
TEXT ·expAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

exp8:
	CMPQ    CX, $8
	JLT     expdone
	VMOVUPS (SI), Y0
	EXP
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     exp8

expdone:
	VZEROUPPER
	RET

// func sigmoidAVX2(dst, x *float32, n int)
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

sig8:
	CMPQ    CX, $8
	JLT     sigdone
	VMOVUPS (SI), Y4
	SIGMOID
	VADDPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     sig8

sigdone:
	VZEROUPPER
	RET

// func siluAVX2(dst, x *float32, n int)
TEXT ·siluAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

silu8:
	CMPQ    CX, $8
	JLT     siludone
	VMOVUPS (SI), Y4
	SIGMOID
	VMINPS      expc<>+480(SB), Y4, Y3 // x·lo is 0, not NaN, at x = +Inf
	VMULPS      Y3, Y1, Y1
	VFMADD231PS Y4, Y0, Y1
	VMOVUPS     Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     silu8

siludone:
	VZEROUPPER
	RET
