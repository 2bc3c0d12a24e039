package nprand

import "math/bits"

// PCG64's 128-bit LCG multiplier (PCG_DEFAULT_MULTIPLIER_128).
const (
	mulHi = 0x2360ed051fc65da4
	mulLo = 0x4385df649fccf645
)

// PCG64 is NumPy's PCG64 bit generator (128-bit LCG, XSL-RR output) as
// seeded by numpy.random.default_rng(seed). It also keeps NumPy's one-word
// buffer for 32-bit draws, because Generator methods that consume 32 bits
// at a time (bounded integers below 2^32) split each 64-bit output into its
// low then high half.
type PCG64 struct {
	stateHi, stateLo uint64
	incHi, incLo     uint64

	hasHalf bool
	half    uint32
}

// NewPCG64 returns the generator numpy.random.default_rng(seed) uses.
func NewPCG64(seed uint64) *PCG64 {
	s := generateState(seedPool(seed), wordsSeed)
	p := &PCG64{}
	// pcg64_set_seed: state = s[0]<<64|s[1], seq = s[2]<<64|s[3];
	// pcg_setseq_128_srandom_r: inc = seq<<1|1; step; state += initstate; step.
	p.incHi = s[2]<<1 | s[3]>>63
	p.incLo = s[3]<<1 | 1
	p.step()
	var carry uint64
	p.stateLo, carry = bits.Add64(p.stateLo, s[1], 0)
	p.stateHi, _ = bits.Add64(p.stateHi, s[0], carry)
	p.step()
	return p
}

// step advances the LCG: state = state*mul + inc (mod 2^128).
func (p *PCG64) step() {
	hi, lo := bits.Mul64(p.stateLo, mulLo)
	hi += p.stateHi*mulLo + p.stateLo*mulHi
	var carry uint64
	p.stateLo, carry = bits.Add64(lo, p.incLo, 0)
	p.stateHi, _ = bits.Add64(hi, p.incHi, carry)
}

// Uint64 returns the next raw 64-bit output (NumPy's random_raw).
func (p *PCG64) Uint64() uint64 {
	p.step()
	return bits.RotateLeft64(p.stateHi^p.stateLo, -int(p.stateHi>>58))
}

// Uint32 returns the next 32-bit draw the way NumPy's pcg64_next32 does:
// the low half of a fresh 64-bit output, then its high half on the next call.
func (p *PCG64) Uint32() uint32 {
	if p.hasHalf {
		p.hasHalf = false
		return p.half
	}
	v := p.Uint64()
	p.hasHalf = true
	p.half = uint32(v >> 32)
	return uint32(v)
}
