package standin_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/config"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/layout"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/synth"
)

// The tests build the stand-in bridge once into a temporary directory,
// attach it, and run ane/coreai over packages this package wrote for the
// tiny synthetic model, comparing with ane/ref.

var (
	bridgeDir, bridgePath string
	bridgeErr             error
)

func TestMain(m *testing.M) {
	var err error
	if bridgeDir, err = os.MkdirTemp("", "standin-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if bridgePath, bridgeErr = standin.Build(bridgeDir); bridgeErr == nil {
		bridgeErr = standin.Attach(bridgePath)
	}
	code := m.Run()
	for _, d := range []string{bridgeDir, tinyDir} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

// bridge returns the attached bridge, skipping without a C compiler.
func bridge(t testing.TB) string {
	t.Helper()
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
	tinyCfg  *config.Model
	tinyW    map[string][]float32
	tinyErr  error
)

// tiny is the tiny synthetic checkpoint, its config and its tensors as
// float32 (ref's EffectiveTensors of a dense checkpoint are its values).
func tiny(t testing.TB) (string, *config.Model, map[string][]float32) {
	t.Helper()
	tinyOnce.Do(func() {
		if tinyDir, tinyErr = os.MkdirTemp("", "standin-tiny-"); tinyErr != nil {
			return
		}
		if tinyErr = synth.Generate(tinyDir, synth.Options{Preset: "tiny", Seed: 7}); tinyErr != nil {
			return
		}
		if tinyCfg, tinyErr = config.LoadModel(tinyDir); tinyErr != nil {
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

// embedding serves rows of a float32 embedding table (coreai.Embedding).
type embedding struct {
	w          []float32
	rows, cols int
}

func newEmbedding(cfg *config.Model, tensors map[string][]float32) embedding {
	return embedding{tensors[layout.EmbedName], cfg.VocabSize, cfg.HiddenSize}
}

func (e embedding) Row(id int, dst []float32) { copy(dst, e.w[id*e.cols:(id+1)*e.cols]) }
func (e embedding) Rows() int                 { return e.rows }
func (e embedding) Cols() int                 { return e.cols }
func (e embedding) Bytes() int64              { return int64(len(e.w)) * 4 }

// graphNumerics are the chunk graphs' (refchunk's): ane/ref compares
// with the same.
var graphNumerics = ane.Numerics{TanhSiLU: true, StableSoftplus: true}

// closeLogits fails unless got is within 1% of the logit range of want
// (fp16 at every tensor boundary of the chunk path; docs/COREAI.md
// measured ≤ 0.42%) and has want's argmax in every row whose top two are
// not nearly tied.
func closeLogits(t *testing.T, what string, got, want []float32, vocab int) float64 {
	t.Helper()
	var worst, scale float64
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i]-want[i])))
		scale = max(scale, math.Abs(float64(want[i])))
	}
	if rel := worst / scale; rel > 0.01 || math.IsNaN(rel) {
		t.Fatalf("%s: logits differ by %.4g (%.3g of the range %.3g)", what, worst, rel, scale)
	}
	for r := 0; r < len(want)/vocab; r++ {
		g, w := got[r*vocab:(r+1)*vocab], want[r*vocab:(r+1)*vocab]
		if a, b := argmax(g), argmax(w); a != b && margin(w) > 4*worst {
			t.Fatalf("%s row %d: argmax %d, reference %d (margin %.3g)", what, r, a, b, margin(w))
		}
	}
	return worst / scale
}

func argmax(v []float32) int {
	b := 0
	for i, x := range v {
		if x > v[b] {
			b = i
		}
	}
	return b
}

func margin(v []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, x := range v {
		if f := float64(x); f > a {
			a, b = f, a
		} else if f > b {
			b = f
		}
	}
	return a - b
}

func wantErr(t *testing.T, err error, parts ...string) {
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
