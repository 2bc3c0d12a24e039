package standin_test

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/dflash"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
)

// A drafter directory with the stand-in package WriteDrafterPackage
// writes opens with coreai.OpenDrafter and proposes what ane/dflash's CPU
// drafter proposes from the same context: 33 proposals over 150 context
// rows arriving 1–9 at a time (two ctx64 flushes and pending rows sent
// with the draft calls). The comparison can fail: the proposals depend on
// the context (checked against a drafter that has none).
func TestDrafterPackageProposesLikeTheCPUDrafter(t *testing.T) {
	lib := bridge(t)
	dir, cfg, w := tiny(t)
	ddir := filepath.Join(t.TempDir(), "drafter")
	if _, err := dflash.GenerateSynthetic(dir, "", ddir, 3); err != nil {
		t.Fatal(err)
	}
	pkg, err := standin.WriteDrafterPackage(ddir, w)
	if err != nil {
		t.Fatal(err)
	}
	if pkg != filepath.Join(ddir, bundle.DrafterModel) {
		t.Fatalf("package written to %s", pkg)
	}
	d, err := coreai.OpenDrafter(ddir, coreai.DrafterOptions{Bridge: lib, Embedding: newEmbedding(cfg, w), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dw, err := dflash.LoadWeights(ddir)
	if err != nil {
		t.Fatal(err)
	}
	target, err := ref.Open(dir, ref.Options{Taps: dw.Config.DFlash.TargetLayerIDs, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	cpu, err := dflash.New(dw, target, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	blind, err := dflash.New(dw, target, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer blind.Close()
	r := rand.New(rand.NewPCG(5, 6))
	F := cpu.Features()
	proposals, informed := 0, 0
	for next := 0; next < 150; {
		n := 1 + r.IntN(9)
		f := make([]float32, n*F)
		for i := range f {
			f[i] = float32(r.NormFloat64() * 3)
		}
		pos := make([]int, n)
		for i := range pos {
			pos[i] = next + i
		}
		if err := d.AddContext(f, pos); err != nil {
			t.Fatal(err)
		}
		if err := cpu.AddContext(f, pos); err != nil {
			t.Fatal(err)
		}
		next += n
		anchor := r.IntN(400)
		got, err := d.Propose(anchor, next)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cpu.Propose(anchor, next)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Tokens, want.Tokens) {
			t.Fatalf("at %d: the stand-in drafter proposes %v, the CPU drafter %v", next, got.Tokens, want.Tokens)
		}
		blind.Reset()
		b, err := blind.Propose(anchor, next)
		if err != nil {
			t.Fatal(err)
		}
		proposals++
		if !slices.Equal(b.Tokens, want.Tokens) {
			informed++
		}
	}
	if informed == 0 {
		t.Fatalf("none of %d proposals depended on the context", proposals)
	}
	t.Logf("%d proposals equal, %d of them differ from a drafter without context", proposals, informed)
}
