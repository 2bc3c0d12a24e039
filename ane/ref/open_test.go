package ref

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/internal/synth"
)

var (
	tinyOnce sync.Once
	tinyDir  string
	tinyErr  error
)

// tinyCheckpoint generates the synthetic tiny preset once per test run.
func tinyCheckpoint(t *testing.T) string {
	t.Helper()
	tinyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ref-tiny-")
		if err != nil {
			tinyErr = err
			return
		}
		tinyDir, tinyErr = dir, synth.Generate(dir, synth.Options{Preset: "tiny", Seed: 7})
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tinyDir != "" {
		os.RemoveAll(tinyDir)
	}
	for _, bm := range benchModels {
		bm.files.Close()
	}
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// naiveFromSource decodes the checkpoint's BF16 bytes by hand into the
// float64 reference model.
func naiveFromSource(t *testing.T, cfg Config, src Source) *nModel {
	t.Helper()
	flat := func(name string) ([]float64, []int) {
		tt, ok := src.Tensor(name)
		if !ok || tt.DType != "BF16" {
			t.Fatalf("tensor %s: present %v dtype %s", name, ok, tt.DType)
		}
		v := make([]float64, len(tt.Data)/2)
		for i := range v {
			v[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(tt.Data[2*i:])) << 16))
		}
		return v, tt.Shape
	}
	vec := func(name string) []float64 { v, _ := flat(name); return v }
	mat := func(name string) [][]float64 {
		v, shape := flat(name)
		cols := 1
		for _, d := range shape[1:] {
			cols *= d
		}
		m := make([][]float64, shape[0])
		for i := range m {
			m[i] = v[i*cols : (i+1)*cols]
		}
		return m
	}
	nm := &nModel{cfg: cfg, embed: mat(embedName), finalNorm: vec(normName), head: mat(headName)}
	for i := 0; i < cfg.Layers; i++ {
		p := layerPrefix(i)
		L := nLayer{full: cfg.FullAttention[i], inNorm: vec(p + "input_layernorm.weight"),
			postNorm: vec(p + "post_attention_layernorm.weight"), gate: mat(p + "mlp.gate_proj.weight"),
			up: mat(p + "mlp.up_proj.weight"), down: mat(p + "mlp.down_proj.weight")}
		if L.full {
			a := p + "self_attn."
			L.q, L.k, L.v, L.o = mat(a+"q_proj.weight"), mat(a+"k_proj.weight"), mat(a+"v_proj.weight"), mat(a+"o_proj.weight")
			L.qNorm, L.kNorm = vec(a+"q_norm.weight"), vec(a+"k_norm.weight")
		} else {
			g := p + "linear_attn."
			L.qkv, L.z, L.b, L.a = mat(g+"in_proj_qkv.weight"), mat(g+"in_proj_z.weight"), mat(g+"in_proj_b.weight"), mat(g+"in_proj_a.weight")
			L.out, L.conv = mat(g+"out_proj.weight"), mat(g+"conv1d.weight")
			L.aLog, L.dtBias, L.gNorm = vec(g+"A_log"), vec(g+"dt_bias"), vec(g+"norm.weight")
		}
		nm.layers = append(nm.layers, L)
	}
	return nm
}

// The engine on the synthetic tiny checkpoint (read from disk through
// config.json, the index and the shards) agrees with the float64 reference.
func TestTinyPresetMatchesNaive(t *testing.T) {
	dir := tinyCheckpoint(t)
	m, err := Open(dir, Options{Ladder: []int{128}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	files := &DirFiles{Dir: dir}
	defer files.Close()
	src, err := openCheckpoint(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	nm := naiveFromSource(t, m.Config(), src)
	ids := randIDs(rand.New(rand.NewPCG(30, 30)), 70, m.Config().Vocab)
	st := nm.newState()
	var want []float64
	for _, id := range ids {
		want = nm.step(st, id)
	}
	s := m.NewSession()
	defer s.Close()
	got, err := s.Feed(ids)
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(got, want); e > 1e-4 {
		t.Fatalf("tiny preset logits differ from the float64 reference by %.3g", e)
	}
}

func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

func TestOpenBadCheckpoint(t *testing.T) {
	src := tinyCheckpoint(t)
	cases := []struct {
		name   string
		mutate func(dir string)
		want   string
	}{
		{"shape disagrees with config", func(dir string) {
			p := filepath.Join(dir, "config.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), `"intermediate_size": 192`, `"intermediate_size": 256`, 1)), 0o644)
		}, `has shape [192 64], config.json needs [256 64]`},
		{"index names a tensor no shard holds", func(dir string) {
			p := filepath.Join(dir, "model.safetensors.index.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), `"weight_map": {`, `"weight_map": {"model.language_model.extra.weight": "model-00001-of-00003.safetensors",`, 1)), 0o644)
		}, `which does not hold it`},
		{"missing tensor", func(dir string) {
			p := filepath.Join(dir, "model.safetensors.index.json")
			b, _ := os.ReadFile(p)
			var idx map[string]any
			json.Unmarshal(b, &idx)
			delete(idx["weight_map"].(map[string]any), "model.language_model.norm.weight")
			b, _ = json.Marshal(idx)
			os.WriteFile(p, b, 0o644)
		}, `tensor "model.language_model.norm.weight" is missing`},
		{"shard escapes the directory", func(dir string) {
			p := filepath.Join(dir, "model.safetensors.index.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), `": "model-`, `": "../model-`, 1)), 0o644)
		}, `not a .safetensors file in the checkpoint directory`},
	}
	for _, c := range cases {
		dir := copyDir(t, src)
		c.mutate(dir)
		m, err := Open(dir, Options{})
		if err == nil {
			m.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
