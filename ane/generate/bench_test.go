package generate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/ane/text/chat"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/internal/synth"
)

// BenchmarkRealDrafter runs the same greedy generation with speculation
// off, on and auto, alternating within each iteration so load drift hits
// all three alike, with the real (synthetic) DFlash2 drafter on the
// synthetic target (FORGED_BENCH_PRESET, default small). It reports tokens
// per second of each and the speedup ratios on/off and auto/off. The
// synthetic drafter's drafts are rarely accepted, so this measures what a
// failing real drafter costs and whether auto turns it off; the
// controlled-acceptance benchmark is ane/speculative's.
func BenchmarkRealDrafter(b *testing.B) {
	preset := os.Getenv("FORGED_BENCH_PRESET")
	if preset == "" {
		preset = "small"
	}
	root := b.TempDir()
	target, draft := filepath.Join(root, preset), filepath.Join(root, "drafter")
	if err := synth.Generate(target, synth.Options{Preset: preset, Seed: 7}); err != nil {
		b.Fatal(err)
	}
	if _, err := dflash.GenerateSynthetic(target, "", draft, 3); err != nil {
		b.Fatal(err)
	}
	dcfg, err := hfconfig.LoadDrafter(draft)
	if err != nil {
		b.Fatal(err)
	}
	m, err := ref.Open(target, ref.Options{Taps: dcfg.DFlash.TargetLayerIDs})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	d, err := dflash.Load(draft, m, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	tok, err := tokenizer.Load(target)
	if err != nil {
		b.Fatal(err)
	}
	tpl, _ := chat.LoadTemplate(target)
	sess := m.NewSession()
	defer sess.Close()
	// CycleCost 4.7: a verify of 8 rows on the reference engine costs ≈ 4.6
	// plain steps (docs/SAMPLING.md).
	g := &Generator{Engine: sess, Vocab: m.Config().Vocab, Tokenizer: tok, Template: tpl, Drafter: d,
		Auto: speculative.Auto{CycleCost: 4.7}}
	prompt := tok.Encode("The quick brown fox jumps over the lazy dog, and then")
	modes := []speculative.Mode{speculative.ModeOff, speculative.ModeOn, speculative.ModeAuto}
	var elapsed [3]time.Duration
	var tokens [3]int
	var accepted, proposed int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, mode := range modes {
			start := time.Now()
			sum, err := g.Run(context.Background(), Request{IDs: prompt, Sampling: greedy(48), Speculative: mode}, func(Event) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			elapsed[j] += time.Since(start)
			tokens[j] += sum.GeneratedTokens
			if mode == speculative.ModeOn {
				accepted, proposed = accepted+sum.Stats.Accepted, proposed+sum.Stats.Proposed
			}
		}
	}
	rate := func(j int) float64 { return float64(tokens[j]) / elapsed[j].Seconds() }
	b.ReportMetric(rate(0), "off_tok/s")
	b.ReportMetric(rate(1), "on_tok/s")
	b.ReportMetric(rate(2), "auto_tok/s")
	b.ReportMetric(rate(1)/rate(0), "on/off")
	b.ReportMetric(rate(2)/rate(0), "auto/off")
	if proposed > 0 {
		b.ReportMetric(float64(accepted)/float64(proposed), "accept")
	}
}
