package smoke

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
)

// smokeBundle lays out a bundle as published: coreai/ (the test runtime),
// model/tokenizer.json and model/embed_tokens_fp16.npy, and, when
// drafter is set, drafter/ (the synthetic drafter's stand-in package).
// taps are the runtime's (nil: testTaps).
func smokeBundle(t *testing.T, taps []int, drafter bool) string {
	dir, cfg, w := standintest.Tiny(t)
	b := t.TempDir()
	for _, d := range []string{"coreai", "drafter"} {
		if err := os.MkdirAll(filepath.Join(b, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	standintest.WriteRuntimeIn(t, filepath.Join(b, "coreai"), standintest.Spec{Taps: taps})
	if drafter {
		standintest.DrafterDir(t, filepath.Join(b, "drafter"))
	}
	if err := os.MkdirAll(filepath.Join(b, "model"), 0o755); err != nil {
		t.Fatal(err)
	}
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "model", "tokenizer.json"), tj, 0o644); err != nil {
		t.Fatal(err)
	}
	V, H := cfg.VocabSize, cfg.HiddenSize
	emb := standintest.NewEmbedding(cfg, w)
	data, row := make([]byte, V*H*2), make([]float32, H)
	for id := 0; id < V; id++ {
		emb.Row(id, row)
		half.F32ToF16(half.View(data[id*H*2:(id+1)*H*2]), row)
	}
	if err := tensor.WriteNPY(filepath.Join(b, "model", "embed_tokens_fp16.npy"), "<f2", []int{V, H}, data); err != nil {
		t.Fatal(err)
	}
	return b
}

var refGreedy = standintest.RefGreedy

// replay proposes a known continuation, wrong at every third position.
type replay struct {
	trace []int
	width int
	seen  int
}

func (r *replay) AddContext(f []float32, pos []int) error {
	if len(f) != len(pos)*r.width {
		return os.ErrInvalid
	}
	r.seen += len(pos)
	return nil
}

func (r *replay) Propose(anchor, pos int) (speculative.Proposal, error) {
	var d []int
	for i := pos + 1; i < len(r.trace) && len(d) < speculative.MaxDrafts; i++ {
		tok := r.trace[i]
		if i%3 == 0 {
			tok = (tok + 1) % 400
		}
		d = append(d, tok)
	}
	return speculative.Proposal{Tokens: d}, nil
}

func TestSmokeSpeculativeMatchesReferenceGreedy(t *testing.T) {
	bridge := standintest.Bridge(t)
	b := smokeBundle(t, nil, false)
	tok, err := tokenizer.Load(filepath.Join(b, "model", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	prompt := tok.Encode("The capital of France is")
	want := standintest.RefGreedy(t, prompt, 16)
	_, cfg, _ := standintest.Tiny(t)
	rp := &replay{trace: append(slices.Clone(prompt), want...), width: 3 * cfg.HiddenSize}
	for _, c := range []struct {
		name    string
		drafter speculative.Drafter
	}{{"lookup", nil}, {"replay", rp}} {
		rep, err := Run(b, Options{Bridge: bridge, Drafter: c.drafter})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(rep.Tokens, want) {
			t.Fatalf("%s: speculative tokens %v, reference greedy %v", c.name, rep.Tokens, want)
		}
		if !rep.FiniteLogits || rep.GeneratedTokens != 16 || rep.PromptTokens != len(prompt) || rep.Text != tok.Decode(want) ||
			rep.Drafter != map[string]string{"lookup": Lookup, "replay": Custom}[c.name] {
			t.Fatalf("%s: report %+v", c.name, rep)
		}
		t.Logf("%s: %d verify calls, %d/%d drafts accepted, load %.3fs, %.1f tok/s (test bridge)", c.name,
			rep.VerifyCalls, rep.DraftsAccepted, rep.DraftsProposed, rep.LoadSeconds, rep.TokensPerSecond)
	}
	if rp.seen < len(prompt) {
		t.Fatalf("the drafter saw features of %d positions, the prompt has %d", rp.seen, len(prompt))
	}
	// The replay drafter is right two times in three: most cycles accept drafts.
	rep, _ := Run(b, Options{Bridge: bridge, Drafter: &replay{trace: rp.trace, width: rp.width}})
	if rep.DraftsAccepted == 0 || rep.VerifyCalls >= 16 {
		t.Fatalf("replay drafts: %d accepted over %d verify calls", rep.DraftsAccepted, rep.VerifyCalls)
	}
	_, err = Run(b, Options{Bridge: bridge, Tokens: 65})
	standintest.WantErr(t, err, "65 tokens, want 2..64")
}

// A bundle with a drafter package is smoke-tested with the DFlash2
// drafter on Core AI, and still gives ane/ref's greedy tokens; a drafter
// that taps other layers than the runtime is refused, not bypassed.
func TestSmokeUsesTheBundlesDrafter(t *testing.T) {
	bridge := standintest.Bridge(t)
	_, dw := standintest.SynthDrafter(t)
	b := smokeBundle(t, dw.Config.DFlash.TargetLayerIDs, true)
	tok, err := tokenizer.Load(filepath.Join(b, "model", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := standintest.RefGreedy(t, tok.Encode("The capital of France is"), 16)
	rep, err := Run(b, Options{Bridge: bridge})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drafter != DFlash2 || !slices.Equal(rep.Tokens, want) || rep.DraftsProposed == 0 {
		t.Fatalf("report %+v, want the dflash2 drafter and tokens %v", rep, want)
	}
	t.Logf("dflash2: %d verify calls, %d/%d drafts accepted (test bridge)", rep.VerifyCalls, rep.DraftsAccepted, rep.DraftsProposed)
	mismatched := smokeBundle(t, nil, true) // runtime taps 0, 1, 3
	_, err = Run(mismatched, Options{Bridge: bridge})
	standintest.WantErr(t, err, "the drafter reads target layers [0 1 2 3], the Core AI runtime taps [0 1 3]")
}
