package kernels

import "math"

// The fast mode's matrix-matrix product of the codebook formats where the
// AVX-512 batch kernel is missing (docs/KERNELS.md): the codebook is held
// as int8 codes with one float scale per matrix (q8Codebook), each row
// group is decoded once into int8 rows, and those run the INT8 4-row
// integer kernel (q8batch.go) against the quantized activation rows.
// Single-row products do not use it, and it is off unless
// Runner.IntegerCodebooks is set: on the small preset it misses the fast
// mode's KL bound (docs/KERNELS.md).

// q8Codebook is a LUT's codebook as int8: entry e, component t, is
// scale·code[t][e], scale = max|entry|/127 over the matrix and codes
// rounded to nearest, so each weight is within scale/2 (times its row
// scale) of the float codebook's. Past the stored entries codes are 0,
// as the float codebook's padding is.
type q8Codebook struct {
	scale float32
	code  [4][256]int8
}

// newQ8Codebook quantizes m's codebook.
func newQ8Codebook(m *LUT) *q8Codebook {
	entry := func(e, t int) float32 {
		switch m.cd {
		case 1:
			return m.lut1[e]
		case 2:
			return m.lut2[e][t]
		}
		return m.lut4[e][t]
	}
	var amax float32
	for e := range m.entries {
		for t := range m.cd {
			amax = max(amax, abs32(entry(e, t)))
		}
	}
	c := &q8Codebook{scale: amax / 127}
	if amax == 0 {
		return c
	}
	inv := 127 / amax
	for e := range m.entries {
		for t := range m.cd {
			c.code[t][e] = int8(math.RoundToEven(float64(entry(e, t) * inv)))
		}
	}
	return c
}

// q8Rows: with Runner.IntegerCodebooks a product of n > 1 rows runs in
// integers where lutNibDot2x4 has no kernel (below AVX-512); there the
// float path decodes to float32.
func (m *LUT) q8Rows(n int, codebooks bool) bool { return codebooks && n > 1 && !haveNibBatch() }

// mulQ8 is the integer product of rows [r0, r1) against the n activation
// rows quantized in q, each row group decoded once into buf.
func (m *LUT) mulQ8(y []float32, q *Q8, n, r0, r1 int, buf *[]int8) {
	cols := m.cols
	need := m.cd * cols
	if cap(*buf) < need {
		*buf = make([]int8, need)
	}
	rows := (*buf)[:need]
	for g := r0 / m.cd; g < r1/m.cd; g++ {
		m.decodeGroupQ8(g, rows)
		for k := range m.cd {
			r := g*m.cd + k
			q8RowTokens(y, rows[k*cols:(k+1)*cols], m.rowScale(r)*m.q8cb.scale, q, n, r, m.rows)
		}
	}
}

// decodeGroupQ8 writes the int8 codes of group g's rows into dst
// (Group()·Cols values, row-major), without scales.
func (m *LUT) decodeGroupQ8(g int, dst []int8) {
	for t := range m.cd {
		code, out := &m.q8cb.code[t], dst[t*m.cols:(t+1)*m.cols]
		if m.nib == nil {
			for j, i := range m.idx[g*m.cols : (g+1)*m.cols] {
				out[j] = code[i]
			}
			continue
		}
		p := m.nibRow(g)
		done := decodeNibQ8Prefix(code, p, out)
		p, out = p[done/2:], out[done:]
		for len(out) > 0 {
			lo := out[:min(16, len(out))]
			for j := range lo {
				lo[j] = code[p[j]&15]
			}
			hi := out[len(lo):min(32, len(out))]
			for j := range hi {
				hi[j] = code[p[j]>>4]
			}
			p, out = p[min(16, len(p)):], out[len(lo)+len(hi):]
		}
	}
}
