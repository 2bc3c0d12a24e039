package quantize

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKMeansBoundsExact: the bound-pruned Lloyd iterations give exactly
// the centres and inertia of the exhaustive search, for vector lengths 2
// and 4, with and without sample weights, and on data full of exact ties
// (points on an integer grid, duplicated), where a loose bound would pick
// a different one of two equally near centres.
func TestKMeansBoundsExact(t *testing.T) {
	type data struct {
		name string
		x, w []float64
		cd   int
	}
	r := rand.New(rand.NewPCG(7, 7))
	var sets []data
	for _, cd := range []int{2, 4} {
		n := 5000
		gauss, grid, wts := make([]float64, n*cd), make([]float64, n*cd), make([]float64, n)
		for i := range gauss {
			gauss[i] = r.NormFloat64() * (1 + float64(i%cd))
			grid[i] = float64(r.IntN(5) - 2)
		}
		for i := range wts {
			wts[i] = r.Float64() * 3
		}
		ones := make([]float64, n)
		for i := range ones {
			ones[i] = 1
		}
		sets = append(sets, data{"gauss", gauss, ones, cd}, data{"gauss weighted", gauss, wts, cd},
			data{"grid ties", grid, ones, cd}, data{"grid weighted", grid, wts, cd})
	}
	for _, d := range sets {
		for _, k := range []int{4, 16} {
			var got [2][]float64
			var inertia [2]float64
			for v, exhaustive := range []bool{true, false} {
				km := kmeans{x: d.x, w: d.w, cd: d.cd, k: k, exhaustive: exhaustive}
				got[v], inertia[v] = km.run(newRNG(3))
			}
			if !slices.Equal(got[0], got[1]) || math.Float64bits(inertia[0]) != math.Float64bits(inertia[1]) {
				t.Errorf("%s cd=%d k=%d: pruned search gave centres %v (inertia %v), exhaustive %v (%v)",
					d.name, d.cd, k, got[1], inertia[1], got[0], inertia[0])
			}
		}
	}
}

// TestNearestRunnerUp: nearest returns the first of equal centres and the
// runner-up distance, as a brute-force scan.
func TestNearestRunnerUp(t *testing.T) {
	for _, cd := range []int{2, 3} {
		r := rand.New(rand.NewPCG(uint64(cd), 1))
		x := make([]float64, 200*cd)
		for i := range x {
			x[i] = float64(r.IntN(3))
		}
		c := make([]float64, 6*cd)
		for i := range c {
			c[i] = float64(r.IntN(3))
		}
		km := kmeans{x: x, w: make([]float64, 200), cd: cd, k: 6}
		for i := 0; i < 200; i++ {
			var ds []float64
			for e := 0; e < 6; e++ {
				ds = append(ds, km.dist2(i, c[e*cd:(e+1)*cd]))
			}
			want := slices.Index(ds, slices.Min(ds))
			sorted := slices.Clone(ds)
			slices.Sort(sorted)
			best, bestD, second := km.nearest(i, c)
			if best != want || bestD != sorted[0] || second != sorted[1] {
				t.Fatalf("cd=%d point %d: got (%d, %v, %v), distances %v", cd, i, best, bestD, second, ds)
			}
		}
	}
}

// TestBoundsNeverSkipATie: a point exactly between two centres, currently
// labelled with the later one and with bounds that touch, is searched
// again and gets the first of the two (argmin's choice).
func TestBoundsNeverSkipATie(t *testing.T) {
	km := kmeans{x: []float64{3, 0}, w: []float64{1}, cd: 2, k: 3}
	c := []float64{0, 0, 2, 0, 4, 0}
	b := km.newBounds()
	b.u[0], b.l[0] = 1, 1
	labels := []int{2}
	if d := km.label(0, c, labels, b, km.halfGaps(c), true); labels[0] != 1 || d != 1 {
		t.Fatalf("label %d at squared distance %v, want centre 1 at 1", labels[0], d)
	}
}
