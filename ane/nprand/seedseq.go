// Package nprand reproduces, bit for bit, the parts of NumPy's random module
// that published model exports depend on: numpy.random.default_rng(seed)
// (SeedSequence feeding a PCG64 bit generator) and Generator.choice over a
// two-element population, which defines the Hadamard rotation signs.
//
// The algorithms follow NumPy's bit_generator.pyx (SeedSequence),
// pcg64.h (PCG64 XSL-RR 128/64) and distributions.c (Lemire's bounded
// integers); testdata/numpy-pcg64/signs.jsonl, produced by NumPy
// 1.24.2, is the reference the tests check against.
package nprand

// SeedSequence hash-mixing constants (numpy/random/bit_generator.pyx).
const (
	poolSize  = 4
	initA     = 0x43b0d7e5
	multA     = 0x931e8875
	initB     = 0x8b51f9dd
	multB     = 0x58f38ded
	mixMultL  = 0xca01f9dd
	mixMultR  = 0x4973f715
	xorShift  = 16
	wordsSeed = 4 // PCG64 asks for four 64-bit words: state hi/lo, inc hi/lo
)

// seedPool runs SeedSequence(entropy=seed).pool: the seed is split into
// little-endian 32-bit words (0 becomes a single zero word) and hash-mixed
// into a four-word pool. No spawn key is involved for default_rng(seed).
func seedPool(seed uint64) [poolSize]uint32 {
	entropy := []uint32{uint32(seed)}
	if hi := uint32(seed >> 32); hi != 0 {
		entropy = append(entropy, hi)
	}

	hashConst := uint32(initA)
	hashmix := func(v uint32) uint32 {
		v ^= hashConst
		hashConst *= multA
		v *= hashConst
		v ^= v >> xorShift
		return v
	}
	mix := func(x, y uint32) uint32 {
		r := mixMultL*x - mixMultR*y
		r ^= r >> xorShift
		return r
	}

	var pool [poolSize]uint32
	for i := range pool {
		var v uint32
		if i < len(entropy) {
			v = entropy[i]
		}
		pool[i] = hashmix(v)
	}
	for src := range pool {
		for dst := range pool {
			if src != dst {
				pool[dst] = mix(pool[dst], hashmix(pool[src]))
			}
		}
	}
	// Entropy words beyond the pool size are folded in afterwards; a
	// uint64 seed has at most two words, so this loop never runs, but it
	// is kept so the function stays a faithful transcription.
	for src := poolSize; src < len(entropy); src++ {
		for dst := range pool {
			pool[dst] = mix(pool[dst], hashmix(entropy[src]))
		}
	}
	return pool
}

// generateState is SeedSequence.generate_state(n, np.uint64): 2n 32-bit
// words cycled out of the pool through a second hash, paired little-endian.
func generateState(pool [poolSize]uint32, n int) []uint64 {
	hashConst := uint32(initB)
	words := make([]uint32, 2*n)
	for i := range words {
		v := pool[i%poolSize]
		v ^= hashConst
		hashConst *= multB
		v *= hashConst
		v ^= v >> xorShift
		words[i] = v
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(words[2*i]) | uint64(words[2*i+1])<<32
	}
	return out
}
