package modelbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/testbundle"
)

// TestOpenBundleServesTheBundle: the backend names the bundle, tokenizes
// with model/tokenizer.json, and its greedy generation equals a plain
// greedy loop over ref.OpenBundle on the same directory; TokenizerOnly
// loads no model; a bundle without its export is refused naming the file.
func TestOpenBundleServesTheBundle(t *testing.T) {
	dir := testbundle.Tiny(t, 4)
	b, err := modelbackend.OpenRefBundle(dir, modelbackend.Options{Repo: "o/n", Revision: "abc", Ladder: []int{1024}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	info := b.Model()
	if info.Bundle.Repo != "o/n" || info.Bundle.Revision != "abc" || !slices.Equal(info.ContextEntries, []int{1024}) {
		t.Errorf("model info %+v", info)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	text := "Hello, forge daemon!"
	ids, _ := b.Tokenize(text)
	if !slices.Equal(ids, tok.Encode(text)) || len(ids) == 0 {
		t.Errorf("tokenize %v, want %v", ids, tok.Encode(text))
	}
	var got []int
	_, err = b.Generate(context.Background(), daemon.GenerateRequest{Prompt: ids, MaxTokens: 6}, func(step []int) error {
		got = append(got, step...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	m, err := ref.OpenBundle(dir, ref.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	defer s.Close()
	var want []int
	logits, err := s.Feed(ids)
	for err == nil && len(want) < 6 {
		next := 0
		for i, v := range logits {
			if v > logits[next] {
				next = i
			}
		}
		want = append(want, next)
		if slices.Contains(m.EOS, next) {
			break
		}
		logits, err = s.Feed([]int{next})
	}
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("served generation %v, greedy over ref.OpenBundle %v", got, want)
	}

	tb, err := modelbackend.OpenRefBundle(dir, modelbackend.Options{TokenizerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Generate(context.Background(), daemon.GenerateRequest{Prompt: ids, MaxTokens: 1}, func([]int) error { return nil }); err == nil {
		t.Error("a tokenizer-only backend generated")
	}
	os.Remove(filepath.Join(dir, "export", "layer_01.safetensors"))
	if _, err := modelbackend.OpenRefBundle(dir, modelbackend.Options{}); err == nil || !strings.Contains(err.Error(), "layer_01.safetensors") {
		t.Errorf("without export/layer_01.safetensors: %v", err)
	}
}

// A bundle whose drafter/ carries CPU weights (model.safetensors) is served
// with that drafter once it pairs with the bundle's model/ and export/:
// speculative greedy output equals plain output and acceptance is
// reported. Without them the backend speculates with prompt lookup.
func TestOpenBundleUsesItsDrafter(t *testing.T) {
	dir := testbundle.Tiny(t, 5)
	b, err := modelbackend.OpenRefBundle(dir, modelbackend.Options{Ladder: []int{1024}})
	if err != nil {
		t.Fatal(err)
	}
	if b.Speculation() != "prompt lookup" {
		t.Errorf("a bundle without drafter weights: speculation %q, want prompt lookup", b.Speculation())
	}
	plainWeights, plainFootprint := b.Memory().Weights, b.Footprint().Drafter
	b.Close()
	drafter := filepath.Join(dir, "drafter")
	if _, err := dflash.GenerateSynthetic(filepath.Join(dir, "model"), filepath.Join(dir, "export"), drafter, 4); err != nil {
		t.Fatal(err)
	}
	b, err = modelbackend.OpenRefBundle(dir, modelbackend.Options{Ladder: []int{1024}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Speculation() != "dflash2 "+drafter {
		t.Fatalf("speculation %q, want the bundle's drafter", b.Speculation())
	}
	// The drafter's weights are memory the daemon holds and budgets.
	dw, err := dflash.LoadWeights(drafter)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Memory().Weights - plainWeights; got != uint64(dw.Bytes()) || plainFootprint != 0 || b.Footprint().Drafter != dw.Bytes() {
		t.Errorf("drafter memory: status weights grew by %d, footprint drafter %d (was %d); want %d", got, b.Footprint().Drafter, plainFootprint, dw.Bytes())
	}
	gen := func(speculative bool) ([]int, daemon.Outcome) {
		var ids []int
		out, err := b.Generate(context.Background(), daemon.GenerateRequest{Prompt: []int{5, 17, 200, 33, 41}, MaxTokens: 12, Speculative: speculative},
			func(step []int) error { ids = append(ids, step...); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return ids, out
	}
	plain, _ := gen(false)
	fast, out := gen(true)
	if !slices.Equal(plain, fast) || len(out.Acceptance) != 8 {
		t.Fatalf("speculative %v (acceptance %v) != plain %v", fast, out.Acceptance, plain)
	}
}

// TestRefNumericsMode: the reference engine serves in the fast numeric
// mode unless ExactNumerics asks for the exact one, and BackendInfo (what
// status shows) says which.
func TestRefNumericsMode(t *testing.T) {
	dir := testbundle.Tiny(t, 4)
	for _, exact := range []bool{false, true} {
		b, err := modelbackend.OpenRefBundle(dir, modelbackend.Options{Ladder: []int{1024}, ExactNumerics: exact})
		if err != nil {
			t.Fatal(err)
		}
		want := ref.ModeFast
		if exact {
			want = ref.ModeExact
		}
		if info := b.BackendInfo(); info == nil || info.Numerics != want {
			t.Errorf("ExactNumerics %v: backend info %+v, want numerics %q", exact, info, want)
		}
		b.Close()
	}
}
