package speculative

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/sample"
	"github.com/forgedaemon/forged/internal/synth"
)

// The cycle on the real reference engine (ane/ref) over a synthetic
// qwen3_5 checkpoint (internal/synth), through EngineTarget.

var synthDirs struct {
	sync.Mutex
	dirs map[string]string
}

// synthModel generates a synthetic checkpoint once per process and opens
// it with two tap layers for Features.
func synthModel(tb testing.TB, preset string) *ref.Model {
	tb.Helper()
	synthDirs.Lock()
	defer synthDirs.Unlock()
	if synthDirs.dirs == nil {
		synthDirs.dirs = map[string]string{}
	}
	dir, ok := synthDirs.dirs[preset]
	if !ok {
		var err error
		if dir, err = os.MkdirTemp("", "spec-"+preset+"-"); err != nil {
			tb.Fatal(err)
		}
		if err := synth.Generate(dir, synth.Options{Preset: preset, Seed: 7}); err != nil {
			os.RemoveAll(dir)
			tb.Fatal(err)
		}
		synthDirs.dirs[preset] = dir
	}
	m, err := ref.Open(dir, ref.Options{Taps: []int{1, 3}, Threads: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range synthDirs.dirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// replayDrafter proposes a known greedy trace (tokens by position): each
// draft right with probability hit, else another token. It checks that the
// features it is given are real rows of the expected width.
type replayDrafter struct {
	trace []int
	hit   float64
	vocab int
	width int // feature values per row
	rng   *rand.Rand
	spin  time.Duration // simulated drafter cost
	next  int           // next position the context must start at
}

func (d *replayDrafter) AddContext(f []float32, positions []int) error {
	if len(f) != len(positions)*d.width {
		return fmt.Errorf("%d feature values for %d rows of %d", len(f), len(positions), d.width)
	}
	for i, p := range positions {
		if p != d.next+i {
			return fmt.Errorf("context row %d at position %d, want %d", i, p, d.next+i)
		}
	}
	for _, v := range f {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("feature value %v", v)
		}
	}
	d.next += len(positions)
	return nil
}

func (d *replayDrafter) Propose(anchor, pos int) (Proposal, error) {
	for start := time.Now(); time.Since(start) < d.spin; {
	}
	var drafts []int
	for i := 1; i <= MaxDrafts; i++ {
		tok := d.rng.IntN(d.vocab)
		if p := pos + i; p < len(d.trace) {
			tok = d.trace[p]
			if d.rng.Float64() >= d.hit {
				tok = (tok + 1 + d.rng.IntN(d.vocab-1)) % d.vocab
			}
		}
		drafts = append(drafts, tok)
	}
	return Proposal{Tokens: drafts}, nil
}

// decodeRef runs one generation on a fresh session of m; with hit ≥ 0 a
// replayDrafter over trace drafts.
func decodeRef(tb testing.TB, m *ref.Model, prompt []int, opts sample.Options, trace []int, hit float64, cfg Config, spin time.Duration) ([]int, Stats, time.Duration) {
	tb.Helper()
	sess := m.NewSession()
	defer sess.Close()
	first, err := sess.Feed(prompt)
	if err != nil {
		tb.Fatal(err)
	}
	vocab := m.Config().Vocab
	var drafter Drafter
	if hit >= 0 {
		d := &replayDrafter{trace: trace, hit: hit, vocab: vocab, width: 2 * m.Config().Hidden,
			rng: rand.New(rand.NewPCG(uint64(len(prompt)), 5)), spin: spin, next: len(prompt)}
		drafter = d
	}
	s, _ := sample.New(opts)
	stop, _ := sample.NewStopper(opts)
	sp, err := New(NewEngineTarget(sess, vocab), drafter, s, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	var out []int
	start := time.Now()
	if _, err := sp.Generate(first, len(prompt), stop, nil, func(t Token) error {
		if !t.Stop {
			out = append(out, t.ID)
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return out, sp.Stats(), time.Since(start)
}

// Greedy speculative decoding on the reference engine equals greedy plain
// decoding token for token, for 50 prompts, with drafts right 0%, 60% and
// 100% of the time.
func TestGreedySpeculativeOnReferenceEngine(t *testing.T) {
	m := synthModel(t, "tiny")
	vocab := m.Config().Vocab
	r := rand.New(rand.NewPCG(5, 5))
	opts := sample.Options{Temperature: 0, MaxTokens: 16}
	accepted := 0
	for i := 0; i < 50; i++ {
		prompt := make([]int, 1+r.IntN(8))
		for j := range prompt {
			prompt[j] = r.IntN(vocab)
		}
		plain, _, _ := decodeRef(t, m, prompt, opts, nil, -1, Config{}, 0)
		trace := append(slices.Clone(prompt), plain...)
		for _, hit := range []float64{0, 0.6, 1} {
			got, st, _ := decodeRef(t, m, prompt, opts, trace, hit, Config{Mode: ModeOn}, 0)
			if !slices.Equal(got, plain) {
				t.Fatalf("prompt %d, drafts right %.0f%%: speculative %v, plain %v", i, 100*hit, got, plain)
			}
			if hit == 1 && st.Histogram[MaxDrafts] < st.Cycles-1 {
				t.Fatalf("prompt %d: a replay of the greedy trace was rejected: %v", i, st.Histogram)
			}
			if hit == 0.6 {
				accepted += st.Accepted
			}
		}
	}
	if accepted == 0 {
		t.Fatal("no draft was ever accepted at 60%")
	}
}

// BenchmarkSpeculationRef: tokens/s with speculation on vs off on the CPU
// reference engine over a synthetic checkpoint, at controlled acceptance (a
// replay drafter right 0/50/90% of the time, costing 18% of a plain step
// like the DFlash2 drafter on the ANE), printed as speedup ratios (plain
// time / speculative time). The preset defaults to tiny, because on this
// engine a verify of 8 rows costs about 8 plain steps (see
// BenchmarkVerifyRowsRef) and the small preset takes minutes per run on a
// loaded machine; FORGED_SPEC_PRESET=small selects it, FORGED_SPEC_TOKENS
// the output length (default 128).
func BenchmarkSpeculationRef(b *testing.B) {
	preset := os.Getenv("FORGED_SPEC_PRESET")
	if preset == "" {
		preset = "tiny"
	}
	m := synthModel(b, preset)
	vocab := m.Config().Vocab
	prompt := make([]int, 32)
	for i := range prompt {
		prompt[i] = (i * 131) % vocab
	}
	tokens := 128
	if n, err := strconv.Atoi(os.Getenv("FORGED_SPEC_TOKENS")); err == nil && n > 0 {
		tokens = n
	}
	opts := sample.Options{Temperature: 0, MaxTokens: tokens}
	decodeRef(b, m, prompt, opts, nil, -1, Config{}, 0) // warm up (page in the weights)
	plain, _, el := decodeRef(b, m, prompt, opts, nil, -1, Config{}, 0)
	trace := append(slices.Clone(prompt), plain...)
	spin := el / time.Duration(tokens) * 18 / 100
	// The auto policy is told this engine's cycle cost in plain steps.
	v1, v8 := verifyCosts(b, m, prompt)
	cycleCost := (float64(v8) + 0.18*float64(v1)) / float64(v1)
	b.Logf("%s: plain step %v, cycle cost %.2f plain steps", preset, el/time.Duration(tokens), cycleCost)
	for _, hit := range []float64{0, 0.5, 0.9} {
		for _, mode := range []Mode{ModeOn, ModeAuto} {
			b.Run(fmt.Sprintf("%s/hit=%.0f%%/%s", preset, 100*hit, mode), func(b *testing.B) {
				var tPlain, tSpec time.Duration
				var st Stats
				for b.Loop() {
					_, _, e := decodeRef(b, m, prompt, opts, nil, -1, Config{}, 0)
					tPlain += e
					var out []int
					out, st, e = decodeRef(b, m, prompt, opts, trace, hit, Config{Mode: mode, Auto: Auto{CycleCost: max(1, cycleCost)}}, spin)
					tSpec += e
					if !slices.Equal(out, plain) {
						b.Fatal("speculative output differs from plain")
					}
				}
				b.ReportMetric(float64(tPlain)/float64(tSpec), "speedup")
				b.ReportMetric(float64(st.Accepted)/float64(max(st.Cycles, 1)), "accepted/cycle")
				b.ReportMetric(float64(st.Cycles)/float64(st.Cycles+st.PlainSteps), "drafting")
			})
		}
	}
}

// BenchmarkVerifyRowsRef measures what decides whether speculation can pay
// on the reference engine: the cost of a Verify of 8 rows against 1 row
// (medians of 9, measured alternately), reported as "verify8/verify1"
// and as the break-even accepted drafts per cycle (with an 18% drafter).
// FORGED_SPEC_PRESET selects the preset (default small).
func BenchmarkVerifyRowsRef(b *testing.B) {
	preset := os.Getenv("FORGED_SPEC_PRESET")
	if preset == "" {
		preset = "small"
	}
	m := synthModel(b, preset)
	prompt := make([]int, 32)
	for i := range prompt {
		prompt[i] = (i * 131) % m.Config().Vocab
	}
	for b.Loop() {
		v1, v8 := verifyCosts(b, m, prompt)
		b.ReportMetric(float64(v1.Microseconds())/1e3, "ms/verify1")
		b.ReportMetric(float64(v8.Microseconds())/1e3, "ms/verify8")
		b.ReportMetric(float64(v8)/float64(v1), "verify8/verify1")
		b.ReportMetric(BreakEven(float64(v8)+0.18*float64(v1), float64(v1)), "break-even-accepted")
	}
}

// verifyCosts returns the median times of a Verify of 1 and of 8 tokens
// (each followed by Accept(1)), measured alternately so that load changes
// on a shared machine hit both alike.
func verifyCosts(tb testing.TB, m *ref.Model, prompt []int) (v1, v8 time.Duration) {
	sess := m.NewSession()
	defer sess.Close()
	if _, err := sess.Feed(prompt); err != nil {
		tb.Fatal(err)
	}
	var t1, t8 []time.Duration
	for i := 0; i < 9; i++ {
		for _, rows := range []int{1, MaxDrafts + 1} {
			start := time.Now()
			if _, err := sess.Verify(prompt[:rows]); err != nil {
				tb.Fatal(err)
			}
			if err := sess.Accept(1); err != nil {
				tb.Fatal(err)
			}
			if rows == 1 {
				t1 = append(t1, time.Since(start))
			} else {
				t8 = append(t8, time.Since(start))
			}
		}
	}
	slices.Sort(t1)
	slices.Sort(t8)
	return t1[len(t1)/2], t8[len(t8)/2]
}
