package synth

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/layout"
	"github.com/forgedaemon/forged/ane/format/tensor"
)

// tinyDir generates the tiny preset once per test binary run.
var tinyDirs = map[uint64]string{}

func tiny(t *testing.T, seed uint64) string {
	t.Helper()
	if d, ok := tinyDirs[seed]; ok {
		return d
	}
	dir, err := os.MkdirTemp("", "synth-tiny-*")
	if err != nil {
		t.Fatal(err)
	}
	if err := Generate(dir, Options{Preset: "tiny", Seed: seed}); err != nil {
		t.Fatal(err)
	}
	tinyDirs[seed] = dir
	return dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range tinyDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

func TestDeterministic(t *testing.T) {
	a := readDir(t, tiny(t, 7))
	again := t.TempDir()
	if err := Generate(again, Options{Preset: "tiny", Seed: 7}); err != nil {
		t.Fatal(err)
	}
	b := readDir(t, again)
	if len(a) != len(b) {
		t.Fatalf("file sets differ: %d vs %d files", len(a), len(b))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s differs between two runs with the same seed", name)
		}
	}
	// Another seed changes every shard but not the tokenizer.
	c := readDir(t, tiny(t, 8))
	for name, data := range a {
		shard := strings.HasSuffix(name, ".safetensors")
		same := bytes.Equal(data, c[name])
		if shard && same {
			t.Errorf("%s is identical for seeds 7 and 8", name)
		}
		if name == "tokenizer.json" && !same {
			t.Errorf("tokenizer.json depends on the seed")
		}
	}
}

// The checkpoint parses with ane/format/hfconfig and ane/format/tensor, holds exactly the
// layout's tensors with the layout's shapes in BF16, and the index agrees
// with the shards.
func TestCheckpointMatchesLayout(t *testing.T) {
	dir := tiny(t, 1)
	cfg, err := hfconfig.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := PresetConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HiddenSize != want.HiddenSize || cfg.VocabSize != want.VocabSize || !slices.Equal(cfg.LayerTypes, want.LayerTypes) ||
		cfg.RotaryDim() != 4 || cfg.LinearNumValueHeads != 3*cfg.LinearNumKeyHeads || cfg.RopeTheta != 1e7 ||
		cfg.RMSNormEps != 1e-6 || cfg.TieWordEmbeddings || !slices.Equal(cfg.EOSTokenIDs, want.EOSTokenIDs) {
		t.Fatalf("config.json round trip: got %+v, want %+v", cfg, want)
	}
	for i := range cfg.NumHiddenLayers {
		if cfg.IsFullAttention(i) != (i%4 == 3) {
			t.Errorf("layer %d: full attention %v", i, cfg.IsFullAttention(i))
		}
	}

	var index struct {
		Metadata struct {
			TotalSize int64 `json:"total_size"`
		} `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "model.safetensors.index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}

	specs := layout.CheckpointTensors(cfg)
	seen := map[string]bool{}
	var total int64
	shards, _ := filepath.Glob(filepath.Join(dir, "model-*-of-*.safetensors"))
	if len(shards) < 2 {
		t.Fatalf("tiny should be split into several shards to exercise sharding, got %d", len(shards))
	}
	for _, path := range shards {
		f, err := tensor.OpenSafetensors(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range f.Tensors() {
			if seen[ti.Name] {
				t.Errorf("%s appears in two shards", ti.Name)
			}
			seen[ti.Name] = true
			if index.WeightMap[ti.Name] != filepath.Base(path) {
				t.Errorf("%s: index says %q, found in %s", ti.Name, index.WeightMap[ti.Name], filepath.Base(path))
			}
			if ti.DType != tensor.BF16 {
				t.Errorf("%s: dtype %s", ti.Name, ti.DType)
			}
			total += ti.Size
		}
		f.Close()
	}
	if len(seen) != len(specs) || len(index.WeightMap) != len(specs) {
		t.Errorf("%d tensors in shards, %d in index, layout has %d", len(seen), len(index.WeightMap), len(specs))
	}
	if total != index.Metadata.TotalSize {
		t.Errorf("index total_size %d, shards hold %d bytes", index.Metadata.TotalSize, total)
	}
	for _, s := range specs {
		f := openTensorFile(t, dir, index.WeightMap, s.Name)
		ti, ok := f.Tensor(s.Name)
		f.Close()
		if !ok {
			t.Errorf("missing %s", s.Name)
			continue
		}
		if !slices.Equal(ti.Shape, s.Shape) {
			t.Errorf("%s: shape %v, layout says %v", s.Name, ti.Shape, s.Shape)
		}
	}
}

func openTensorFile(t *testing.T, dir string, weightMap map[string]string, name string) *tensor.SafeFile {
	t.Helper()
	f, err := tensor.OpenSafetensors(filepath.Join(dir, weightMap[name]))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// loadTensors reads every tensor of the checkpoint as float32.
func loadTensors(t *testing.T, dir string) map[string][]float32 {
	t.Helper()
	shards, _ := filepath.Glob(filepath.Join(dir, "model-*-of-*.safetensors"))
	out := map[string][]float32{}
	for _, path := range shards {
		f, err := tensor.OpenSafetensors(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range f.Tensors() {
			v, err := f.Float32(ti.Name)
			if err != nil {
				t.Fatal(err)
			}
			out[ti.Name] = v
		}
		f.Close()
	}
	return out
}

func rms(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s / float64(len(v)))
}

func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	return s[int(q*float64(len(s)-1))]
}

// The weights look trained rather than i.i.d.: row scales spread
// log-normally, a few input channels are outliers, the norms are
// zero-centred gains, the DeltaNet parameters sit in realistic ranges.
func TestWeightStatistics(t *testing.T) {
	dir := tiny(t, 1)
	cfg, err := hfconfig.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := loadTensors(t, dir)
	for _, s := range layout.CheckpointTensors(cfg) {
		v := w[s.Name]
		if int64(len(v)) != s.Elements() {
			t.Fatalf("%s: %d values", s.Name, len(v))
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("%s holds %v", s.Name, x)
			}
		}
		switch s.Kind {
		case layout.Linear:
			rows, cols := s.Shape[0], s.Shape[1]
			if rows < 16 {
				continue // in_proj_a/b: too few rows for spread statistics
			}
			rowRMS := make([]float64, rows)
			for r := range rows {
				rowRMS[r] = rms(v[r*cols : (r+1)*cols])
			}
			// Log-normal row scales with σ = 0.5 octave: the 90th/10th
			// percentile ratio is about 2^(2·1.28·0.5) ≈ 2.4; i.i.d. rows
			// would give ≈ 1.1 at these sizes.
			if ratio := quantile(rowRMS, 0.9) / quantile(rowRMS, 0.1); ratio < 1.7 || ratio > 4 {
				t.Errorf("%s: row RMS p90/p10 = %.2f, want ≈ 2.4", s.Name, ratio)
			}
			colRMS := make([]float64, cols)
			col := make([]float32, rows)
			for c := range cols {
				for r := range rows {
					col[r] = v[r*cols+c]
				}
				colRMS[c] = rms(col)
			}
			if ratio := slices.Max(colRMS) / quantile(colRMS, 0.5); ratio < 4 {
				t.Errorf("%s: largest input channel RMS is %.1f× the median, want an outlier ≥ 4×", s.Name, ratio)
			}
			// Overall scale ≈ 1/sqrt(fan-in) (times the row/outlier factors).
			if r := rms(v) * math.Sqrt(float64(cols)); r < 0.7 || r > 3 {
				t.Errorf("%s: RMS·sqrt(fan-in) = %.2f", s.Name, r)
			}
		case layout.Norm:
			mean, lo, hi := stats(v)
			if math.Abs(mean-0.05) > 0.05 || lo < -0.5 || hi > 0.6 {
				t.Errorf("%s: zero-centred gain w should be ≈ 0.05 ± 0.1, got mean %.3f range [%.2f, %.2f]", s.Name, mean, lo, hi)
			}
		case layout.GatedNorm:
			if mean, lo, hi := stats(v); math.Abs(mean-1) > 0.1 || lo < 0.5 || hi > 1.5 {
				t.Errorf("%s: gated norm gain should be ≈ 1, got mean %.3f range [%.2f, %.2f]", s.Name, mean, lo, hi)
			}
		case layout.ALog:
			if _, lo, hi := stats(v); lo < -1 || hi > 2.75 {
				t.Errorf("%s: A_log range [%.2f, %.2f], want within [-1, 2.75]", s.Name, lo, hi)
			}
		case layout.DtBias:
			for _, x := range v {
				if sp := math.Log1p(math.Exp(float64(x))); sp < 0.001 || sp > 0.1 {
					t.Errorf("%s: softplus(dt_bias) = %.4f outside [0.001, 0.1]", s.Name, sp)
				}
			}
		case layout.Conv:
			if _, lo, hi := stats(v); lo < -1.5 || hi > 1.5 {
				t.Errorf("%s: conv weights range [%.2f, %.2f], want small", s.Name, lo, hi)
			}
		}
	}
}

func stats(v []float32) (mean, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		mean += float64(x)
		lo, hi = math.Min(lo, float64(x)), math.Max(hi, float64(x))
	}
	return mean / float64(len(v)), lo, hi
}

// Every preset keeps the real model's structure and the divisibility the
// quantizer and the Hadamard rotations need.
func TestPresetsStructure(t *testing.T) {
	for _, name := range PresetNames() {
		p, _ := LookupPreset(name)
		cfg, err := PresetConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if cfg.LinearNumValueHeads != 3*cfg.LinearNumKeyHeads || cfg.PartialRotaryFactor != 0.25 ||
			cfg.RopeTheta != 1e7 || cfg.RMSNormEps != 1e-6 || cfg.TieWordEmbeddings {
			t.Errorf("%s: structure differs from Qwen3.8: %+v", name, cfg)
		}
		vd := cfg.LinearNumValueHeads * cfg.LinearValueHeadDim
		for what, n := range map[string]int{
			"hidden": cfg.HiddenSize, "intermediate": cfg.IntermediateSize,
			"DeltaNet value width": vd, "attention width": cfg.NumAttentionHeads * cfg.HeadDim,
		} {
			if n%p.HadamardBlock != 0 {
				t.Errorf("%s: Hadamard block %d does not divide the %s %d", name, p.HadamardBlock, what, n)
			}
		}
		for _, s := range layout.CheckpointTensors(cfg) {
			if s.Kind == layout.Linear && s.Shape[0]%4 != 0 && !strings.Contains(s.Name, "in_proj_a") && !strings.Contains(s.Name, "in_proj_b") {
				t.Errorf("%s: %s has %d output rows, not divisible by 4", name, s.Name, s.Shape[0])
			}
		}
		if n := len(cfg.LayerTypes); n != p.Layers || (n >= 4 && cfg.LayerTypes[3] != hfconfig.FullAttention) {
			t.Errorf("%s: layer types %v", name, cfg.LayerTypes)
		}
	}
}

func TestPlanShards(t *testing.T) {
	cfg, _ := PresetConfig("tiny")
	specs := layout.CheckpointTensors(cfg)
	for _, max := range []int64{1, 4096, 100 << 10, 1 << 30} {
		shards := planShards(specs, max)
		var flat []layout.TensorSpec
		for _, sh := range shards {
			var size int64
			for _, s := range sh {
				size += 2 * s.Elements()
			}
			if size > max && len(sh) > 1 {
				t.Errorf("max %d: shard of %d bytes holds %d tensors", max, size, len(sh))
			}
			flat = append(flat, sh...)
		}
		if len(flat) != len(specs) {
			t.Fatalf("max %d: %d tensors after sharding, want %d", max, len(flat), len(specs))
		}
		for i := range flat {
			if flat[i].Name != specs[i].Name {
				t.Fatalf("max %d: order changed at %d", max, i)
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	if _, err := PresetConfig("huge"); err == nil || !strings.Contains(err.Error(), `unknown preset "huge"`) {
		t.Errorf("PresetConfig(huge) error = %v", err)
	}
	if err := Generate(t.TempDir(), Options{Preset: ""}); err == nil || !strings.Contains(err.Error(), "unknown preset") {
		t.Errorf("Generate with no preset: %v", err)
	}
	// A directory that cannot be created: a file is in the way.
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o644)
	if err := Generate(filepath.Join(file, "out"), Options{Preset: "tiny"}); err == nil {
		t.Error("Generate under a regular file succeeded")
	}
	if _, err := buildVocabulary(200); err == nil || !strings.Contains(err.Error(), "vocab_size 200") {
		t.Errorf("buildVocabulary(200) error = %v", err)
	}
}

// A failure midway removes everything written so far.
func TestNoPartialOutput(t *testing.T) {
	dir := t.TempDir()
	// Make the third file's rename fail by putting a directory where
	// tokenizer.json goes.
	if err := os.Mkdir(filepath.Join(dir, "tokenizer.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json", "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Generate(dir, Options{Preset: "tiny", Seed: 1}); err == nil {
		t.Fatal("Generate succeeded with tokenizer.json blocked")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "tokenizer.json" {
			t.Errorf("left behind %s after a failed run", e.Name())
		}
	}
}

// A shard that cannot be written fails the run with its name, and the
// shards written beside it (in parallel) are removed with the rest.
func TestShardFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	const blocked = "model-00002-of-"
	shards := 0
	for _, name := range slices.Sorted(maps.Keys(readDir(t, tiny(t, 1)))) {
		if strings.HasSuffix(name, ".safetensors") {
			shards++
			if strings.HasPrefix(name, blocked) {
				if err := os.MkdirAll(filepath.Join(dir, name, "keep"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if shards < 3 {
		t.Fatalf("the tiny preset has %d shards; the test needs several written at once", shards)
	}
	err := Generate(dir, Options{Preset: "tiny", Seed: 1})
	if err == nil || !strings.Contains(err.Error(), blocked) {
		t.Fatalf("Generate with shard 2 blocked: %v, want an error naming it", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), blocked) {
			t.Errorf("left behind %s after a failed run", e.Name())
		}
	}
}

// Regenerating into a directory that held a checkpoint with more shards
// removes the shards this run did not write.
func TestStaleShardsRemoved(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "model-00009-of-00009.safetensors")
	other := filepath.Join(dir, "README.md")
	os.WriteFile(stale, []byte("old"), 0o644)
	os.WriteFile(other, []byte("keep"), 0o644)
	if err := Generate(dir, Options{Preset: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale shard survived: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("unrelated file removed: %v", err)
	}
}
