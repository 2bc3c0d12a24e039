package quantize

import (
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/forgedaemon/forged/ane/nprand"
)

// Published k-means settings (Anemll/anemll-forge scripts/qwen3_lut_common.py, make_rounder).
const (
	scalarIters      = 40
	scalarMaxSamples = 65536
	vectorInits      = 3
	vectorMaxIters   = 200
	vectorMaxSamples = 300000
	vectorTol        = 1e-4 // relative to the data variance, as sklearn's tol
)

// rng is the sampling and initialisation source: numpy's PCG64 stream for a
// seed (the draws themselves are ours, not numpy's choice algorithm).
type rng struct{ p *nprand.PCG64 }

func newRNG(seed uint64) rng { return rng{nprand.NewPCG64(seed)} }

// float64 is uniform in [0, 1).
func (r rng) float64() float64 { return float64(r.p.Uint64()>>11) / (1 << 53) }

// intn is uniform in [0, n) (Lemire's multiply-shift with rejection).
func (r rng) intn(n int) int {
	un := uint64(n)
	for {
		hi, lo := bits.Mul64(r.p.Uint64(), un)
		if lo >= (-un)%un {
			return int(hi)
		}
	}
}

// sample returns min(k, n) distinct indices of [0, n) in increasing order:
// a partial Fisher–Yates shuffle over a sparse view of 0..n−1, so memory is
// O(k) even for a vocabulary-sized head.
func (r rng) sample(n, k int) []int {
	if k >= n {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	moved := make(map[int]int, 2*k)
	at := func(i int) int {
		if v, ok := moved[i]; ok {
			return v
		}
		return i
	}
	idx := make([]int, k)
	for i := 0; i < k; i++ {
		j := i + r.intn(n-i)
		idx[i] = at(j)
		moved[j] = at(i)
	}
	slices.Sort(idx)
	return idx
}

// fitScalar fits the scalar codebooks (one per group of groupRows rows, or
// one for the tensor when groupRows is 0) by weighted 1-D Lloyd.
func fitScalar(w []float32, rows, cols, groupRows, k int, opts FitOptions) []float32 {
	if groupRows == 0 {
		groupRows = rows
	}
	out := make([]float32, 0, rows/groupRows*k)
	r := newRNG(opts.Seed)
	for g := 0; g < rows/groupRows; g++ {
		n := groupRows * cols
		base := g * groupRows * cols
		pick := r.sample(n, scalarMaxSamples)
		vals, wts := make([]float64, len(pick)), make([]float64, len(pick))
		for i, p := range pick {
			vals[i] = float64(w[base+p])
			wts[i] = 1
			if opts.ColumnWeights != nil {
				wts[i] = opts.ColumnWeights[p%cols]
			}
		}
		for _, c := range lloyd1D(vals, wts, k) {
			out = append(out, float32(c))
		}
	}
	return out
}

// lloyd1D is weighted 1-D Lloyd from the quantile initialisation
// linspace(0.5/k, 1−0.5/k, k); an empty cluster keeps its value.
func lloyd1D(vals, wts []float64, k int) []float64 {
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	c := make([]float64, k)
	for i := range c {
		c[i] = quantile(sorted, (0.5+float64(i))/float64(k))
	}
	sum, wsum := make([]float64, k), make([]float64, k)
	for it := 0; it < scalarIters; it++ {
		clear(sum)
		clear(wsum)
		for i, v := range vals {
			best, bestD := 0, math.Inf(1)
			for e, ce := range c {
				if d := math.Abs(v - ce); d < bestD {
					best, bestD = e, d
				}
			}
			sum[best] += wts[i] * v
			wsum[best] += wts[i]
		}
		for e := range c {
			if wsum[e] > 0 {
				c[e] = sum[e] / wsum[e]
			}
		}
	}
	return c
}

// quantile is numpy's default (linear) quantile of sorted data.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	f := pos - float64(lo)
	return sorted[lo] + f*(sorted[hi]-sorted[lo])
}

// fitVector fits a vector codebook of k entries over the cd-vectors
// (cd consecutive output rows at one input column), weighted k-means with
// k-means++ initialisation, best of vectorInits runs.
func fitVector(w []float32, rows, cols, cd, k int, opts FitOptions) []float32 {
	r := newRNG(opts.Seed)
	n := rows / cd * cols
	pick := r.sample(n, vectorMaxSamples)
	x := make([]float64, len(pick)*cd)
	wt := make([]float64, len(pick))
	for i, p := range pick {
		g, j := p/cols, p%cols
		for t := 0; t < cd; t++ {
			x[i*cd+t] = float64(w[(g*cd+t)*cols+j])
		}
		wt[i] = 1
		if opts.ColumnWeights != nil {
			wt[i] = opts.ColumnWeights[j]
		}
	}
	km := kmeans{x: x, w: wt, cd: cd, k: k}
	var best []float64
	bestInertia := math.Inf(1)
	for init := 0; init < vectorInits; init++ {
		c, inertia := km.run(r)
		if inertia < bestInertia || best == nil {
			best, bestInertia = c, inertia
		}
	}
	out := make([]float32, len(best))
	for i, v := range best {
		out[i] = float32(v)
	}
	return out
}

type kmeans struct {
	x  []float64 // n × cd
	w  []float64 // n sample weights
	cd int
	k  int
	// exhaustive turns the bound test off (every point is compared with
	// every centre); the tests check both give the same codebook.
	exhaustive bool
}

func (km *kmeans) n() int { return len(km.w) }

func (km *kmeans) dist2(i int, c []float64) float64 {
	if km.cd == 2 {
		d0, d1 := km.x[2*i]-c[0], km.x[2*i+1]-c[1]
		d := d0 * d0
		d += d1 * d1 // as the loop below adds it (where multiply-adds fuse, alike)
		return d
	}
	var d float64
	for t := 0; t < km.cd; t++ {
		diff := km.x[i*km.cd+t] - c[t]
		d += diff * diff
	}
	return d
}

// nearest is the centre closest to point i, its squared distance (the
// first of equals) and the squared distance of the runner-up. The cd = 2
// case (vector 2x16 and 2x64) is written out; it adds the same terms in
// the same order as dist2, so the result is identical.
func (km *kmeans) nearest(i int, c []float64) (best int, bestD, second float64) {
	bestD, second = math.Inf(1), math.Inf(1)
	if km.cd == 2 {
		x0, x1 := km.x[2*i], km.x[2*i+1]
		c = c[:2*km.k]
		for e := 0; e < len(c); e += 2 {
			d0, d1 := x0-c[e], x1-c[e+1]
			d := d0 * d0
			d += d1 * d1
			if d < bestD {
				best, bestD, second = e/2, d, bestD
			} else if d < second {
				second = d
			}
		}
		return best, bestD, second
	}
	for e := 0; e < km.k; e++ {
		if d := km.dist2(i, c[e*km.cd:(e+1)*km.cd]); d < bestD {
			best, bestD, second = e, d, bestD
		} else if d < second {
			second = d
		}
	}
	return best, bestD, second
}

// bounds are Hamerly's per-point distance bounds, which let assign skip
// the search for most points once the centres settle: u[i] ≥ the distance
// from point i to its centre, l[i] ≤ its distance to every other centre.
// A point is only skipped when the bounds prove its centre strictly
// nearer than every other by more than margin — far above the rounding
// of the distances — so the labels are exactly the exhaustive search's
// (first of equals included: a tie is never proven strict).
type bounds struct {
	u, l   []float64
	margin float64
}

func (km *kmeans) newBounds() *bounds {
	var r float64 // every centre is a weighted mean of points: |c| ≤ max |x|
	for i := 0; i < km.n(); i++ {
		var s float64
		for t := 0; t < km.cd; t++ {
			s += km.x[i*km.cd+t] * km.x[i*km.cd+t]
		}
		r = math.Max(r, math.Sqrt(s))
	}
	b := &bounds{u: make([]float64, km.n()), l: make([]float64, km.n()), margin: 1e-9 * r}
	for i := range b.u {
		b.u[i] = math.Inf(1) // nothing known yet: the first pass searches
	}
	return b
}

// moved loosens the bounds after the centres moved from old to c.
func (b *bounds) moved(km *kmeans, old, c []float64, labels []int) {
	shift := make([]float64, km.k)
	first, second := 0.0, 0.0 // the largest and second-largest shifts
	arg := -1
	for e := range shift {
		shift[e] = distance(c[e*km.cd:(e+1)*km.cd], old[e*km.cd:(e+1)*km.cd])
		if shift[e] > first {
			first, second, arg = shift[e], first, e
		} else if shift[e] > second {
			second = shift[e]
		}
	}
	for i, a := range labels {
		b.u[i] += shift[a]
		if a == arg {
			b.l[i] -= second
		} else {
			b.l[i] -= first
		}
	}
}

// distance is the Euclidean distance between two centres.
func distance(a, b []float64) float64 {
	var d float64
	for t, v := range a {
		d += (v - b[t]) * (v - b[t])
	}
	return math.Sqrt(d)
}

// run is one k-means++ initialisation followed by Lloyd iterations until
// the centres move less than the tolerance or vectorMaxIters.
func (km *kmeans) run(r rng) ([]float64, float64) {
	c := km.plusPlus(r)
	tol := vectorTol * km.variance()
	labels := make([]int, km.n())
	b := km.newBounds()
	old := make([]float64, len(c))
	var inertia float64
	for it := 0; it < vectorMaxIters; it++ {
		// The inertia is kept from the last iteration, or from the pass
		// after convergence.
		sums, wsum, in := km.assign(c, labels, b, it == vectorMaxIters-1)
		inertia = in
		copy(old, c)
		var shift float64
		for e := 0; e < km.k; e++ {
			if wsum[e] <= 0 {
				continue // an empty cluster keeps its centre
			}
			for t := 0; t < km.cd; t++ {
				v := sums[e*km.cd+t] / wsum[e]
				d := v - c[e*km.cd+t]
				shift += d * d
				c[e*km.cd+t] = v
			}
		}
		b.moved(km, old, c, labels)
		if shift <= tol {
			_, _, inertia = km.assign(c, labels, b, true)
			break
		}
	}
	return c, inertia
}

// variance is the mean per-dimension weighted variance of the data.
func (km *kmeans) variance() float64 {
	var v, ws float64
	for t := 0; t < km.cd; t++ {
		var m float64
		ws = 0
		for i := 0; i < km.n(); i++ {
			m += km.w[i] * km.x[i*km.cd+t]
			ws += km.w[i]
		}
		if ws == 0 {
			return 0
		}
		m /= ws
		for i := 0; i < km.n(); i++ {
			d := km.x[i*km.cd+t] - m
			v += km.w[i] * d * d
		}
	}
	return v / ws / float64(km.cd)
}

// halfGaps is, per centre, half the distance to its nearest other centre:
// a point closer than that to its centre is nearer to it than to any other.
func (km *kmeans) halfGaps(c []float64) []float64 {
	g := make([]float64, km.k)
	for e := range g {
		g[e] = math.Inf(1)
		for f := 0; f < km.k; f++ {
			if f == e {
				continue
			}
			g[e] = math.Min(g[e], distance(c[e*km.cd:(e+1)*km.cd], c[f*km.cd:(f+1)*km.cd])/2)
		}
	}
	return g
}

// label sets labels[i] to the nearest centre, searching all centres only
// when the bounds cannot prove the current label right. With exact set it
// returns the squared distance to that centre (for the inertia), else 0
// when the bounds alone decided.
func (km *kmeans) label(i int, c []float64, labels []int, b *bounds, gaps []float64, exact bool) float64 {
	if !km.exhaustive {
		a := labels[i]
		m := gaps[a]
		if l := b.l[i]; l > m {
			m = l
		}
		if b.u[i]+b.margin < m && !exact {
			return 0
		}
		d := km.dist2(i, c[a*km.cd:(a+1)*km.cd])
		if b.u[i]+b.margin < m {
			return d
		}
		if b.u[i] = math.Sqrt(d); b.u[i]+b.margin < m {
			return d
		}
	}
	best, bestD, second := km.nearest(i, c)
	labels[i] = best
	b.u[i], b.l[i] = math.Sqrt(bestD), math.Sqrt(second)
	return bestD
}

// assign labels every point with its nearest centre and returns the
// weighted sums per centre and, if exact is set, the inertia. Points are split into fixed
// chunks reduced in order, so the result does not depend on scheduling.
func (km *kmeans) assign(c []float64, labels []int, b *bounds, exact bool) (sums, wsum []float64, inertia float64) {
	const chunk = 8192
	nch := (km.n() + chunk - 1) / chunk
	type part struct {
		sums, wsum []float64
		inertia    float64
	}
	parts := make([]part, nch)
	gaps := km.halfGaps(c)
	var wg sync.WaitGroup
	next := make(chan int, nch)
	for i := 0; i < nch; i++ {
		next <- i
	}
	close(next)
	for range min(runtime.GOMAXPROCS(0), nch) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ch := range next {
				p := part{sums: make([]float64, km.k*km.cd), wsum: make([]float64, km.k)}
				for i := ch * chunk; i < min((ch+1)*chunk, km.n()); i++ {
					bestD := km.label(i, c, labels, b, gaps, exact)
					best := labels[i]
					for t := 0; t < km.cd; t++ {
						p.sums[best*km.cd+t] += km.w[i] * km.x[i*km.cd+t]
					}
					p.wsum[best] += km.w[i]
					p.inertia += km.w[i] * bestD
				}
				parts[ch] = p
			}
		}()
	}
	wg.Wait()
	sums, wsum = make([]float64, km.k*km.cd), make([]float64, km.k)
	for _, p := range parts {
		for i, v := range p.sums {
			sums[i] += v
		}
		for i, v := range p.wsum {
			wsum[i] += v
		}
		inertia += p.inertia
	}
	return sums, wsum, inertia
}

// plusPlus is greedy weighted k-means++ (as scikit-learn: 2+ln k candidate
// draws per centre, keep the one that lowers the potential most).
func (km *kmeans) plusPlus(r rng) []float64 {
	n, cd := km.n(), km.cd
	c := make([]float64, km.k*cd)
	first := km.drawWeighted(r, km.w)
	copy(c[:cd], km.x[first*cd:(first+1)*cd])
	closest := make([]float64, n)
	prob := make([]float64, n)
	for i := range closest {
		closest[i] = km.dist2(i, c[:cd])
	}
	trials := 2 + int(math.Log(float64(km.k)))
	cand := make([]float64, n)
	for e := 1; e < km.k; e++ {
		for i := range prob {
			prob[i] = km.w[i] * closest[i]
		}
		bestPot, bestIdx := math.Inf(1), -1
		var bestClosest []float64
		for range trials {
			idx := km.drawWeighted(r, prob)
			var pot float64
			for i := 0; i < n; i++ {
				cand[i] = math.Min(closest[i], km.dist2(i, km.x[idx*cd:(idx+1)*cd]))
				pot += km.w[i] * cand[i]
			}
			if pot < bestPot {
				bestPot, bestIdx = pot, idx
				bestClosest = append(bestClosest[:0], cand...)
			}
		}
		copy(c[e*cd:(e+1)*cd], km.x[bestIdx*cd:(bestIdx+1)*cd])
		copy(closest, bestClosest)
	}
	return c
}

// drawWeighted draws an index with probability proportional to p (uniform
// when p sums to zero).
func (km *kmeans) drawWeighted(r rng, p []float64) int {
	var total float64
	for _, v := range p {
		total += v
	}
	if !(total > 0) {
		return r.intn(len(p))
	}
	u := r.float64() * total
	for i, v := range p {
		u -= v
		if u < 0 {
			return i
		}
	}
	return len(p) - 1
}
