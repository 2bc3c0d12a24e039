package speculative

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/forgedaemon/forged/ane/sample"
)

// parityRule is a toy constraint with state: a token may follow the
// previous one only when their sum is not a multiple of 3.
type parityRule struct{ hist []int }

func (p *parityRule) allowed(id int) bool {
	return len(p.hist) == 0 || (p.hist[len(p.hist)-1]+id)%3 != 0
}

func (p *parityRule) Mask(row []float32) {
	for i := range row {
		if !p.allowed(i) {
			row[i] = float32(math.Inf(-1))
		}
	}
}

func (p *parityRule) Accept(id int) error {
	if !p.allowed(id) {
		return errors.New("not allowed")
	}
	p.hist = append(p.hist, id)
	return nil
}

func (p *parityRule) Rollback(n int) error {
	if n > len(p.hist) {
		return errors.New("too far")
	}
	p.hist = p.hist[:len(p.hist)-n]
	return nil
}

// Under a constraint, every drafter gives output that obeys it, greedy
// output equal to constrained plain greedy output, and sampled output
// distributed as constrained plain sampling (tokens 8–10, two-sample test,
// p = 0.001).
func TestConstrainedSpeculationIsExact(t *testing.T) {
	const vocab, runs, alpha = 10, 6000, 0.001
	prompt := []int{1, 2}
	obeys := func(out []int) bool {
		for i := 1; i < len(out); i++ {
			if (out[i-1]+out[i])%3 == 0 {
				return false
			}
		}
		return true
	}
	greedy := sample.Options{Temperature: 0, MaxTokens: 12}
	plainGreedy, _, _, _ := run(t, vocab, 1, prompt, greedy, nil, Config{}, &parityRule{})
	sampled := sample.Options{Temperature: 1, TopK: 8, MaxTokens: 10}
	tails := func(d func(*toyTarget, uint64) Drafter, base uint64) (map[string]int, int) {
		tail, cuts := map[string]int{}, 0
		cfg := Config{Mode: ModeOn}
		if d == nil {
			cfg = Config{}
		}
		for i := 0; i < runs; i++ {
			out, _, sp, _ := run(t, vocab, base+uint64(i), prompt, sampled, d, cfg, &parityRule{})
			if !obeys(out) {
				t.Fatalf("output %v breaks the constraint", out)
			}
			tail[fmt.Sprint(out[7:10])]++
			cuts += sp.Stats().ConstraintCuts
		}
		return tail, cuts
	}
	plainTail, _ := tails(nil, 1<<32)
	for ci, dc := range drafterCases() {
		out, _, _, _ := run(t, vocab, 1, prompt, greedy, dc.make, Config{Mode: ModeOn}, &parityRule{})
		if fmt.Sprint(out) != fmt.Sprint(plainGreedy) {
			t.Errorf("%s: constrained greedy %v, plain %v", dc.name, out, plainGreedy)
		}
		tail, cuts := tails(dc.make, uint64(ci+1)<<40)
		stat, dof := twoSample(tail, plainTail)
		p := chiSquareSurvival(stat, dof)
		t.Logf("%-10s tokens 8-10 vs constrained plain: χ²=%.1f dof=%d p=%.3g, %d cycles cut", dc.name, stat, dof, p, cuts)
		if p < alpha {
			t.Errorf("%s: constrained speculative sampling differs from constrained plain sampling (p = %.3g)", dc.name, p)
		}
	}
}
