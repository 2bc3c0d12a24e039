package speculative

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane/sample"
)

// The bookkeeping by hand: a proposal is the continuation of the latest
// earlier occurrence of the last two tokens; the rows committed after it
// record its accepted drafts; rows nobody proposed stay unknown, so they
// are never matched and never proposed.
func TestLookupDrafterBookkeeping(t *testing.T) {
	d := NewLookupDrafter([]int{1, 2, 3, 1, 2})
	p, _ := d.Propose(3, 5) // ... 2 3: the earlier "2 3" at 1..2 was followed by 1 2 3
	if !slices.Equal(p.Tokens, []int{1, 2, 3}) {
		t.Fatalf("proposal %v, want [1 2 3]", p.Tokens)
	}
	d.AddContext(nil, []int{5, 6, 7}) // anchor + 2 accepted drafts
	d.AddContext(nil, []int{8})       // a plain step: token unknown
	if want := []int{1, 2, 3, 1, 2, 3, 1, 2, -1}; !slices.Equal(d.hist, want) {
		t.Fatalf("history %v, want %v", d.hist, want)
	}
	if p, _ := d.Propose(9, 9); len(p.Tokens) != 0 {
		t.Fatalf("after an unknown token: proposal %v, want none", p.Tokens)
	}
	d.AddContext(nil, []int{9})
	if p, _ := d.Propose(3, 10); len(p.Tokens) != 0 {
		t.Fatalf("pair (9, 3) never seen: proposal %v", p.Tokens)
	}
	// A continuation stops before an unknown token.
	d = NewLookupDrafter([]int{4, 5, 6})
	d.AddContext(nil, []int{3})
	d.Propose(4, 4)
	d.AddContext(nil, []int{4})
	if p, _ := d.Propose(5, 5); !slices.Equal(p.Tokens, []int{6}) {
		t.Fatalf("proposal %v over history %v, want [6] (stopping before the unknown token)", p.Tokens, d.hist)
	}
	d.Rewind(1)
	if len(d.hist) != 3 {
		t.Fatalf("rewind below the prompt kept %v, want the prompt", d.hist)
	}
}

// Over the toy target, whose greedy output settles into a cycle, the
// lookup drafter's speculative output equals plain greedy output, its
// drafts are mostly accepted once the cycle repeats, and it never
// proposes an id outside the vocabulary — also in auto mode, whose pauses
// hide tokens from it.
func TestLookupDrafterOnToyTarget(t *testing.T) {
	const vocab = 40
	rng := rand.New(rand.NewPCG(3, 3))
	opts := sample.Options{Temperature: 0, MaxTokens: 1000}
	lookup := func(t *toyTarget, _ uint64) Drafter { return NewLookupDrafter(t.committed) }
	var accepted, cycles int
	for p := range 10 {
		prompt := randomPrompt(rng, vocab)
		plain, _, _, _ := run(t, vocab, 1, prompt, opts, nil, Config{Mode: ModeOff})
		for _, cfg := range []Config{{Mode: ModeOn}, {Mode: ModeAuto, Auto: Auto{CycleCost: 6, Window: 4, RetryAfter: 5}}} {
			out, _, sp, _ := run(t, vocab, 1, prompt, opts, lookup, cfg)
			st := sp.Stats()
			if !slices.Equal(out, plain) {
				t.Fatalf("prompt %d %s: lookup speculative output differs from plain", p, cfg.Mode)
			}
			if st.InvalidDrafts != 0 {
				t.Fatalf("prompt %d %s: %d invalid drafts", p, cfg.Mode, st.InvalidDrafts)
			}
			if cfg.Mode == ModeOn {
				accepted, cycles = accepted+st.Accepted, cycles+st.Cycles
			} else if st.AutoPauses == 0 {
				t.Logf("prompt %d: auto never paused (%+v)", p, st)
			}
		}
	}
	if per := float64(accepted) / float64(cycles); per < 3 {
		t.Errorf("lookup drafter accepted %.2f drafts per cycle on periodic output, want ≥ 3", per)
	} else {
		t.Logf("%.2f drafts accepted per cycle over %d cycles", per, cycles)
	}
}
