package nprand

// BoundedUint32 returns an integer uniform on [0, rng] (rng inclusive, as in
// NumPy's C layer), using Lemire's multiply-shift with rejection exactly as
// NumPy's buffered_bounded_lemire_uint32. NumPy uses this path for
// Generator.integers whenever the range fits in 32 bits (rng < 2^32-1) and
// masked=False, which is the default.
func (p *PCG64) BoundedUint32(rng uint32) uint32 {
	if rng == 0 {
		return 0
	}
	if rng == ^uint32(0) {
		return p.Uint32()
	}
	excl := uint64(rng) + 1
	m := uint64(p.Uint32()) * excl
	leftover := uint32(m)
	if uint64(leftover) < excl {
		threshold := uint32((uint64(^uint32(0)) - uint64(rng)) % excl)
		for leftover < threshold {
			m = uint64(p.Uint32()) * excl
			leftover = uint32(m)
		}
	}
	return uint32(m >> 32)
}

// ChoiceSigns returns numpy.random.default_rng(seed).choice([-1.0, 1.0], n):
// choice with replacement and no p draws integers(0, 2, n), so index 0 maps
// to -1 and index 1 to +1.
func ChoiceSigns(seed uint64, n int) []float32 {
	if n < 0 {
		n = 0
	}
	p := NewPCG64(seed)
	out := make([]float32, n)
	for i := range out {
		if p.BoundedUint32(1) == 0 {
			out[i] = -1
		} else {
			out[i] = 1
		}
	}
	return out
}
