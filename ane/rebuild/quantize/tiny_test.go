package quantize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/internal/synth"
)

// tinyMatrices returns every 2-D layer weight of the synthetic tiny
// checkpoint (the projections GPTQ quantizes), by name.
func tinyMatrices(t *testing.T) map[string]struct {
	w          []float32
	rows, cols int
} {
	dir := t.TempDir()
	if err := synth.Generate(dir, synth.Options{Preset: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "model.safetensors.index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	out := map[string]struct {
		w          []float32
		rows, cols int
	}{}
	shards := map[string]bool{}
	for _, s := range index.WeightMap {
		shards[s] = true
	}
	for s := range shards {
		f, err := tensor.OpenSafetensors(filepath.Join(dir, s))
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range f.Tensors() {
			// in_proj_a/b stay BF16 in the export (as the published export does).
			if len(ti.Shape) != 2 || !strings.Contains(ti.Name, ".layers.") || !strings.Contains(ti.Name, "_proj") ||
				strings.Contains(ti.Name, "in_proj_a.") || strings.Contains(ti.Name, "in_proj_b.") {
				continue
			}
			w, err := f.Float32(ti.Name)
			if err != nil {
				t.Fatal(err)
			}
			out[ti.Name] = struct {
				w          []float32
				rows, cols int
			}{w, ti.Shape[0], ti.Shape[1]}
		}
		f.Close()
	}
	if len(out) < 25 {
		t.Fatalf("only %d projection matrices in the tiny checkpoint", len(out))
	}
	return out
}

// TestGPTQBeatsRTNOnTiny: on every projection of the tiny model, with H from
// correlated synthetic activations, GPTQ's layer-output error on held-out
// activations is below round-to-nearest's with the same codebook.
func TestGPTQBeatsRTNOnTiny(t *testing.T) {
	mats := tinyMatrices(t)
	names := make([]string, 0, len(mats))
	for n := range mats {
		names = append(names, n)
	}
	slices.Sort(names)
	hs := map[int][]float64{}
	held := map[int][]float32{}
	for _, name := range names {
		m := mats[name]
		if hs[m.cols] == nil {
			h, _ := correlatedHessian(uint64(m.cols), m.cols, 8*m.cols)
			_, x := correlatedHessian(uint64(m.cols), m.cols, 12*m.cols) // same features, more rows
			hs[m.cols], held[m.cols] = h, x[8*m.cols*m.cols:]
		}
		for _, format := range []string{"LUT4 per-tensor + pcs", "vector 2x16 + pcs", "INT8 per-channel"} {
			r, err := Fit(name, m.w, m.rows, m.cols, format, FitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rtn, err := RTN(m.w, m.rows, m.cols, r)
			if err != nil {
				t.Fatal(err)
			}
			gq, _, err := GPTQ(m.w, m.rows, m.cols, hs[m.cols], r, GPTQOptions{})
			if err != nil {
				t.Fatal(err)
			}
			eg, er := outputError(m.w, gq, m.rows, m.cols, held[m.cols]), outputError(m.w, rtn, m.rows, m.cols, held[m.cols])
			if !(eg < er) {
				t.Errorf("%s %s: GPTQ output error %.4g not below RTN %.4g", name, format, eg, er)
			}
			if testing.Verbose() {
				t.Logf("%-55s %-22s GPTQ/RTN output error %.3f", name, format, eg/er)
			}
		}
	}
}
