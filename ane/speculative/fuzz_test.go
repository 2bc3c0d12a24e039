package speculative

import (
	"math"
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane/sample"
)

// scriptDrafter proposes whatever a fuzz script says: per cycle a count
// byte, then one byte per draft mapped to ids far outside the vocabulary
// on both sides, and an optional q made of arbitrary float bits.
type scriptDrafter struct {
	contextDrafter
	script []byte
	withQ  bool
}

func (d *scriptDrafter) take() byte {
	if len(d.script) == 0 {
		return 0
	}
	b := d.script[0]
	d.script = d.script[1:]
	return b
}

func (d *scriptDrafter) Propose(anchor, pos int) (Proposal, error) {
	var p Proposal
	for n := int(d.take()) % (MaxDrafts + 1); n > 0; n-- {
		p.Tokens = append(p.Tokens, int(int8(d.take()))*3)
		if d.withQ {
			// Two high bytes of a float64: NaN, ±Inf, negatives, huge and tiny values.
			q := math.Float64frombits(uint64(d.take())<<56 | uint64(d.take())<<48)
			p.Q = append(p.Q, Dist{IDs: []int{p.Tokens[len(p.Tokens)-1], int(d.take())}, Probs: []float64{q, 0.5}})
		}
	}
	return p, nil
}

// FuzzDraftsCannotCorrupt: whatever a drafter proposes (any ids, any
// count up to seven, any q), greedy speculative output equals greedy plain
// output, and sampled output stays in the vocabulary without errors.
func FuzzDraftsCannotCorrupt(f *testing.F) {
	f.Add([]byte{7, 1, 2, 3, 200, 100, 0, 16}, uint64(1))
	f.Add([]byte{3, 255, 128, 127, 0, 7, 5, 5, 5, 5, 5, 5, 5}, uint64(2))
	f.Add([]byte{}, uint64(3))
	f.Fuzz(func(t *testing.T, script []byte, seed uint64) {
		const vocab = 48
		prompt := []int{int(seed % vocab), 7}
		greedy := sample.Options{Temperature: 0, MaxTokens: 40, StopTokens: []int{int(seed>>8) % vocab}}
		want, wantFin, _, _ := run(t, vocab, seed, prompt, greedy, nil, Config{})
		drafter := func(withQ bool) func(*toyTarget, uint64) Drafter {
			return func(*toyTarget, uint64) Drafter { return &scriptDrafter{script: slices.Clone(script), withQ: withQ} }
		}
		got, fin, _, _ := run(t, vocab, seed, prompt, greedy, drafter(false), Config{Mode: ModeOn})
		if !slices.Equal(got, want) || fin != wantFin {
			t.Fatalf("speculative %v (%s), plain %v (%s)", got, fin, want, wantFin)
		}
		sampled := sample.Options{Temperature: 0.8, TopP: 0.9, MaxTokens: 40}
		got, _, _, _ = run(t, vocab, seed, prompt, sampled, drafter(true), Config{Mode: ModeOn})
		for _, id := range got {
			if id < 0 || id >= vocab {
				t.Fatalf("sampled output holds token %d outside the vocabulary", id)
			}
		}
	})
}
