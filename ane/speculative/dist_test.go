package speculative

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/forgedaemon/forged/ane/sample"
)

// Sampled speculative decoding must not change the output distribution.
// Over many seeded runs on a 10-token vocabulary, the first three output
// tokens are compared with the exact distribution of plain sampling
// (goodness of fit), and tokens 8–10 (reached through later cycles and
// bonus tokens) with plain-sampling runs (two-sample test); both at
// p = 0.001. A drafter that misreports q, so drafts are accepted too
// often, must be caught by the same tests.
func TestSampledDistributionMatchesPlain(t *testing.T) {
	const (
		vocab = 10
		runs  = 8000
		alpha = 0.001
	)
	opts := sample.Options{Temperature: 1, TopK: 6, TopP: 0.9, PresencePenalty: 0.6, MaxTokens: 10}
	prompt := []int{1, 2}
	exact := exactPrefixDist(t, vocab, prompt, opts, 3)

	collect := func(d func(*toyTarget, uint64) Drafter, seedBase uint64) (head, tail map[string]int) {
		head, tail = map[string]int{}, map[string]int{}
		mode := Config{Mode: ModeOn}
		if d == nil {
			mode = Config{}
		}
		for i := 0; i < runs; i++ {
			out, _, _, _ := run(t, vocab, seedBase+uint64(i), prompt, opts, d, mode)
			head[fmt.Sprint(out[:3])]++
			tail[fmt.Sprint(out[7:10])]++
		}
		return head, tail
	}
	_, plainTail := collect(nil, 1<<32)

	cases := append(drafterCases(), drafterCase{"lying-q (biased)", func(t *toyTarget, seed uint64) Drafter {
		return &qDrafter{t: t, rng: rand.New(rand.NewPCG(seed, 5)), lie: true}
	}})
	for ci, dc := range cases {
		biased := dc.name == "lying-q (biased)"
		head, tail := collect(dc.make, uint64(ci+1)<<40)
		stat, dof := goodnessOfFit(head, exact, runs)
		pHead := chiSquareSurvival(stat, dof)
		stat2, dof2 := twoSample(tail, plainTail)
		pTail := chiSquareSurvival(stat2, dof2)
		t.Logf("%-18s first 3 tokens vs exact: χ²=%.1f dof=%d p=%.3g; tokens 8-10 vs plain: χ²=%.1f dof=%d p=%.3g",
			dc.name, stat, dof, pHead, stat2, dof2, pTail)
		if biased {
			if pHead >= alpha || pTail >= alpha {
				t.Errorf("%s: the biased variant was not detected (p = %.3g, %.3g)", dc.name, pHead, pTail)
			}
			continue
		}
		if pHead < alpha || pTail < alpha {
			t.Errorf("%s: speculative sampling differs from plain sampling (p = %.3g, %.3g)", dc.name, pHead, pTail)
		}
	}
}

// exactPrefixDist enumerates the probability of every n-token output prefix
// under plain sampling, using the sampler's Dist (tested against a naive
// implementation in package sample).
func exactPrefixDist(t *testing.T, vocab int, prompt []int, opts sample.Options, n int) map[string]float64 {
	s, err := sample.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	row := make([]float32, vocab)
	var walk func(prefix []int, p float64)
	walk = func(prefix []int, p float64) {
		if len(prefix) == n {
			out[fmt.Sprint(prefix)] += p
			return
		}
		toyLogits(77, vocab, append(append([]int{}, prompt...), prefix...), row)
		ids, probs := s.Dist(row, prefix)
		ids, probs = append([]int{}, ids...), append([]float64{}, probs...)
		for i, id := range ids {
			walk(append(append([]int{}, prefix...), id), p*probs[i])
		}
	}
	walk(nil, 1)
	return out
}

// goodnessOfFit is Pearson's χ² of observed counts against expected
// probabilities; cells expecting fewer than 5 are pooled into one.
func goodnessOfFit(obs map[string]int, exact map[string]float64, n int) (float64, int) {
	stat, cells := 0.0, 0
	pooledObs, pooledExp := 0.0, 0.0
	for k, p := range exact {
		e, o := p*float64(n), float64(obs[k])
		if e < 5 {
			pooledObs, pooledExp = pooledObs+o, pooledExp+e
			continue
		}
		stat += (o - e) * (o - e) / e
		cells++
	}
	for k, c := range obs { // outcomes plain sampling can never produce
		if _, ok := exact[k]; !ok {
			pooledObs += float64(c)
		}
	}
	if pooledExp > 0 {
		stat += (pooledObs - pooledExp) * (pooledObs - pooledExp) / pooledExp
		cells++
	} else if pooledObs > 0 {
		return math.Inf(1), max(cells-1, 1)
	}
	return stat, cells - 1
}

// twoSample is the χ² test of homogeneity of two equally sized samples;
// outcomes seen fewer than 10 times in both together are pooled.
func twoSample(a, b map[string]int) (float64, int) {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	type cell struct{ a, b float64 }
	var cells []cell
	var pool cell
	for _, k := range sorted {
		c := cell{float64(a[k]), float64(b[k])}
		if c.a+c.b < 10 {
			pool.a, pool.b = pool.a+c.a, pool.b+c.b
			continue
		}
		cells = append(cells, c)
	}
	if pool.a+pool.b > 0 {
		cells = append(cells, pool)
	}
	na, nb := 0.0, 0.0
	for _, c := range cells {
		na, nb = na+c.a, nb+c.b
	}
	stat := 0.0
	for _, c := range cells {
		tot := c.a + c.b
		ea, eb := tot*na/(na+nb), tot*nb/(na+nb)
		stat += (c.a-ea)*(c.a-ea)/ea + (c.b-eb)*(c.b-eb)/eb
	}
	return stat, len(cells) - 1
}

// chiSquareSurvival is P(χ²_dof ≥ x) = Q(dof/2, x/2), the regularized
// upper incomplete gamma function (series below a+1, continued fraction above).
func chiSquareSurvival(x float64, dof int) float64 {
	if math.IsInf(x, 1) {
		return 0
	}
	a, x := float64(dof)/2, x/2
	if x <= 0 {
		return 1
	}
	lg, _ := math.Lgamma(a)
	front := math.Exp(-x + a*math.Log(x) - lg)
	if x < a+1 {
		sum, term := 1/a, 1/a
		for n := 1; n < 1000; n++ {
			term *= x / (a + float64(n))
			sum += term
			if term < sum*1e-15 {
				break
			}
		}
		return 1 - front*sum
	}
	// Lentz's method for the continued fraction of Q.
	const tiny = 1e-300
	b := x + 1 - a
	c, d := 1/tiny, 1/b
	h := d
	for i := 1; i < 1000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		delta := d * c
		h *= delta
		if math.Abs(delta-1) < 1e-15 {
			break
		}
	}
	return front * h
}

func TestChiSquareSurvival(t *testing.T) {
	// Critical values from standard χ² tables.
	for _, c := range []struct {
		x    float64
		dof  int
		want float64
	}{{3.841, 1, 0.05}, {6.635, 1, 0.01}, {29.588, 10, 0.001}, {18.307, 10, 0.05}, {124.342, 100, 0.05}, {0.0158, 1, 0.9}} {
		if got := chiSquareSurvival(c.x, c.dof); math.Abs(got-c.want) > 2e-4*math.Max(1, c.want*10) {
			t.Errorf("P(χ²_%d ≥ %v) = %.5f, want %.4f", c.dof, c.x, got, c.want)
		}
	}
}
