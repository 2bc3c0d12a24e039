// Horizontal sums shared by the amd64 kernels (included by the .s files).
//
// Every instruction on X registers in these kernels is VEX-encoded
// (VMOVSS, VMOVQ, never MOVSS or MOVL to an X register): a legacy SSE
// instruction while the upper halves of the YMM registers are dirty cost
// the AVX2 Q16 kernel ~180 ns a call on the AMD EPYC VM, 1.6× its time on
// 4096-column rows (docs/KERNELS.md, "Legacy SSE").

// HSUM adds the 8 lanes of Y0 into X0's low lane (clobbers X1).
#define HSUM \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVHLPS     X0, X0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1; \
	VADDSS       X1, X0, X0

// HSUM512 adds the 16 lanes of Z0 into X0's low lane (clobbers Y1).
#define HSUM512 \
	VEXTRACTF64X4 $1, Z0, Y1; \
	VADDPS        Y1, Y0, Y0; \
	HSUM

// HSUM512TO stores the sum of acc's 16 lanes (HSUM512's order) to dst
// (clobbers Z0, Y1).
#define HSUM512TO(acc, dst) \
	VMOVAPS acc, Z0; \
	HSUM512; \
	VMOVSS  X0, dst

// ZERO8 clears Y0–Y7, the accumulators of the 4-row kernels.
#define ZERO8 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

// HSUM4 stores the sums of the four rows' accumulator pairs (Y0+Y4,
// Y1+Y5, Y2+Y6, Y3+Y7), each summed by HSUM, to d0…d3 (clobbers Y0–Y3,
// Y12–Y14).
#define HSUM4(d0, d1, d2, d3) \
	VADDPS  Y4, Y0, Y0; \
	VADDPS  Y5, Y1, Y1; \
	VADDPS  Y6, Y2, Y2; \
	VADDPS  Y7, Y3, Y3; \
	VMOVUPS Y1, Y12; \
	VMOVUPS Y2, Y13; \
	VMOVUPS Y3, Y14; \
	HSUM; \
	VMOVSS   X0, d0; \
	VMOVUPS Y12, Y0; \
	HSUM; \
	VMOVSS   X0, d1; \
	VMOVUPS Y13, Y0; \
	HSUM; \
	VMOVSS   X0, d2; \
	VMOVUPS Y14, Y0; \
	HSUM; \
	VMOVSS   X0, d3
