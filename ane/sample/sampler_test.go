package sample

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// naiveDist is an independent float64 statement of the published server's dist()
// (Anemll/anemll-forge scripts/qwen38_server.py): full
// sort for top-k, a set for "seen", suffix comparison for DRY.
func naiveDist(logits []float32, history []int, o Options) ([]int, []float64) {
	o = o.withDefaults()
	if o.Temperature <= 0 {
		best := -1
		for i, v := range logits {
			if !math.IsNaN(float64(v)) && (best < 0 || v > logits[best]) {
				best = i
			}
		}
		return []int{best}, []float64{1}
	}
	var order []int
	for i, v := range logits {
		if !math.IsNaN(float64(v)) {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
	if len(order) > o.TopK {
		order = order[:o.TopK]
	}
	seen := map[int]bool{}
	for _, t := range history {
		seen[t] = true
	}
	breaker := map[int]bool{}
	for _, t := range o.DRY.Breakers {
		breaker[t] = true
	}
	z := make([]float64, len(order))
	for i, id := range order {
		z[i] = float64(logits[id])
		if seen[id] {
			z[i] -= o.PresencePenalty
		}
		if d := o.DRY; d.Multiplier > 0 && len(history) > d.AllowedLength {
			if m := naiveDRYMatch(history, id, d, breaker); m >= d.AllowedLength {
				z[i] -= d.Multiplier * math.Pow(d.Base, math.Min(float64(m-d.AllowedLength), 24))
			}
		}
		z[i] /= o.Temperature
	}
	idx := make([]int, len(order))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return z[idx[a]] > z[idx[b]] })
	p := make([]float64, len(idx))
	sum := 0.0
	for i, j := range idx {
		p[i] = math.Exp(z[j] - z[idx[0]])
		sum += p[i]
	}
	keep, cum := len(p), 0.0
	for i := range p {
		p[i] /= sum
		cum += p[i]
		if cum >= o.TopP {
			keep = min(keep, i+1)
			break
		}
	}
	ids, probs := make([]int, keep), make([]float64, keep)
	kept := 0.0
	for i := 0; i < keep; i++ {
		ids[i], probs[i] = order[idx[i]], p[i]
		kept += p[i]
	}
	for i := range probs {
		probs[i] /= kept
	}
	return ids, probs
}

// naiveDRYMatch: the longest L ≤ MaxMatch such that the last L tokens of
// the window (no breaker among them) also occur ending at some j with
// window[j+1] == tok.
func naiveDRYMatch(history []int, tok int, d DRY, breaker map[int]bool) int {
	w := history
	if len(w) > d.Window {
		w = w[len(w)-d.Window:]
	}
	n, best := len(w), 0
	for j := 0; j+1 < n; j++ {
		if w[j+1] != tok {
			continue
		}
		for l := 1; l <= d.MaxMatch && l <= j+1; l++ {
			if breaker[w[n-l]] || w[j-l+1] != w[n-l] {
				break
			}
			best = max(best, l)
		}
	}
	return best
}

func randomLogits(r *rand.Rand, n int) []float32 {
	row := make([]float32, n)
	for i := range row {
		row[i] = float32(r.NormFloat64() * 3)
	}
	return row
}

// repetitiveHistory has verbatim repeats of various lengths, so DRY fires.
func repetitiveHistory(r *rand.Rand, vocab, n int) []int {
	h := make([]int, 0, n)
	for len(h) < n {
		if len(h) > 20 && r.IntN(3) == 0 {
			start := r.IntN(len(h) - 10)
			l := 5 + r.IntN(min(30, len(h)-start-5))
			h = append(h, h[start:start+l]...)
		} else {
			h = append(h, r.IntN(vocab))
		}
	}
	return h[:n]
}

func TestDistMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const vocab = 200
	cases := []Options{
		{Temperature: 1, TopK: 20, TopP: 1},
		{Temperature: 0.7, TopK: 20, TopP: 0.8},
		{Temperature: 2, TopK: 5, TopP: 0.3},
		{Temperature: 0.5, TopK: 1000, TopP: 0.95}, // k above the vocabulary
		{Temperature: 1, TopK: 50, TopP: 1, PresencePenalty: 1.5},
		{Temperature: 1, TopK: 200, TopP: 0.9, PresencePenalty: -0.5},
		{Temperature: 0.9, TopK: 40, TopP: 1, DRY: DRY{Multiplier: 0.8, Breakers: []int{3, 7, 11}}},
		{Temperature: 1.2, TopK: 200, TopP: 0.99, PresencePenalty: 0.4,
			DRY: DRY{Multiplier: 2, Base: 1.3, AllowedLength: 3, Window: 100, MaxMatch: 12, Breakers: []int{0}}},
		{Temperature: 0}, // greedy
	}
	for ci, o := range cases {
		s, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 40; trial++ {
			logits := randomLogits(r, vocab)
			if trial%5 == 0 { // ties must break toward the lower id, as the naive sort does
				for i := 0; i < vocab; i += 3 {
					logits[i] = logits[0]
				}
			}
			hist := repetitiveHistory(r, vocab, r.IntN(300))
			ids, probs := s.Dist(logits, hist)
			wantIDs, wantProbs := naiveDist(logits, hist, o)
			if len(ids) != len(wantIDs) {
				t.Fatalf("case %d trial %d: %d candidates, naive %d", ci, trial, len(ids), len(wantIDs))
			}
			for i := range ids {
				if ids[i] != wantIDs[i] || math.Abs(probs[i]-wantProbs[i]) > 1e-12 {
					t.Fatalf("case %d trial %d: candidate %d = (%d, %.15g), naive (%d, %.15g)",
						ci, trial, i, ids[i], probs[i], wantIDs[i], wantProbs[i])
				}
			}
		}
	}
}

func TestDRYPenaltyValues(t *testing.T) {
	// history "1 2 3 4 5 6 9 ... 1 2 3 4 5": token 6 would extend a
	// 5-token repeat; with allowed 2 the penalty is 1·2^(5−2) = 8.
	hist := []int{1, 2, 3, 4, 5, 6, 9, 9, 1, 2, 3, 4, 5}
	o := Options{Temperature: 1, TopK: 20, TopP: 1, DRY: DRY{Multiplier: 1, Base: 2, AllowedLength: 2}}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, 10)
	ids, probs := s.Dist(logits, hist)
	p := map[int]float64{}
	for i, id := range ids {
		p[id] = probs[i]
	}
	// others have logit 0, token 6 has −8: ratio e^−8.
	if got := p[6] / p[0]; math.Abs(got-math.Exp(-8)) > 1e-12 {
		t.Fatalf("p(6)/p(0) = %g, want e^-8 = %g", got, math.Exp(-8))
	}
	// A breaker inside the suffix cuts the repeat to 2 tokens (4 5): penalty 2^0 = 1.
	o.DRY.Breakers = []int{3}
	s, _ = New(o)
	ids, probs = s.Dist(logits, hist)
	for i, id := range ids {
		p[id] = probs[i]
	}
	if got := p[6] / p[0]; math.Abs(got-math.Exp(-1)) > 1e-12 {
		t.Fatalf("with breaker 3: p(6)/p(0) = %g, want e^-1", got)
	}
	// The last token a breaker: no penalty at all.
	o.DRY.Breakers = []int{5}
	s, _ = New(o)
	ids, probs = s.Dist(logits, hist)
	for _, q := range probs {
		if math.Abs(q-0.1) > 1e-12 {
			t.Fatalf("last token a breaker: distribution %v %v is not uniform", ids, probs)
		}
	}
}

func TestSeedReproducible(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	rows := make([][]float32, 100)
	for i := range rows {
		rows[i] = randomLogits(r, 64)
	}
	run := func(seed uint64) []int {
		s, err := New(Options{Temperature: 1, TopP: 0.95, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, row := range rows {
			tok, err := s.Sample(row, out)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tok)
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	if !equalInts(a, b) {
		t.Fatal("same seed gave different runs")
	}
	if equalInts(a, c) {
		t.Fatal("seeds 42 and 43 gave the same 100 tokens")
	}
}

func TestDrawFollowsProbabilities(t *testing.T) {
	s, _ := New(Options{Temperature: 1, Seed: 5})
	ids := []int{10, 20, 30, 40}
	probs := []float64{0.5, 0.3, 0.15, 0.05}
	weights := []float64{0.25, 0.15, 0.075, 0.025} // unnormalised: the same distribution
	const n = 40000
	count := map[int]int{}
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			count[s.Draw(ids, probs)]++
		} else {
			count[s.Draw(ids, weights)]++
		}
	}
	for i, id := range ids {
		mean := probs[i] * n
		sd := math.Sqrt(n * probs[i] * (1 - probs[i]))
		if math.Abs(float64(count[id])-mean) > 5*sd {
			t.Fatalf("token %d drawn %d times, expected %.0f ± %.0f", id, count[id], mean, sd)
		}
	}
}

func TestNonFiniteLogits(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, o := range []Options{{Temperature: 1}, {Temperature: 0}} {
		s, _ := New(o)
		if _, err := s.Sample([]float32{nan, nan, nan}, nil); err == nil || !strings.Contains(err.Error(), "no finite value") {
			t.Fatalf("temperature %v, all-NaN row: err = %v", o.Temperature, err)
		}
		if tok, err := s.Sample([]float32{nan, 1, nan, 3, nan}, nil); o.Temperature == 0 && (err != nil || tok != 3) {
			t.Fatalf("greedy with NaNs picked %d (%v), want 3", tok, err)
		}
	}
	s, _ := New(Options{Temperature: 1})
	if _, err := s.Sample([]float32{float32(math.Inf(-1)), float32(math.Inf(-1))}, nil); err == nil {
		t.Fatal("all -Inf row sampled without error")
	}
	ids, probs := s.Dist([]float32{0, inf, 5, inf}, nil)
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 3 || probs[0] != 0.5 || probs[1] != 0.5 {
		t.Fatalf("+Inf logits: got %v %v, want the two +Inf tokens at 0.5 each", ids, probs)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		o    Options
		want string
	}{
		{Options{Temperature: math.NaN()}, "temperature"},
		{Options{TopK: -1}, "top_k"},
		{Options{TopP: 1.5}, "top_p"},
		{Options{TopP: -0.1}, "top_p"},
		{Options{PresencePenalty: math.Inf(1)}, "presence_penalty"},
		{Options{MaxTokens: -3}, "max_tokens"},
		{Options{LoopGuard: -1}, "loop_guard"},
		{Options{LoopGuard: 1}, "loop_guard"},
		{Options{DRY: DRY{Multiplier: -1}}, "dry.multiplier"},
		{Options{DRY: DRY{Multiplier: 1, Base: 0.5}}, "dry.base"},
		{Options{DRY: DRY{AllowedLength: -2}}, "dry.allowed_length"},
		{Options{DRY: DRY{Window: -2}}, "dry.window"},
		{Options{DRY: DRY{MaxMatch: -2}}, "dry.max_match"},
		{Options{DRY: DRY{Breakers: []int{4, -1}}}, "dry.breakers[1]"},
		{Options{StopTokens: []int{-5}}, "stop_tokens[0]"},
		{Options{StopStrings: []string{"a", ""}}, "stop[1]"},
	}
	for _, c := range cases {
		_, err := New(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want one naming %q", c.o, err, c.want)
		}
		if _, err := NewStopper(c.o); err == nil {
			t.Errorf("%+v: NewStopper accepted it", c.o)
		}
	}
}

func TestDefaults(t *testing.T) {
	for _, c := range []struct {
		thinking   bool
		temp, topP float64
	}{{false, 0.7, 0.8}, {true, 1.0, 0.95}} {
		o := Defaults(c.thinking)
		if o.Temperature != c.temp || o.TopP != c.topP || o.TopK != 20 || o.MaxTokens != 4096 ||
			o.LoopGuard != 6 || o.PresencePenalty != 0 || o.DRY.Multiplier != 0 {
			t.Errorf("Defaults(%v) = %+v", c.thinking, o)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("Defaults(%v) invalid: %v", c.thinking, err)
		}
	}
	s, _ := New(Options{Temperature: 1})
	if got := s.Options(); got.TopK != 20 || got.TopP != 1 || got.DRY.Base != 1.75 || got.DRY.AllowedLength != 8 ||
		got.DRY.Window != 4096 || got.DRY.MaxMatch != 32 {
		t.Errorf("zero values resolved to %+v", got)
	}
}

// Steady-state sampling over the full vocabulary must not allocate.
func TestDistAllocationFree(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	logits := randomLogits(r, 248320)
	hist := repetitiveHistory(r, 248320, 2000)
	s, _ := New(Options{Temperature: 0.7, TopP: 0.8, PresencePenalty: 0.5, DRY: DRY{Multiplier: 0.8, Breakers: []int{1, 2}}})
	s.Sample(logits, hist) // warm the buffers
	if n := testing.AllocsPerRun(5, func() { s.Sample(logits, hist) }); n != 0 {
		t.Fatalf("Sample allocates %.0f times per call", n)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
