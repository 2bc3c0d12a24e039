// The AVX2 16-entry table lookup shared by the amd64 kernels (included by
// the .s files).

// One 16-entry table lookup of the 8 indices in Y4 (zero-extended to int32)
// from the table halves lo/hi: VPERMPS uses the low 3 bits of each index,
// bit 3, shifted into the sign bit of Y5 by the caller, picks the half.
// Result in dst; Y6 is clobbered.
#define LOOKUP16(lo, hi, dst) \
	VPERMPS   lo, Y4, Y6; \
	VPERMPS   hi, Y4, dst; \
	VBLENDVPS Y5, dst, Y6, dst
