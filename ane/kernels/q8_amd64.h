// The integer block step shared by the Q8 kernels (q8_amd64.s,
// q8batch_amd64.s), so the single-row and 4-row kernels run the same
// instructions per row and give the same bits.

// Q8ROW adds one activation row's share of a 32-value block: the codes at
// off(qp) take the signs of the weights w (VPSIGNB), VPMADDUBSW multiplies
// them by |w| (absw, unsigned; |−128| reads as 128) and adds pairs to int16
// (|sum| ≤ 2·128·127, no saturation), VPMADDWD by the int16 ones in ones
// adds those to 8 exact int32, and the float conversion meets the block
// scale at soff(sp) in one FMA into acc (tmp, bc clobbered).
#define Q8ROW(off, qp, soff, sp, w, absw, ones, tmp, bc, acc) \
	VMOVDQU      off(qp), tmp; \
	VPSIGNB      w, tmp, tmp; \
	VPMADDUBSW   tmp, absw, tmp; \
	VPMADDWD     ones, tmp, tmp; \
	VCVTDQ2PS    tmp, tmp; \
	VBROADCASTSS soff(sp), bc; \
	VFMADD231PS  bc, tmp, acc

// The AVX-512 VNNI form (int8Q8Dot4VNNI) takes a pair of
// blocks a ZMM: VPDPBUSD adds |w| (unsigned; VPABSB, |−128| reads as
// 128) times the codes, negated where w < 0 (VPMOVB2M's mask on a VPSUBB
// from zero; the codes are within ±127), four bytes a lane: the int32
// lanes Q8ROW's VPMADDUBSW and VPMADDWD make, block b in lanes 0–7 and
// b+1 in 8–15. Converted, they meet the pair's scales (b's broadcast into
// the low half, b+1's into the high) in one FMA into an accumulator whose
// halves are Q8ROW's even- and odd-block accumulators, so HSUM512 ends
// with the AVX2 kernels' bits (the one-row kernel stays int8Q8DotAVX2). A lone last block adds into the low half
// only (mask K2). Z31 is zero throughout; K2 holds the low 8 lanes.

// Q8VSETUP: Z31 zero, K2 the low 8 lanes (clobbers AX).
#define Q8VSETUP \
	VPXORD Z31, Z31, Z31; \
	MOVL   $0xff, AX; \
	KMOVW  AX, K2

// Q8VWEIGHTS(off): the pair of weight blocks at off(SI): |w| into Z9,
// their signs into K1.
#define Q8VWEIGHTS(off) \
	VMOVDQU8 off(SI), Z8; \
	VPABSB   Z8, Z9; \
	VPMOVB2M Z8, K1

// Q8VROW(off, qp, sp, acc): one activation row's pair of blocks at
// off(qp), with scales at (sp) and 4(sp), into acc (Z10–Z12 clobbered).
#define Q8VROW(off, qp, sp, acc) \
	VMOVDQU8      off(qp), Z10; \
	VPSUBB        Z10, Z31, K1, Z10; \
	VPXORD        Z11, Z11, Z11; \
	VPDPBUSD      Z10, Z9, Z11; \
	VCVTDQ2PS     Z11, Z11; \
	VBROADCASTSS  (sp), Z12; \
	VBROADCASTSS  4(sp), Y10; \
	VINSERTF64X4  $1, Y10, Z12, Z12; \
	VFMADD231PS   Z12, Z11, acc

// Q8VWEIGHTS1 and Q8VROW1(qp, sp, acc): the same for a lone block at (SI)
// and (qp), its scale at (sp), into acc's low half.
#define Q8VWEIGHTS1 \
	VMOVDQU8 (SI), Y8; \
	VPABSB   Y8, Y9; \
	VPMOVB2M Y8, K1

#define Q8VROW1(qp, sp, acc) \
	VMOVDQU8     (qp), Y10; \
	VPSUBB       Y10, Y31, K1, Y10; \
	VPXORD       Y11, Y11, Y11; \
	VPDPBUSD     Y10, Y9, Y11; \
	VCVTDQ2PS    Y11, Y11; \
	VBROADCASTSS (sp), Y12; \
	VFMADD231PS  Z12, Z11, K2, acc
