// Package standintest is what the tests of the Core AI path (ane/coreai,
// …/cai, …/draft, …/smoke) and of its stand-in bridge (ane/coreai/standin)
// share: the bridge built once per test binary and attached, fault
// injection, the tiny synthetic model and its DFlash2 drafter, runtimes
// (Spec) and drafter directories written for them, and the comparisons of
// the Core AI path with ane/ref and ane/speculative/dflash. Only tests
// import it; a test binary that does runs its tests through Main.
package standintest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/layout"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/synth"
)

// Main runs the tests of m, then removes what this package made in
// temporary directories (the bridge build, the tiny model and its
// drafter) and exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	for _, d := range []string{bridgeDir, tinyDir} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

var (
	bridgeOnce sync.Once
	bridgeDir  string
	bridgePath string
	bridgeErr  error
)

// Bridge returns the stand-in bridge, built (standin.Build) once per test
// binary into a temporary directory and attached (standin.Attach). It
// skips t when no C compiler is installed.
func Bridge(t testing.TB) string {
	t.Helper()
	bridgeOnce.Do(func() {
		if bridgeDir, bridgeErr = os.MkdirTemp("", "coreai-standin-test-"); bridgeErr != nil {
			return
		}
		if bridgePath, bridgeErr = standin.Build(bridgeDir); bridgeErr == nil {
			bridgeErr = standin.Attach(bridgePath)
		}
	})
	if errors.Is(bridgeErr, standin.ErrNoCompiler) {
		t.Skip(bridgeErr)
	}
	if bridgeErr != nil {
		t.Fatal(bridgeErr)
	}
	return bridgePath
}

var (
	tinyOnce sync.Once
	tinyDir  string
	tinyCfg  *hfconfig.Model
	tinyW    map[string][]float32
	tinyErr  error

	drafterOnce sync.Once
	drafterDir  string
	drafterW    *dflash.Weights
	drafterErr  error
)

// Tiny is the tiny synthetic checkpoint (internal/synth preset tiny, seed 7),
// generated once per test binary: its directory, config and tensors as
// float32 (ref's EffectiveTensors of a dense checkpoint are its values).
func Tiny(t testing.TB) (dir string, cfg *hfconfig.Model, tensors map[string][]float32) {
	t.Helper()
	tinyOnce.Do(func() {
		if tinyDir, tinyErr = os.MkdirTemp("", "coreai-tiny-"); tinyErr != nil {
			return
		}
		if tinyErr = synth.Generate(tinyDir, synth.Options{Preset: "tiny", Seed: 7}); tinyErr != nil {
			return
		}
		if tinyCfg, tinyErr = hfconfig.LoadModel(tinyDir); tinyErr != nil {
			return
		}
		var m *ref.Model
		if m, tinyErr = ref.Open(tinyDir, ref.Options{}); tinyErr != nil {
			return
		}
		defer m.Close()
		tinyW = m.EffectiveTensors()
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyDir, tinyCfg, tinyW
}

// TinyEmbedding serves the tiny model's embedding.
func TinyEmbedding(t testing.TB) Embedding {
	_, cfg, w := Tiny(t)
	return NewEmbedding(cfg, w)
}

// Embedding serves rows of a float32 embedding table (coreai.Embedding).
type Embedding struct {
	w          []float32
	rows, cols int
}

// NewEmbedding serves the embedding among a model's tensors.
func NewEmbedding(cfg *hfconfig.Model, tensors map[string][]float32) Embedding {
	return Embedding{tensors[layout.EmbedName], cfg.VocabSize, cfg.HiddenSize}
}

func (e Embedding) Row(id int, dst []float32) { copy(dst, e.w[id*e.cols:(id+1)*e.cols]) }
func (e Embedding) Rows() int                 { return e.rows }
func (e Embedding) Cols() int                 { return e.cols }
func (e Embedding) Bytes() int64              { return int64(len(e.w)) * 4 }

// TinyRuntime writes the stand-in runtime of the tiny model laid out by
// o into dir (standin.WriteRuntime) and returns its manifest.
func TinyRuntime(t testing.TB, dir string, o standin.RuntimeOptions) *bundle.Manifest {
	t.Helper()
	_, cfg, w := Tiny(t)
	man, err := standin.WriteRuntime(dir, cfg, w, o)
	if err != nil {
		t.Fatal(err)
	}
	return man
}

// GraphNumerics are the chunk graphs' (refchunk's): ane/ref compares
// with the same.
var GraphNumerics = ane.Numerics{TanhSiLU: true, StableSoftplus: true}

// Reference is an ane/ref session of the tiny model computing what a
// runtime of manifest man computes with the KV cache kv ("" is
// WriteRuntime's default, v8): the chunk graphs' numerics, man's contexts
// and taps. ane/ref has no kv8: int8 keys are compared against v8's fp16
// keys. The session and its model close when t ends.
func Reference(t testing.TB, man *bundle.Manifest, kv ane.KVFormat) *ref.Session {
	t.Helper()
	dir, _, _ := Tiny(t)
	rkv := ane.KVFP16
	if kv != ane.KVFP16 {
		rkv = ane.KVV8
	}
	m, err := ref.Open(dir, ref.Options{Numerics: GraphNumerics, Ladder: man.Ctxs, KV: rkv, Threads: 1, Taps: man.Taps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s := m.NewSession()
	t.Cleanup(func() { s.Close() })
	return s
}

// SynthDrafter is the tiny model's synthetic DFlash2 drafter
// (dflash.GenerateSynthetic, seed 3), generated once per test binary: its
// directory (not to be written into) and weights.
func SynthDrafter(t testing.TB) (string, *dflash.Weights) {
	t.Helper()
	tdir, _, _ := Tiny(t)
	drafterOnce.Do(func() {
		drafterDir = filepath.Join(tdir, "drafter")
		if _, drafterErr = dflash.GenerateSynthetic(tdir, "", drafterDir, 3); drafterErr != nil {
			return
		}
		drafterW, drafterErr = dflash.LoadWeights(drafterDir)
	})
	if drafterErr != nil {
		t.Fatal(drafterErr)
	}
	return drafterDir, drafterW
}

// CopySynthDrafter copies the synthetic drafter's files into dir (made
// when missing; a bundle's drafter/, say).
func CopySynthDrafter(t testing.TB, dir string) {
	t.Helper()
	src, _ := SynthDrafter(t)
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// DrafterDir copies the synthetic drafter into dir and writes its
// stand-in package there (standin.WriteDrafterPackage, borrowing the tiny
// model's embedding and LM head). It returns dir.
func DrafterDir(t testing.TB, dir string) string {
	t.Helper()
	CopySynthDrafter(t, dir)
	_, _, w := Tiny(t)
	if _, err := standin.WriteDrafterPackage(dir, w); err != nil {
		t.Fatal(err)
	}
	return dir
}

// CPUDrafter is ane/speculative/dflash's CPU drafter of the synthetic drafter over
// the tiny model (ane/ref), closed when t ends.
func CPUDrafter(t testing.TB) *dflash.Drafter {
	t.Helper()
	dir, _, _ := Tiny(t)
	_, dw := SynthDrafter(t)
	target, err := ref.Open(dir, ref.Options{Taps: dw.Config.DFlash.TargetLayerIDs, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close() })
	d, err := dflash.New(dw, target, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// WantErr fails t unless err mentions every part.
func WantErr(t testing.TB, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
}
