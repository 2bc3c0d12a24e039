package ref

import (
	"math"
	"sort"
	"testing"
)

// nearestBySearch is nearestLevel written the other way: a binary search
// for the first level ≥ x, then the nearer of it and the one below.
func nearestBySearch(levels []float32, x float32) int {
	i := sort.Search(len(levels), func(i int) bool { return levels[i] >= x })
	if i == 0 {
		return 0
	}
	if i == len(levels) || x-levels[i-1] <= levels[i]-x {
		return i - 1
	}
	return i
}

// TestNearestLevel: for both of the quick export's codebooks, over a dense
// sweep of [−4, 4], every level, every midpoint and the floats beside
// them, ±0 and values far outside, nearestLevel picks the level the binary
// search picks; within [−8, 8] no level is nearer (in the float32
// distances the export compares) and a tie goes to the lower level.
func TestNearestLevel(t *testing.T) {
	for _, levels := range [][]float32{lloydMax16, lloydMax4} {
		var xs []float32
		for x := float32(-4); x <= 4; x += 1.0 / 4096 {
			xs = append(xs, x)
		}
		for k, l := range levels {
			xs = append(xs, l, math.Nextafter32(l, -10), math.Nextafter32(l, 10))
			if k+1 < len(levels) {
				mid := (l + levels[k+1]) / 2
				for _, m := range []float32{mid, math.Nextafter32(mid, -10), math.Nextafter32(mid, 10)} {
					xs = append(xs, m)
				}
			}
		}
		xs = append(xs, 0, float32(math.Copysign(0, -1)), -1e30, 1e30, -math.MaxFloat32, math.MaxFloat32)
		ties := 0
		for _, x := range xs {
			got, want := nearestLevel(levels, x), nearestBySearch(levels, x)
			if got != want {
				t.Fatalf("%d levels, x = %v: index %d, the binary search's %d", len(levels), x, got, want)
			}
			if math.Abs(float64(x)) > 8 {
				continue // far out every float32 distance rounds alike: the search's answer is the check
			}
			d := math.Abs(float64(x - levels[got]))
			for k, l := range levels {
				switch dk := math.Abs(float64(x - l)); {
				case dk < d:
					t.Fatalf("%d levels, x = %v: level %d (%v) is nearer than %d (%v)", len(levels), x, k, l, got, levels[got])
				case dk == d && k != got:
					ties++
					if k < got {
						t.Fatalf("%d levels, x = %v: a tie went to the upper level %d, not %d", len(levels), x, got, k)
					}
				}
			}
		}
		if ties == 0 {
			t.Fatalf("%d levels: the sweep has no tie, so the tie rule went untested", len(levels))
		}
	}
}
