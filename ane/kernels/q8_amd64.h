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
