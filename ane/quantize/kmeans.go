package quantize

import (
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/forgedaemon/forged/ane/nprand"
)

// Published k-means settings (§4.3).
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
}

func (km *kmeans) n() int { return len(km.w) }

func (km *kmeans) dist2(i int, c []float64) float64 {
	var d float64
	for t := 0; t < km.cd; t++ {
		diff := km.x[i*km.cd+t] - c[t]
		d += diff * diff
	}
	return d
}

// run is one k-means++ initialisation followed by Lloyd iterations until
// the centres move less than the tolerance or vectorMaxIters.
func (km *kmeans) run(r rng) ([]float64, float64) {
	c := km.plusPlus(r)
	tol := vectorTol * km.variance()
	labels := make([]int, km.n())
	var inertia float64
	for it := 0; it < vectorMaxIters; it++ {
		sums, wsum, in := km.assign(c, labels)
		inertia = in
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
		if shift <= tol {
			_, _, inertia = km.assign(c, labels)
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

// assign labels every point with its nearest centre and returns the
// weighted sums per centre and the inertia. Points are split into fixed
// chunks reduced in order, so the result does not depend on scheduling.
func (km *kmeans) assign(c []float64, labels []int) (sums, wsum []float64, inertia float64) {
	const chunk = 8192
	nch := (km.n() + chunk - 1) / chunk
	type part struct {
		sums, wsum []float64
		inertia    float64
	}
	parts := make([]part, nch)
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
					best, bestD := 0, math.Inf(1)
					for e := 0; e < km.k; e++ {
						if d := km.dist2(i, c[e*km.cd:(e+1)*km.cd]); d < bestD {
							best, bestD = e, d
						}
					}
					labels[i] = best
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
