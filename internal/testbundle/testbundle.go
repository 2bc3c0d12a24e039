// Package testbundle builds small runnable bundles for tests of the parts
// that serve one (the daemon, the reference backend): the tiny synthetic
// model, quantized round-to-nearest, assembled as a plain bundle.
package testbundle

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/forgedaemon/forged/ane/rebuild"
	"github.com/forgedaemon/forged/ane/rebuild/calib"
	"github.com/forgedaemon/forged/ane/synth"
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
	r := rand.New(rand.NewPCG(seed, seed))
	rows := make([][]int, 4)
	for i := range rows {
		for range 16 {
			rows[i] = append(rows[i], r.IntN(512))
		}
	}
	npy := filepath.Join(dir, "calib.npy")
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
	if _, err := rebuild.Assemble(rebuild.AssembleOptions{Model: model, Export: export, Out: out}); err != nil {
		t.Fatal(err)
	}
	return out
}
