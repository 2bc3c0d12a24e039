package quant

import "fmt"

// LUT is a scalar (CD = 1) or vector (CD = 2 or 4) codebook matrix: index
// idx[g, j] selects codebook entry e, and output row g·CD+t at column j is
// lut[e][t], times scale[row] when a per-channel scale is present.
type LUT struct {
	rows, cols, cd, entries int
	// The codebook is padded to 256 entries (zeros past the stored ones) so
	// any uint8 index is in range without a check or a validation pass.
	lut1 *[256]float32
	lut2 *[256][2]float32
	lut4 *[256][4]float32
	// tab16[t][e] = entry e, component t, for codebooks of ≤ 16 entries:
	// the layout the SIMD kernels look up (lut16Dot, lut16Dot2).
	tab16 *[4][16]float32
	tab64 *[4][64]float32 // the same for 17–64 entries and CD 2 or 4
	idx   []uint8
	scale []float32
	name  string
}

// NewLUT wraps idx ((rows/cd) × cols) and scale (rows, or nil) without
// copying; lut holds entries × cd values (entry-major) and is copied.
func NewLUT(format string, rows, cols, cd int, lut []float32, idx []uint8, scale []float32) (*LUT, error) {
	if err := checkDims(format, rows, cols); err != nil {
		return nil, err
	}
	if cd != 1 && cd != 2 && cd != 4 {
		return nil, fmt.Errorf("%s: vector length %d is not 1, 2 or 4", format, cd)
	}
	if rows%cd != 0 {
		return nil, fmt.Errorf("%s: %d output rows are not a multiple of the vector length %d", format, rows, cd)
	}
	if len(lut) == 0 || len(lut)%cd != 0 || len(lut)/cd > 256 {
		return nil, fmt.Errorf("%s: codebook of %d values is not 1..256 entries of %d", format, len(lut), cd)
	}
	if len(idx) != rows/cd*cols {
		return nil, fmt.Errorf("%s: %d indices, want %d×%d", format, len(idx), rows/cd, cols)
	}
	if err := checkScale(format, rows, scale); err != nil {
		return nil, err
	}
	m := &LUT{rows: rows, cols: cols, cd: cd, entries: len(lut) / cd, idx: idx, scale: scale, name: format}
	switch cd {
	case 1:
		m.lut1 = new([256]float32)
		copy(m.lut1[:], lut)
	case 2:
		m.lut2 = new([256][2]float32)
		for e := 0; e < m.entries; e++ {
			m.lut2[e] = [2]float32{lut[2*e], lut[2*e+1]}
		}
	case 4:
		m.lut4 = new([256][4]float32)
		for e := 0; e < m.entries; e++ {
			copy(m.lut4[e][:], lut[4*e:4*e+4])
		}
	}
	switch {
	case m.entries <= 16:
		m.tab16 = new([4][16]float32)
		for e := 0; e < m.entries; e++ {
			for t := 0; t < cd; t++ {
				m.tab16[t][e] = lut[e*cd+t]
			}
		}
	case m.entries <= 64 && cd > 1:
		m.tab64 = new([4][64]float32)
		for e := 0; e < m.entries; e++ {
			for t := 0; t < cd; t++ {
				m.tab64[t][e] = lut[e*cd+t]
			}
		}
	}
	return m, nil
}

func (m *LUT) Rows() int      { return m.rows }
func (m *LUT) Cols() int      { return m.cols }
func (m *LUT) Group() int     { return m.cd }
func (m *LUT) Format() string { return m.name }
func (m *LUT) Bytes() int64 {
	return int64(len(m.idx)) + int64(m.entries*m.cd)*2 + int64(len(m.scale))*2
}

func (m *LUT) rowScale(r int) float32 {
	if m.scale == nil {
		return 1
	}
	return m.scale[r]
}

func (m *LUT) mulVec(y, x []float32, r0, r1 int) {
	switch m.cd {
	case 1:
		m.mulVec1(y, x, r0, r1)
	case 2:
		m.mulVec2(y, x, r0, r1)
	default:
		m.mulVec4(y, x, r0, r1)
	}
}

// The vector products (CD 2 and 4) bucket the activations by index first — acc[e] sums
// the x[j] whose index is e — and apply the codebook once per row (group):
// one add per stored index instead of CD multiply-adds and CD table loads.
// Four bucket sets break the dependency between neighbouring indices.
// Indices past the stored entries land in buckets that are never read,
// matching the zero padding of the codebook.

type buckets [4][256]float32

func (b *buckets) clear(k int) {
	for s := range b {
		clear(b[s][:k])
	}
}

// fill accumulates x[j] into bucket idx[j].
func (b *buckets) fill(idx []uint8, x []float32) {
	x = x[:len(idx)]
	a0, a1, a2, a3 := &b[0], &b[1], &b[2], &b[3]
	// Reslicing instead of indexing at j+k lets the compiler drop bounds checks.
	for len(idx) >= 4 && len(x) >= 4 {
		a0[idx[0]] += x[0]
		a1[idx[1]] += x[1]
		a2[idx[2]] += x[2]
		a3[idx[3]] += x[3]
		idx, x = idx[4:], x[4:]
	}
	for j, i := range idx {
		a0[i] += x[j]
	}
}

// mulVec1 reads the codebook directly: for scalar entries one table load
// and multiply-add per index measured faster than bucketing.
func (m *LUT) mulVec1(y, x []float32, r0, r1 int) {
	for r := r0; r < r1; r++ {
		row := m.idx[r*m.cols : (r+1)*m.cols]
		s, ok := float32(0), false
		if m.tab16 != nil {
			s, ok = lut16Dot(&m.tab16[0], row, x)
		}
		if !ok {
			s = lut1DotGo(m.lut1, row, x)
		}
		y[r] = s * m.rowScale(r)
	}
}

// lut1DotGo is Σ lut[row[j]]·x[j], the fallback of lut16Dot.
func lut1DotGo(lut *[256]float32, row []uint8, x []float32) float32 {
	xs := x[:len(row)]
	var s0, s1, s2, s3 float32
	for len(row) >= 4 && len(xs) >= 4 {
		s0 += lut[row[0]] * xs[0]
		s1 += lut[row[1]] * xs[1]
		s2 += lut[row[2]] * xs[2]
		s3 += lut[row[3]] * xs[3]
		row, xs = row[4:], xs[4:]
	}
	for j, i := range row {
		s0 += lut[i] * xs[j]
	}
	return (s0 + s1) + (s2 + s3)
}

// vecSIMD is the SIMD path of the vector products for ≤ 64-entry
// codebooks: output rows of group g in pairs, each pair one pass over the
// indices (looking up the entry measured faster than bucketing). It returns
// false when the kernel is unavailable or the indices are malformed.
func (m *LUT) vecSIMD(y, x []float32, g int) bool {
	if m.tab16 == nil && m.tab64 == nil {
		return false
	}
	row := m.idx[g*m.cols : (g+1)*m.cols]
	var s [4]float32
	for t := 0; t < m.cd; t += 2 {
		var s0, s1 float32
		var ok bool
		if m.tab16 != nil {
			s0, s1, ok = lut16Dot2((*[2][16]float32)(m.tab16[t:t+2]), row, x)
		} else {
			s0, s1, ok = lut64Dot2((*[2][64]float32)(m.tab64[t:t+2]), row, x)
		}
		if !ok {
			return false
		}
		s[t], s[t+1] = s0, s1
	}
	for t := 0; t < m.cd; t++ {
		y[g*m.cd+t] = s[t] * m.rowScale(g*m.cd+t)
	}
	return true
}

func (m *LUT) mulVec2(y, x []float32, r0, r1 int) {
	var b buckets
	k := m.entries
	lut := m.lut2
	for g := r0 / 2; g < r1/2; g++ {
		if m.vecSIMD(y, x, g) {
			continue
		}
		b.clear(k)
		b.fill(m.idx[g*m.cols:(g+1)*m.cols], x)
		var s0, s1 float32
		for e := 0; e < k; e++ {
			a := b[0][e] + b[1][e] + b[2][e] + b[3][e]
			s0 += a * lut[e][0]
			s1 += a * lut[e][1]
		}
		y[2*g] = s0 * m.rowScale(2*g)
		y[2*g+1] = s1 * m.rowScale(2*g+1)
	}
}

func (m *LUT) mulVec4(y, x []float32, r0, r1 int) {
	var b buckets
	k := m.entries
	lut := m.lut4
	for g := r0 / 4; g < r1/4; g++ {
		if m.vecSIMD(y, x, g) {
			continue
		}
		b.clear(k)
		b.fill(m.idx[g*m.cols:(g+1)*m.cols], x)
		var s [4]float32
		for e := 0; e < k; e++ {
			a := b[0][e] + b[1][e] + b[2][e] + b[3][e]
			for t := range s {
				s[t] += a * lut[e][t]
			}
		}
		for t := range s {
			y[4*g+t] = s[t] * m.rowScale(4*g+t)
		}
	}
}

func (m *LUT) decodeGroup(g int, dst []float32) {
	row := m.idx[g*m.cols : (g+1)*m.cols]
	for t := 0; t < m.cd; t++ {
		r := g*m.cd + t
		s := m.rowScale(r)
		out := dst[t*m.cols : (t+1)*m.cols]
		for j, i := range row {
			var v float32
			switch m.cd {
			case 1:
				v = m.lut1[i]
			case 2:
				v = m.lut2[i][t]
			default:
				v = m.lut4[i][t]
			}
			out[j] = v * s
		}
	}
}
