package standin_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/draft"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
	"github.com/forgedaemon/forged/bundle"
)

// A drafter directory with the stand-in package WriteDrafterPackage
// writes opens with draft.Open and proposes what ane/speculative/dflash's CPU
// drafter proposes from the same context: 33 proposals over 150 context
// rows arriving 1–9 at a time (two ctx64 flushes and pending rows sent
// with the draft calls). The comparison can fail: the proposals depend on
// the context (checked against a drafter that has none).
func TestDrafterPackageProposesLikeTheCPUDrafter(t *testing.T) {
	lib := standintest.Bridge(t)
	_, _, w := standintest.Tiny(t)
	ddir := filepath.Join(t.TempDir(), "drafter")
	standintest.CopySynthDrafter(t, ddir)
	pkg, err := standin.WriteDrafterPackage(ddir, w)
	if err != nil {
		t.Fatal(err)
	}
	if pkg != filepath.Join(ddir, bundle.DrafterModel) {
		t.Fatalf("package written to %s", pkg)
	}
	d, err := draft.Open(ddir, draft.Options{Bridge: lib, Embedding: standintest.TinyEmbedding(t), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := &standintest.DrafterRun{T: t, D: d, CPU: standintest.CPUDrafter(t), Blind: standintest.CPUDrafter(t), Rng: rand.New(rand.NewPCG(5, 6))}
	for r.Next < 150 {
		r.Add(1 + r.Rng.IntN(9))
		r.Propose()
	}
	if r.Informed == 0 {
		t.Fatalf("none of %d proposals depended on the context", r.Proposals)
	}
	t.Logf("%d proposals equal, %d of them differ from a drafter without context", r.Proposals, r.Informed)
}
