// Package testbundle builds small runnable bundles for tests of the parts
// that serve one (the daemon, its model backend): the tiny synthetic
// model, quantized round-to-nearest, assembled as a plain bundle (Tiny) or
// with stand-in Core AI packages (TinyCoreAI).
package testbundle

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/forgedaemon/forged/ane/rebuild"
	"github.com/forgedaemon/forged/ane/rebuild/calib"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/internal/synth"
)

// Tiny assembles a bundle from the tiny synthetic model with the given
// seed (the same seed gives the same bytes) and returns its directory,
// which the test's cleanup removes.
func Tiny(t testing.TB, seed uint64) string {
	t.Helper()
	dir := t.TempDir()
	model, export, out := filepath.Join(dir, "m"), filepath.Join(dir, "e"), filepath.Join(dir, "b")
	if err := synth.Generate(model, synth.Options{Preset: "tiny", Seed: seed}); err != nil {
		t.Fatal(err)
	}
	quantizeRTN(t, model, export, seed, filepath.Join(dir, "calib.npy"))
	if _, err := rebuild.Assemble(rebuild.AssembleOptions{Model: model, Export: export, Out: out}); err != nil {
		t.Fatal(err)
	}
	return out
}

// quantizeRTN exports model round-to-nearest, calibrated on four random
// 16-token rows.
func quantizeRTN(t testing.TB, model, export string, seed uint64, npy string) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed))
	rows := make([][]int, 4)
	for i := range rows {
		for range 16 {
			rows[i] = append(rows[i], r.IntN(512))
		}
	}
	if err := calib.WriteRows(npy, rows); err != nil {
		t.Fatal(err)
	}
	set, err := calib.Load([]calib.Source{{Path: npy}}, 0, 512)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rebuild.Quantize(context.Background(), rebuild.Options{Model: model, Out: export, Calib: set, Method: rebuild.MethodRTN, Threads: 1, HoldOut: -1}); err != nil {
		t.Fatal(err)
	}
}

// CoreAIOptions shape TinyCoreAI's bundle.
type CoreAIOptions struct {
	Contexts []int // the runtime's context entries (default [8192])
	Drafter  bool  // add a DFlash2 drafter with its stand-in package
	// NoExport publishes the bundle as the real one is: no export/ (its
	// release.json is written again without it).
	NoExport bool
}

// TinyCoreAI assembles the tiny synthetic model as a bundle whose coreai/
// packages are stand-in packages (ane/coreai/standin: refchunk computes
// them from the export's effective weights), so the Core AI path runs it
// through the stand-in bridge; it keeps export/ too (coreai-only copies
// are the caller's, or NoExport). The same seed gives the same bytes.
func TinyCoreAI(t testing.TB, seed uint64, o CoreAIOptions) string {
	t.Helper()
	dir := t.TempDir()
	model, export, out := filepath.Join(dir, "m"), filepath.Join(dir, "export"), filepath.Join(dir, "b")
	if err := synth.Generate(model, synth.Options{Preset: "tiny", Seed: seed}); err != nil {
		t.Fatal(err)
	}
	quantizeRTN(t, model, export, seed, filepath.Join(dir, "calib.npy"))
	ao := rebuild.AssembleOptions{Model: model, Export: export, Out: out, Contexts: o.Contexts, StandIn: true}
	if o.Drafter {
		ao.Drafter = filepath.Join(dir, "drafter")
		if _, err := dflash.GenerateSynthetic(model, export, ao.Drafter, seed); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rebuild.Assemble(ao); err != nil {
		t.Fatal(err)
	}
	if o.NoExport {
		if err := os.RemoveAll(filepath.Join(out, "export")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := rebuild.ReleaseManifest(rebuild.ManifestOptions{Bundle: out, ModelID: rebuild.DefaultModelID,
			ModelRevision: rebuild.DefaultModelRevision, Plain: !o.Drafter}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
