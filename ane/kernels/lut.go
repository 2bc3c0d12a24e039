package kernels

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

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
	// the layout the nibble kernels look up (lutNibDot, lutNibDot2).
	tab16 *[4][16]float32
	tab64 *[4][64]float32 // the same for 17–64 entries and CD 2 or 4
	// idx holds one index a byte; nib (which replaces it for codebooks of
	// ≤ 16 entries) two, so a product reads half the bytes: decode is
	// bound by memory bandwidth. A packed row is blocks of 32 indices in 16
	// bytes, byte j holding index j in its low nibble and index 16+j in its
	// high one (one SIMD widening per block); a short last block is padded
	// with zeros.
	idx, nib []uint8
	stride   int // bytes per packed row
	scale    []float32
	name     string
	icb      *intCodebook // the codebook as integers (q4.go), when nib is set
	q8cb     *q8Codebook  // the int8 codebook of the opt-in matrix-matrix path (q8lut.go)
}

// NewLUT wraps idx ((rows/cd) × cols) and scale (rows, or nil) without
// copying, except that the indices of a codebook of ≤ 16 entries are
// packed two to a byte (and idx is then not kept); lut holds entries × cd
// values (entry-major) and is copied.
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
		if nib, stride, ok := packNibbles(idx, rows/cd, cols); ok {
			m.nib, m.stride, m.idx = nib, stride, nil
			m.icb = newIntCodebook(m.tab16, cd, idx, cols)
		}
	case m.entries <= 64 && cd > 1:
		m.tab64 = new([4][64]float32)
		for e := 0; e < m.entries; e++ {
			for t := 0; t < cd; t++ {
				m.tab64[t][e] = lut[e*cd+t]
			}
		}
	}
	m.q8cb = newQ8Codebook(m)
	return m, nil
}

func (m *LUT) Rows() int      { return m.rows }
func (m *LUT) Cols() int      { return m.cols }
func (m *LUT) Group() int     { return m.cd }
func (m *LUT) Format() string { return m.name }
func (m *LUT) Bytes() int64 {
	return m.IndexBytes() + int64(m.entries*m.cd)*2 + int64(len(m.scale))*2
}

// IndexBytes is the size of the stored indices (packed or not).
func (m *LUT) IndexBytes() int64 { return int64(len(m.idx) + len(m.nib)) }

// packNibbles packs idx (groups rows of cols indices) into the nib layout;
// ok is false when an index does not fit in 4 bits (malformed data, which
// then reads the zero padding of the 256-entry codebook through idx).
// Whole blocks of 32 go eight bytes at a time: with every index < 16,
// shifting a word of them by 4 moves each into its byte's high nibble.
// Large matrices are split across goroutines (splitRows): a load packs
// every index of the export once.
func packNibbles(idx []uint8, groups, cols int) (nib []uint8, stride int, ok bool) {
	stride = (cols + 31) / 32 * 16
	nib = make([]uint8, groups*stride)
	whole := cols / 32 * 32
	var bad atomic.Bool
	splitRows(groups, cols, func(g0, g1 int) {
		var high uint64 // any index's bits above the low nibble
		for g := g0; g < g1; g++ {
			row, out := idx[g*cols:(g+1)*cols], nib[g*stride:(g+1)*stride]
			for j := 0; j < whole; j += 32 {
				for k := 0; k < 16; k += 8 {
					lo := binary.LittleEndian.Uint64(row[j+k:])
					hi := binary.LittleEndian.Uint64(row[j+16+k:])
					high |= lo | hi
					binary.LittleEndian.PutUint64(out[j/2+k:], lo|hi<<4)
				}
			}
			for j := whole; j < cols; j++ {
				high |= uint64(row[j])
				out[j/32*16+j%16] |= row[j] << (4 * uint(j%32/16))
			}
		}
		if high&0xf0f0f0f0f0f0f0f0 != 0 {
			bad.Store(true)
		}
	})
	if bad.Load() {
		return nil, 0, false
	}
	return nib, stride, true
}

// nibRow is the packed indices of group g.
func (m *LUT) nibRow(g int) []uint8 { return m.nib[g*m.stride : (g+1)*m.stride] }

// lutNibDotGo is Σ tab[index j]·x[j] over the packed row p, len(x)
// indices: the fallback and ragged tail of lutNibDot.
func lutNibDotGo(tab *[16]float32, p []uint8, x []float32) float32 {
	var s0, s1 float32
	for len(x) >= 32 {
		blk, lo, hi := p[:16:16], x[:16:16], x[16:32:32]
		for j, b := range blk {
			s0 += tab[b&15] * lo[j]
			s1 += tab[b>>4] * hi[j]
		}
		p, x = p[16:], x[32:]
	}
	for j, xj := range x {
		if j < 16 {
			s0 += tab[p[j]&15] * xj
		} else {
			s1 += tab[p[j-16]>>4] * xj
		}
	}
	return s0 + s1
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

// fill accumulates the activations x of group g into its index buckets.
func (m *LUT) fill(b *buckets, g int, x []float32) {
	if m.nib != nil {
		b.fillNib(m.nibRow(g), x[:m.cols])
		return
	}
	b.fillBytes(m.idx[g*m.cols:(g+1)*m.cols], x)
}

// fillNib accumulates x[j] into the bucket of packed index j.
func (b *buckets) fillNib(p []uint8, x []float32) {
	a0, a1, a2, a3 := &b[0], &b[1], &b[2], &b[3]
	for len(x) >= 32 {
		blk, lo, hi := p[:16:16], x[:16:16], x[16:32:32]
		for j := 0; j < 16; j += 2 {
			a0[blk[j]&15] += lo[j]
			a1[blk[j]>>4] += hi[j]
			a2[blk[j+1]&15] += lo[j+1]
			a3[blk[j+1]>>4] += hi[j+1]
		}
		p, x = p[16:], x[32:]
	}
	for j, xj := range x {
		if j < 16 {
			a0[p[j]&15] += xj
		} else {
			a1[p[j-16]>>4] += xj
		}
	}
}

// fillBytes accumulates x[j] into bucket idx[j].
func (b *buckets) fillBytes(idx []uint8, x []float32) {
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
	x = x[:m.cols]
	for r := r0; r < r1; r++ {
		var s float32
		if m.nib != nil {
			s = lutNibDot(&m.tab16[0], m.nibRow(r), x)
		} else {
			s = lut1DotGo(m.lut1, m.idx[r*m.cols:(r+1)*m.cols], x)
		}
		y[r] = s * m.rowScale(r)
	}
}

// lut1DotGo is Σ lut[row[j]]·x[j] for unpacked indices.
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
	if m.nib == nil && m.tab64 == nil {
		return false
	}
	x = x[:m.cols]
	var s [4]float32
	for t := 0; t < m.cd; t += 2 {
		var s0, s1 float32
		var ok bool
		if m.nib != nil {
			s0, s1, ok = lutNibDot2((*[2][16]float32)(m.tab16[t:t+2]), m.nibRow(g), x)
		} else {
			s0, s1, ok = lut64Dot2((*[2][64]float32)(m.tab64[t:t+2]), m.idx[g*m.cols:(g+1)*m.cols], x)
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
		m.fill(&b, g, x)
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
		m.fill(&b, g, x)
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

// nibBatch4 lets the benchmark compare lutNibDot4x4 with two
// lutNibDot2x4 calls; the two give bit-identical outputs.
var nibBatch4 = true

// nibQuad is the argument block of the four-row matrix-matrix kernel
// (lutNibDot4x4): row i's codebook and packed indices.
type nibQuad struct {
	tab [4]*[16]float32
	p   [4]*uint8
}

// nibBatchTail adds to out[4i+t] the products of the columns past the
// kernel's whole blocks (rows p[i] with q.tab[i], activation rows x_t at
// t·stride), in Go.
func nibBatchTail(q *nibQuad, p *[4][]uint8, x []float32, stride, cols, blocks int, out *[16]float32) {
	for t := range 4 {
		xt := x[t*stride+blocks*32 : t*stride+cols]
		for i := range p {
			out[4*i+t] += lutNibDotGo(q.tab[i], p[i][blocks*16:], xt)
		}
	}
}

// mulBatch sets y[t·Rows + r] = W[r,:]·x_t for rows [r0, r1) and the n
// rows x_t of x, two weight rows and four tokens per kernel call (each
// packed index block looked up once for four tokens, each activation
// vector loaded once for two rows). It reports false when that kernel is
// unavailable or the indices are not packed (the caller then decodes rows
// to float32).
func (m *LUT) mulBatch(y, x []float32, n, r0, r1 int) bool {
	if m.nib == nil || !haveNibBatch() {
		return false
	}
	cols := m.cols
	r := r0
	if haveNibBatch4() {
		var q nibQuad
		var p [4][]uint8
		var out [16]float32
		for ; r+4 <= r1; r += 4 {
			for i := range 4 {
				q.tab[i], p[i] = &m.tab16[(r+i)%m.cd], m.nibRow((r+i)/m.cd)
			}
			for t := 0; t+4 <= n; t += 4 {
				lutNibDot4x4(&q, &p, x[t*cols:(t+4)*cols], cols, cols, &out)
				for i := range 4 {
					s := m.rowScale(r + i)
					for k := range 4 {
						y[(t+k)*m.rows+r+i] = out[4*i+k] * s
					}
				}
			}
			for t := n &^ 3; t < n; t++ {
				xt := x[t*cols : (t+1)*cols]
				for i := range 4 {
					y[t*m.rows+r+i] = lutNibDot(q.tab[i], p[i], xt) * m.rowScale(r+i)
				}
			}
		}
	}
	var out [8]float32
	for ; r < r1; r += 2 {
		// Rows r and r+1: one vector group's first two rows (CD 2, 4), or
		// two scalar rows (CD 1; an odd last row is computed twice).
		rb := min(r+1, r1-1)
		pA, pB := m.nibRow(r/m.cd), m.nibRow(rb/m.cd)
		tabA, tabB := &m.tab16[r%m.cd], &m.tab16[rb%m.cd]
		scA, scB := m.rowScale(r), m.rowScale(rb)
		t := 0
		for ; t+4 <= n; t += 4 {
			lutNibDot2x4(tabA, tabB, pA, pB, x[t*cols:(t+4)*cols], cols, cols, &out)
			for k := range 4 {
				y[(t+k)*m.rows+r] = out[k] * scA
				y[(t+k)*m.rows+rb] = out[4+k] * scB
			}
		}
		for ; t < n; t++ {
			xt := x[t*cols : (t+1)*cols]
			y[t*m.rows+r] = lutNibDot(tabA, pA, xt) * scA
			y[t*m.rows+rb] = lutNibDot(tabB, pB, xt) * scB
		}
	}
	return true
}

// tiled: packed rows decode by column range (decodeTile).
func (m *LUT) tiled() bool { return m.nib != nil }

// decodeTile writes columns [c0, c1) of row r (c0 a multiple of 32) into
// dst, the values decodeGroup writes: packed rows only.
func (m *LUT) decodeTile(r, c0, c1 int, dst []float32) {
	decodeNib(m.nibRow(r / m.cd)[c0/2:], &m.tab16[r%m.cd], m.rowScale(r), dst[:c1-c0])
}

func (m *LUT) decodeGroup(g int, dst []float32) {
	for t := 0; t < m.cd; t++ {
		r := g*m.cd + t
		s := m.rowScale(r)
		out := dst[t*m.cols : (t+1)*m.cols]
		if m.nib != nil {
			decodeNib(m.nibRow(g), &m.tab16[t], s, out)
			continue
		}
		for j, i := range m.idx[g*m.cols : (g+1)*m.cols] {
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

// decodeNib writes tab[index j]·s for the packed row p into out.
func decodeNib(p []uint8, tab *[16]float32, s float32, out []float32) {
	done := decodeNibBlocks(p, tab, s, out)
	p, out = p[done/2:], out[done:]
	for len(out) > 0 {
		lo := out[:min(16, len(out))]
		for j := range lo {
			lo[j] = tab[p[j]&15] * s
		}
		hi := out[len(lo):min(32, len(out))]
		for j := range hi {
			hi[j] = tab[p[j]>>4] * s
		}
		p, out = p[min(16, len(p)):], out[len(lo)+len(hi):]
	}
}
