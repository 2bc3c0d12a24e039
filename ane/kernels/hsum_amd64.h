// Horizontal sums shared by the amd64 kernels (included by the .s files).

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
