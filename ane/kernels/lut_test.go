package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestPackNibbles reads every index back out of the packed layout by its
// definition (index j of a group in byte j/32·16 + j%16 of the group's
// row, the low nibble for j%32 < 16), over several groups and whole,
// ragged and short column counts: every index where it belongs, every
// padding nibble zero, and an index ≥ 16 refused.
func TestPackNibbles(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 16))
	for _, cols := range []int{1, 15, 16, 17, 31, 32, 33, 64, 95, 256, 1029} {
		const groups = 3
		idx := make([]uint8, groups*cols)
		for i := range idx {
			idx[i] = uint8(r.IntN(16))
		}
		nib, stride, ok := packNibbles(idx, groups, cols)
		if !ok || stride != (cols+31)/32*16 || len(nib) != groups*stride {
			t.Fatalf("cols %d: ok %v, stride %d, %d bytes", cols, ok, stride, len(nib))
		}
		for g := range groups {
			for j := range stride * 2 { // every nibble of the row, the padding included
				b := nib[g*stride+j/32*16+j%16]
				got := b & 15
				if j%32 >= 16 {
					got = b >> 4
				}
				want := uint8(0)
				if j < cols {
					want = idx[g*cols+j]
				}
				if got != want {
					t.Fatalf("cols %d, group %d, index %d: packed %d, want %d", cols, g, j, got, want)
				}
			}
		}
		idx[len(idx)-1] = 16
		if _, _, ok := packNibbles(idx, groups, cols); ok {
			t.Fatalf("cols %d: an index of 16 was packed", cols)
		}
	}
}
