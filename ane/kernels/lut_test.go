package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPackNibbles reads every index back out of the packed layout by its
// definition (index j of a group in byte j/32·16 + j%16 of the group's
// row, the low nibble for j%32 < 16), over several groups and whole,
// ragged and short column counts, and a matrix large enough to be packed
// in parts at once: every index where it belongs, every padding nibble
// zero, and an index ≥ 16 refused, in the last row's tail or its last
// whole block.
func TestPackNibbles(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 16))
	shapes := [][2]int{{3, 1}, {3, 15}, {3, 16}, {3, 17}, {3, 31}, {3, 32}, {3, 33}, {3, 64}, {3, 95},
		{3, 256}, {3, 1029}, {2 * minSplitWork / 1000, 1000}}
	for _, shape := range shapes {
		groups, cols := shape[0], shape[1]
		idx := make([]uint8, groups*cols)
		for i := range idx {
			idx[i] = uint8(r.IntN(16))
		}
		nib, stride, ok := packNibbles(idx, groups, cols)
		if !ok || stride != (cols+31)/32*16 || len(nib) != groups*stride {
			t.Fatalf("%d×%d: ok %v, stride %d, %d bytes", groups, cols, ok, stride, len(nib))
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
					t.Fatalf("%d×%d, group %d, index %d: packed %d, want %d", groups, cols, g, j, got, want)
				}
			}
		}
		for _, j := range []int{cols - 1, cols/32*32 - 1} {
			if j < 0 {
				continue
			}
			bad := slices.Clone(idx)
			bad[(groups-1)*cols+j] = 16 + uint8(r.IntN(240))
			if _, _, ok := packNibbles(bad, groups, cols); ok {
				t.Fatalf("%d×%d: index %d of the last row, %d, was packed", groups, cols, j, bad[(groups-1)*cols+j])
			}
		}
	}
}

// TestRunCounts: each run's counts are its indices counted one by one,
// on ragged last runs and on a matrix large enough to be counted in parts
// at once.
func TestRunCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 17))
	for _, shape := range [][2]int{{3, 1}, {3, 31}, {3, 255}, {3, 256}, {3, 257}, {3, 700}, {2 * minSplitWork / 777, 777}} {
		rows, cols := shape[0], shape[1]
		idx := make([]uint8, rows*cols)
		for i := range idx {
			idx[i] = uint8(r.IntN(16))
		}
		got := runCounts(idx, cols)
		perRow := (cols + runCols - 1) / runCols
		if len(got) != rows*perRow {
			t.Fatalf("%d×%d: %d runs, want %d", rows, cols, len(got), rows*perRow)
		}
		for row := range rows {
			for u := range perRow {
				var want [16]uint16
				for c := u * runCols; c < min((u+1)*runCols, cols); c++ {
					want[idx[row*cols+c]]++
				}
				if got[row*perRow+u] != want {
					t.Fatalf("%d×%d, row %d, run %d: counts %v, want %v", rows, cols, row, u, got[row*perRow+u], want)
				}
			}
		}
	}
}
