package kernels

import (
	"math"
	"testing"
)

// FuzzLUTRow feeds arbitrary index bytes (as read from an export) through
// 16-entry scalar and vector matrices (packed to nibbles when every index
// fits, else read byte by byte) and the 64-entry kernel: they must never
// read out of bounds and must agree with the 256-entry fallback, which
// reads an index past the codebook as 0; where they pack, the integer
// products (q4.go) stay within their bound.
func FuzzLUTRow(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 15, 14})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 200, 8, 9})
	f.Add(make([]byte, 41))
	var tab [2][16]float32
	var lut0, lut1 [256]float32
	var pairs []float32
	for e := range 16 {
		tab[0][e], tab[1][e] = float32(e)-7.5, float32(e*e)/16
		lut0[e], lut1[e] = tab[0][e], tab[1][e]
		pairs = append(pairs, tab[0][e], tab[1][e])
	}
	var tab64 [2][64]float32
	var lut64 [256]float32
	for e := range 64 {
		tab64[0][e], tab64[1][e] = float32(e%9)-4, float32(e)/8
		lut64[e] = tab64[0][e]
	}
	f.Fuzz(func(t *testing.T, idx []byte) {
		if len(idx) == 0 {
			return
		}
		x := make([]float32, len(idx))
		var abs0, abs1 float64
		for j, i := range idx {
			x[j] = float32(j%13) - 6
			abs0 += math.Abs(float64(lut0[i] * x[j]))
			abs1 += math.Abs(float64(lut1[i] * x[j]))
		}
		want0, want1 := lut1DotGo(&lut0, idx, x), lut1DotGo(&lut1, idx, x)
		scalar, err := NewLUT("LUT4", 1, len(idx), 1, tab[0][:], idx, nil)
		if err != nil {
			t.Fatal(err)
		}
		vector, err := NewLUT("vector 2x16", 2, len(idx), 2, pairs, idx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var y1 [1]float32
		var y2 [2]float32
		scalar.mulVec(y1[:], x, 0, 1)
		vector.mulVec(y2[:], x, 0, 2)
		for _, c := range []struct {
			got, want float32
			abs       float64
		}{{y1[0], want0, abs0}, {y2[0], want0, abs0}, {y2[1], want1, abs1}} {
			if math.Abs(float64(c.got-c.want)) > 1e-5*c.abs+1e-6 {
				t.Fatalf("product %v, 256-entry fallback %v", c.got, c.want)
			}
		}
		checkIntegerRow(t, scalar, vector, &tab, idx, x)
		g0, _, ok64 := lut64Dot2(&tab64, idx, x)
		valid64 := true
		var abs64 float64
		for j, i := range idx {
			valid64 = valid64 && i < 64
			abs64 += math.Abs(float64(lut64[i] * x[j]))
		}
		if haveLUT64() && len(idx) >= 8 && ok64 != valid64 {
			t.Fatalf("64-entry kernel ok=%v for indices valid=%v", ok64, valid64)
		}
		if want := lut1DotGo(&lut64, idx, x); ok64 && math.Abs(float64(g0-want)) > 1e-5*abs64+1e-6 {
			t.Fatalf("64-entry kernel %v, fallback %v", g0, want)
		}
	})
}

// checkIntegerRow: a 16-entry matrix has an integer codebook exactly when
// every index fits in 4 bits, and then its integer products (scalar and
// both vector rows) are within checkQ4Dot's bound.
func checkIntegerRow(t *testing.T, scalar, vector *LUT, tab *[2][16]float32, idx []uint8, x []float32) {
	t.Helper()
	packed := true
	for _, i := range idx {
		packed = packed && i < 16
	}
	if (scalar.icb != nil) != packed || (vector.icb != nil) != packed {
		t.Fatalf("integer codebooks %v, %v for indices that pack: %v", scalar.icb != nil, vector.icb != nil, packed)
	}
	if !packed {
		return
	}
	var q Q16
	QuantizeQ16(&q, x, sharedActs(scalar, vector)) // one quantization for both, as an ApplyPair
	var y1 [1]float32
	var y2 [2]float32
	scalar.mulVecQ16(y1[:], &q, 0, 1)
	vector.mulVecQ16(y2[:], &q, 0, 2)
	checkQ4Dot(t, "LUT4 integer", y1[0], &tab[0], &scalar.icb.code[0], scalar.icb.scale[0], idx, x, &q)
	for r := range 2 {
		checkQ4Dot(t, "vector integer", y2[r], &tab[r], &vector.icb.code[r], vector.icb.scale[r], idx, x, &q)
	}
	checkBatchRows(t, []*LUT{scalar, vector}, x)
}

// checkBatchRows: where the Q16 batch kernels run, three rows (x, −x and
// x/1000) through mulBatchQ16 give each token exactly its one-row
// integer product, for each matrix.
func checkBatchRows(t *testing.T, ms []*LUT, x []float32) {
	t.Helper()
	if !haveQ16Batch() {
		return
	}
	n, cols := 3, len(x)
	rows := make([]float32, 0, n*cols)
	for _, f := range []float32{1, -1, 1e-3} {
		for _, v := range x {
			rows = append(rows, f*v)
		}
	}
	var qb q16Batch
	var q Q16
	levels := sharedActs(ms...)
	quantizeQ16Batch(&qb, rows, n, cols, levels)
	for _, m := range ms {
		got := make([]float32, n*m.rows)
		m.mulBatchQ16(got, &qb, 0, m.rows)
		for tok := range n {
			QuantizeQ16(&q, rows[tok*cols:(tok+1)*cols], levels)
			want := make([]float32, m.rows)
			m.mulVecQ16(want, &q, 0, m.rows)
			if !equalBits(got[tok*m.rows:(tok+1)*m.rows], want) {
				t.Fatalf("%s token %d: batch %v, one row %v", m.name, tok, got[tok*m.rows:(tok+1)*m.rows], want)
			}
		}
	}
}

// sharedActs is the activation bound that every matrix of ms allows, as
// Runner's sharedLevels takes it for both sides of an ApplyPair.
func sharedActs(ms ...*LUT) float32 {
	levels := float32(32767)
	for _, m := range ms {
		levels = min(levels, m.icb.actMax)
	}
	return levels
}
