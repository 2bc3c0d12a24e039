package speculative

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/sample"
)

// costProfile gives the toy target and drafter a cost shape in busy-loop
// iterations (about 1 ns each): per Verify call, per verified row, per
// drafter call.
type costProfile struct {
	name                   string
	perCall, perRow, draft int
}

// cycleCost is a cycle's cost in plain steps, for Auto.CycleCost.
func (p costProfile) cycleCost() float64 {
	return float64(p.perCall+(MaxDrafts+1)*p.perRow+p.draft) / float64(p.perCall+p.perRow)
}

var profiles = []costProfile{
	// The published ANE runtime: the v8 verify entry has a fixed shape, so
	// one row costs what eight do; the drafter costs ~0.18 of a verify
	// (16.7 ms incl. the 3 ms gap vs 91.5 ms, Anemll/anemll-forge
	// docs/verifier_len.md).
	{"ane", 200_000, 0, 36_000},
	// A CPU backend: verify cost grows with rows (weights streamed once per
	// call, then per-row compute), same relative drafter cost.
	{"cpu", 100_000, 25_000, 36_000},
}

// BenchmarkSpeculation decodes the same 256 greedy tokens plainly and
// speculatively, side by side in each iteration, with a test drafter whose
// drafts are right with probability 0, 0.5 or 0.9, and reports the speedup
// (plain time / speculative time; below 1 is a slowdown), the accepted
// drafts per cycle and the share of speculative target calls; "modelled" is
// the speedup the cost model predicts (busy-loop iterations counted, no
// timing noise), "speedup" the measured one.
func BenchmarkSpeculation(b *testing.B) {
	const tokens = 256
	for _, prof := range profiles {
		for _, hit := range []float64{0, 0.5, 0.9} {
			for _, mode := range []Mode{ModeOn, ModeAuto} {
				name := prof.name + "/hit=" + map[float64]string{0: "0%", 0.5: "50%", 0.9: "90%"}[hit] + "/" + string(mode)
				b.Run(name, func(b *testing.B) {
					var plain, spec time.Duration
					var plainWork, specWork int
					var st Stats
					for b.Loop() {
						w0 := burned
						plain += timeDecode(b, prof, tokens, nil, Config{})
						w1 := burned
						d := func(t *toyTarget, seed uint64) Drafter {
							return &oracleDrafter{contextDrafter: contextDrafter{work: prof.draft}, t: t, hit: hit,
								rng: rand.New(rand.NewPCG(seed, 9))}
						}
						var sp *Speculator
						spec += timeDecode(b, prof, tokens, d, Config{Mode: mode, Auto: Auto{CycleCost: prof.cycleCost()}}, &sp)
						plainWork, specWork = plainWork+w1-w0, specWork+burned-w1
						st = sp.Stats()
					}
					b.ReportMetric(float64(plain)/float64(spec), "speedup")
					b.ReportMetric(float64(plainWork)/float64(specWork), "modelled")
					b.ReportMetric(float64(st.Accepted)/float64(max(st.Cycles, 1)), "accepted/cycle")
					b.ReportMetric(float64(st.Cycles)/float64(st.Cycles+st.PlainSteps), "drafting")
				})
			}
		}
	}
}

func timeDecode(b *testing.B, prof costProfile, tokens int, d func(*toyTarget, uint64) Drafter, cfg Config, spOut ...**Speculator) time.Duration {
	target := newToyTarget(64, 77)
	target.perCall, target.perRow = prof.perCall, prof.perRow
	first := target.Feed([]int{1, 2, 3})
	var drafter Drafter
	if d != nil {
		drafter = d(target, 1)
		if err := drafter.AddContext(target.promptFeatures()); err != nil {
			b.Fatal(err)
		}
	}
	opts := sample.Options{Temperature: 0, MaxTokens: tokens}
	s, _ := sample.New(opts)
	stop, _ := sample.NewStopper(opts)
	sp, err := New(target, drafter, s, cfg)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	n := 0
	if _, err := sp.Generate(first, 3, stop, nil, func(Token) error { n++; return nil }); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	if n != tokens {
		b.Fatalf("%d tokens, want %d", n, tokens)
	}
	if len(spOut) > 0 {
		*spOut[0] = sp
	}
	return el
}
