package refdraft

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/internal/refchunk"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/internal/synth"
)

// published is the DFlash2 drafter config (Anemll/anemll-forge scripts/dflash2_drafter_ref.py).
func published() *hfconfig.Drafter {
	return &hfconfig.Drafter{HiddenSize: 5120, IntermediateSize: 17408, NumHiddenLayers: 5, NumAttentionHeads: 32,
		NumKeyValueHeads: 8, HeadDim: 128, VocabSize: 248320, SlidingWindow: 2048, NumTargetLayers: 64,
		RMSNormEps: 1e-6, RopeTheta: 1e7, DFlash: hfconfig.DFlashConfig{BlockSize: 8, MaskTokenID: 248070,
			SelectorTopK: 16, SelectorRank: 256, ConvGroupSize: 16, ConvKernelSize: 2, TargetLayerIDs: []int{5, 19, 33, 47, 61}}}
}

var publishedMeta = &drafter.Metadata{W: 2048, T: 8, R: 8, RP: 64, FeatScale: 0.125}

// The published draft and ctx64 I/O (Anemll/anemll-forge
// coreai/dflash2_coreai_build.py) must come out of the generalised shapes for
// the published config, inputs before outputs.
func TestPublishedShapes(t *testing.T) {
	cfg := published()
	p, err := NewLayout(cfg, cfg.FeatureSize(cfg.HiddenSize), publishedMeta)
	if err != nil {
		t.Fatal(err)
	}
	for entry, want := range map[string]string{
		Draft: "in feat [1 25600 1 8]; in ctx_cos [8 128]; in ctx_sin [8 128]; in anchor [1 5120 1 1]; in q_cos [8 128]; " +
			"in q_sin [8 128]; in mask [8 2064]; in kc0 [8 2048 128]; in vc0 [8 2048 128]; in kc4 [8 2048 128]; " +
			"out k_new0 [8 8 128]; out v_new4 [8 8 128]; out logits [7 248320]; out hp [1 256 1 8]; out hidden [1 5120 1 8]",
		Ctx64: "in feat [1 25600 1 64]; in ctx_cos [64 128]; in ctx_sin [64 128]; out k_new0 [8 64 128]; out v_new4 [8 64 128]",
	} {
		specs, err := p.Tensors(entry)
		if err != nil {
			t.Fatal(err)
		}
		got, order := map[string]string{}, ""
		for _, s := range specs {
			role := map[refchunk.Role]string{refchunk.Input: "in", refchunk.Output: "out"}[s.Role]
			got[s.Name] = fmt.Sprintf("%s %s %v", role, s.Name, s.Shape)
			order += role[:1]
			if s.DType != "f16" {
				t.Errorf("%s %s: dtype %s", entry, s.Name, s.DType)
			}
		}
		for _, w := range strings.Split(want, "; ") {
			if name := strings.Fields(w)[1]; got[name] != w {
				t.Errorf("%s: %q, want %q", entry, got[name], w)
			}
		}
		if strings.Contains(order, "oi") {
			t.Errorf("%s: an input follows an output (%s)", entry, order)
		}
	}
	if len(mustSpecs(t, p, Draft)) != 7+10+10+3 || len(mustSpecs(t, p, Ctx64)) != 3+10 {
		t.Errorf("entries have %d and %d tensors", len(mustSpecs(t, p, Draft)), len(mustSpecs(t, p, Ctx64)))
	}
	if _, err := p.Tensors("verify"); err == nil || !strings.Contains(err.Error(), `no entry "verify"`) {
		t.Errorf("unknown entry: %v", err)
	}
	if err := p.Run(Draft, nil); err == nil || !strings.Contains(err.Error(), "without weights") {
		t.Errorf("layout run: %v", err)
	}
	bad := *publishedMeta
	bad.W = 1024
	if _, err := NewLayout(cfg, 25600, &bad); err == nil || !strings.Contains(err.Error(), "W=1024") {
		t.Errorf("W mismatch: %v", err)
	}
}

func mustSpecs(t *testing.T, p *Program, entry string) []refchunk.Spec {
	s, err := p.Tensors(entry)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Malformed calls are refused with the tensor named: a missing or
// mis-sized tensor, and a mask that hides the non-causal block.
func TestRunRefusesMalformed(t *testing.T) {
	dir := t.TempDir()
	target, draftDir := filepath.Join(dir, "tiny"), filepath.Join(dir, "drafter")
	if err := synth.Generate(target, synth.Options{Preset: "tiny", Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := dflash.GenerateSynthetic(target, "", draftDir, 3); err != nil {
		t.Fatal(err)
	}
	w, err := dflash.LoadWeights(draftDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ref.Open(target, ref.Options{Taps: w.Config.DFlash.TargetLayerIDs, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	net, err := dflash.NewNet(w, m, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	p, err := New(net, &drafter.Metadata{W: 2048, R: 8, RP: 64, FeatScale: 0.125})
	if err != nil {
		t.Fatal(err)
	}
	bound := func(entry string) map[string][]byte {
		ts := map[string][]byte{}
		for _, s := range mustSpecs(t, p, entry) {
			n := 2
			for _, d := range s.Shape {
				n *= d
			}
			ts[s.Name] = make([]byte, n)
		}
		return ts
	}
	ts := bound(Ctx64)
	if err := p.Run(Ctx64, ts); err != nil {
		t.Fatalf("well-formed ctx64: %v", err)
	}
	delete(ts, "ctx_sin")
	if err := p.Run(Ctx64, ts); err == nil || !strings.Contains(err.Error(), "ctx_sin has 0 bytes") {
		t.Errorf("missing tensor: %v", err)
	}
	ts = bound(Draft)
	ts["feat"] = ts["feat"][:10]
	if err := p.Run(Draft, ts); err == nil || !strings.Contains(err.Error(), "feat has 10 bytes") {
		t.Errorf("short tensor: %v", err)
	}
	ts = bound(Draft)
	mask := refchunk.Bufs(ts)
	h, _ := mask.F16("mask")
	h[len(h)-1] = 0xf0e2 // −1e4 over the last block column of the last row
	if err := p.Run(Draft, ts); err == nil || !strings.Contains(err.Error(), "hides block column 7") {
		t.Errorf("causal block mask: %v", err)
	}
}
