// NEON instructions the Go arm64 assembler has no mnemonic for, as WORDs
// (included by the *_arm64.s files). Arguments are register numbers in
// the ARM operand order, destination first: FADD4S(d, n, m) is
// FADD Vd.4S, Vn.4S, Vm.4S. Encodings from the Arm ARM (A64 Advanced SIMD).

#define FADD4S(d, n, m) WORD $(0x4e20d400 | (m)<<16 | (n)<<5 | (d))
#define FSUB4S(d, n, m) WORD $(0x4ea0d400 | (m)<<16 | (n)<<5 | (d))
#define FMUL4S(d, n, m) WORD $(0x6e20dc00 | (m)<<16 | (n)<<5 | (d))
#define FDIV4S(d, n, m) WORD $(0x6e20fc00 | (m)<<16 | (n)<<5 | (d))
// FMAX and FMIN return NaN when either operand is NaN (not FMAXNM/FMINNM).
#define FMAX4S(d, n, m) WORD $(0x4e20f400 | (m)<<16 | (n)<<5 | (d))
#define FMIN4S(d, n, m) WORD $(0x4ea0f400 | (m)<<16 | (n)<<5 | (d))
// FADDP4S: pairwise add of the lanes of n:m; FADDP2S: Sd = Vn.S[0] + Vn.S[1].
#define FADDP4S(d, n, m) WORD $(0x6e20d400 | (m)<<16 | (n)<<5 | (d))
#define FADDP2S(d, n) WORD $(0x7e30d800 | (n)<<5 | (d))
#define SCVTF4S(d, n) WORD $(0x4e21d800 | (n)<<5 | (d))
#define FCVTZS4S(d, n) WORD $(0x4ea1b800 | (n)<<5 | (d))
// SSHR4S: arithmetic shift right of 4 int32 lanes by sh (1..32).
#define SSHR4S(d, n, sh) WORD $(0x4f200400 | (64-(sh))<<16 | (n)<<5 | (d))
// Sign extension: SXTL8H (bytes 0–7 to int16), SXTL28H (bytes 8–15),
// SXTL4S (halves 0–3 to int32), SXTL24S (halves 4–7).
#define SXTL8H(d, n) WORD $(0x0f08a400 | (n)<<5 | (d))
#define SXTL28H(d, n) WORD $(0x4f08a400 | (n)<<5 | (d))
#define SXTL4S(d, n) WORD $(0x0f10a400 | (n)<<5 | (d))
#define SXTL24S(d, n) WORD $(0x4f10a400 | (n)<<5 | (d))
// SDOT4S: each int32 lane of d += the 4 products of its bytes of n and m
// (FEAT_DotProd only).
#define SDOT4S(d, n, m) WORD $(0x4e809400 | (m)<<16 | (n)<<5 | (d))
// SMULL8H / SMULL28H: int16 products of bytes 0–7 / 8–15; SADALP4S: d +=
// the pairwise sums of n's int16 lanes, widened to int32.
#define SMULL8H(d, n, m) WORD $(0x0e20c000 | (m)<<16 | (n)<<5 | (d))
#define SMULL28H(d, n, m) WORD $(0x4e20c000 | (m)<<16 | (n)<<5 | (d))
#define SADALP4S(d, n) WORD $(0x4e606800 | (n)<<5 | (d))

// ZERO4 clears the accumulators V0–V3.
#define ZERO4 \
	VEOR V0.B16, V0.B16, V0.B16; \
	VEOR V1.B16, V1.B16, V1.B16; \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16

// SUM4 sets F0 to the sum of all lanes of V0–V3 in a fixed order:
// (V0+V1)+(V2+V3), then HSUM4 (clobbers V1, V2).
#define SUM4 \
	FADD4S(0, 0, 1); \
	FADD4S(2, 2, 3); \
	FADD4S(0, 0, 2); \
	HSUM4(0, 1)

// HSUM4(r, w) sets Fr (the low lane of Vr) to the sum of Vr's lanes in a
// fixed order, (a0+a1)+(a2+a3); Vw is clobbered.
#define HSUM4(r, w) \
	FADDP4S(w, r, r); \
	FADDP2S(r, w)

// FCVTL4S / FCVTL24S: halves 0–3 / 4–7 of n (IEEE FP16) to float32.
#define FCVTL4S(d, n) WORD $(0x0e217800 | (n)<<5 | (d))
#define FCVTL24S(d, n) WORD $(0x4e217800 | (n)<<5 | (d))
