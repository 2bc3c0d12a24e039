package export

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/tensor"
)

func lutMatrix(r *rand.Rand, key, format string, rows, cols, cd, entries int, scaled bool) *Matrix {
	m := &Matrix{Key: key, Format: format, Rows: rows, Cols: cols, LUTShape: [2]int{entries, cd}}
	m.Idx = make([]uint8, rows/cd*cols)
	for i := range m.Idx {
		m.Idx[i] = uint8(r.IntN(entries))
	}
	m.LUT = make([]uint16, entries*cd)
	for i := range m.LUT {
		m.LUT[i] = uint16(r.Uint32())&0x3bff | 0x3000 // finite fp16
	}
	if scaled {
		m.Scale = make([]uint16, rows)
		for i := range m.Scale {
			m.Scale[i] = 0x3c00
		}
	}
	return m
}

func int8Matrix(r *rand.Rand, key string, rows, cols int) *Matrix {
	m := &Matrix{Key: key, Format: KVFormat, Rows: rows, Cols: cols, Int8: make([]int8, rows*cols), Scale: make([]uint16, rows)}
	for i := range m.Int8 {
		m.Int8[i] = int8(r.IntN(255) - 127)
	}
	for i := range m.Scale {
		m.Scale[i] = 0x2000
	}
	return m
}

func writeSample(t *testing.T, dir string) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	gate := lutMatrix(r, "gate", "vector 2x16 + pcs", 8, 6, 2, 16, true)
	up := lutMatrix(r, "up", "vector 2x16 + pcs", 8, 6, 2, 16, true)
	down := lutMatrix(r, "down", "LUT4 per-tensor + pcs", 6, 8, 1, 16, true)
	if err := WriteMLP(dir, 3, Basis{Online: true, Block: 1024}, gate, up, down); err != nil {
		t.Fatal(err)
	}
	q := lutMatrix(r, "self_attn.q_proj", "LUT4 per-tensor + pcs", 8, 6, 1, 16, true)
	q.LrA, q.LrB, q.Rank = make([]uint16, 8*2), make([]uint16, 2*6), 2
	k, v := int8Matrix(r, "self_attn.k_proj", 4, 6), int8Matrix(r, "self_attn.v_proj", 4, 6)
	o := lutMatrix(r, "self_attn.o_proj", "LUT4 per-tensor + pcs", 6, 4, 1, 16, true)
	if err := WriteMixer(dir, 3, FullAttention, "LUT4 per-tensor + pcs", KVFormat, []*Matrix{q, k, v, o}); err != nil {
		t.Fatal(err)
	}
	head := lutMatrix(r, "lm_head", "LUT4 per-tensor + pcs", 10, 6, 1, 16, true)
	if err := WriteHead(dir, head); err != nil {
		t.Fatal(err)
	}
}

// TestPublishedLayout checks file names, tensor names, dtypes, shapes and
// metadata strings against the published export (Anemll/anemll-forge
// scripts/qwen38_gptq_27b.py pack(), configs/quantization/mix25in_mixr.export-headers.json).
func TestPublishedLayout(t *testing.T) {
	dir := t.TempDir()
	writeSample(t, dir)
	type want struct {
		dtype tensor.DType
		shape []int
	}
	cases := []struct {
		file    string
		md      map[string]string
		tensors map[string]want
	}{
		{"layer_03.safetensors",
			map[string]string{"basis": "online", "seed_in": "1003", "seed_mid": "2003", "block": "1024",
				"gate.format": "vector 2x16 + pcs", "up.format": "vector 2x16 + pcs", "down.format": "LUT4 per-tensor + pcs"},
			map[string]want{
				"gate.idx": {tensor.U8, []int{4, 6}}, "gate.lut": {tensor.F16, []int{16, 2}}, "gate.scale": {tensor.F16, []int{8}},
				"up.idx": {tensor.U8, []int{4, 6}}, "up.lut": {tensor.F16, []int{16, 2}}, "up.scale": {tensor.F16, []int{8}},
				"down.idx": {tensor.U8, []int{6, 8}}, "down.lut": {tensor.F16, []int{16, 1}}, "down.scale": {tensor.F16, []int{6}},
			}},
		{"layer_03_mixer.safetensors",
			map[string]string{"kind": "full_attention", "format": "LUT4 per-tensor + pcs", "kv_format": "INT8 per-channel"},
			map[string]want{
				"self_attn.q_proj.idx": {tensor.U8, []int{8, 6}}, "self_attn.q_proj.lut": {tensor.F16, []int{16, 1}},
				"self_attn.q_proj.scale": {tensor.F16, []int{8}}, "self_attn.q_proj.lr_a": {tensor.F16, []int{8, 2}},
				"self_attn.q_proj.lr_b": {tensor.F16, []int{2, 6}},
				"self_attn.k_proj.int8": {tensor.I8, []int{4, 6}}, "self_attn.k_proj.scale": {tensor.F16, []int{4}},
				"self_attn.v_proj.int8": {tensor.I8, []int{4, 6}}, "self_attn.v_proj.scale": {tensor.F16, []int{4}},
				"self_attn.o_proj.idx": {tensor.U8, []int{6, 4}}, "self_attn.o_proj.lut": {tensor.F16, []int{16, 1}},
				"self_attn.o_proj.scale": {tensor.F16, []int{6}},
			}},
		{"lm_head.safetensors", map[string]string{"format": "LUT4 per-tensor + pcs"},
			map[string]want{"lm_head.idx": {tensor.U8, []int{10, 6}}, "lm_head.lut": {tensor.F16, []int{16, 1}},
				"lm_head.scale": {tensor.F16, []int{10}}}},
	}
	for _, c := range cases {
		f, err := tensor.OpenSafetensors(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Metadata(); len(got) != len(c.md) {
			t.Errorf("%s metadata %v, want %v", c.file, got, c.md)
		} else {
			for k, v := range c.md {
				if got[k] != v {
					t.Errorf("%s metadata %q = %q, want %q", c.file, k, got[k], v)
				}
			}
		}
		if n := len(f.Tensors()); n != len(c.tensors) {
			t.Errorf("%s has %d tensors, want %d", c.file, n, len(c.tensors))
		}
		for name, w := range c.tensors {
			info, ok := f.Tensor(name)
			if !ok {
				t.Errorf("%s: tensor %s missing", c.file, name)
				continue
			}
			if info.DType != w.dtype || !slices.Equal(info.Shape, w.shape) {
				t.Errorf("%s: %s is %s %v, want %s %v", c.file, name, info.DType, info.Shape, w.dtype, w.shape)
			}
		}
		f.Close()
	}
}

func TestDeterministicBytes(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeSample(t, a)
	writeSample(t, b)
	for _, name := range []string{"layer_03.safetensors", "layer_03_mixer.safetensors", "lm_head.safetensors"} {
		x, _ := os.ReadFile(filepath.Join(a, name))
		y, _ := os.ReadFile(filepath.Join(b, name))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two identical writes", name)
		}
	}
}

func TestSizePredictionMatchesFile(t *testing.T) {
	dir := t.TempDir()
	writeSample(t, dir)
	r := rand.New(rand.NewPCG(1, 2))
	gate := lutMatrix(r, "gate", "vector 2x16 + pcs", 8, 6, 2, 16, true)
	s, err := MatrixSize("gate", gate.Format, 8, 6, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.ExportBytes != gate.DataBytes() {
		t.Errorf("predicted %d export bytes, the matrix holds %d", s.ExportBytes, gate.DataBytes())
	}
	// Packed: 24 indices × 4 bits + 16×2 fp16 LUT + 8 fp16 scales.
	if want := int64(24*4/8 + 64 + 16); s.PackedBytes != want {
		t.Errorf("packed bytes %d, want %d", s.PackedBytes, want)
	}
	if bpw := s.BitsPerWeight(); bpw != float64(8*(12+64+16))/48 {
		t.Errorf("bits per weight %v", bpw)
	}
	i8, _ := MatrixSize("k", KVFormat, 4, 6, 2)
	if want := int64(24 + 8 + 2*2*(4+6)); i8.ExportBytes != want || i8.PackedBytes != want {
		t.Errorf("INT8 with rank-2 factors: %+v, want %d", i8, want)
	}
}

func TestBadMatrices(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	odd := lutMatrix(r, "gate", "vector 2x16 + pcs", 8, 6, 2, 16, true)
	odd.Rows = 7
	if _, err := MatrixSize("layers.0.mlp.gate", "vector 2x16 + pcs", 7, 6, 0); err == nil ||
		!strings.Contains(err.Error(), "layers.0.mlp.gate") || !strings.Contains(err.Error(), "not divisible") {
		t.Errorf("odd rows for a 2-vector format: %v", err)
	}
	if _, err := MatrixSize("x", "vector 3x16", 6, 6, 0); err == nil || !strings.Contains(err.Error(), "vector 3x16") {
		t.Errorf("unknown format: %v", err)
	}
	bad := lutMatrix(r, "down", "LUT4 per-tensor + pcs", 6, 8, 1, 16, true)
	bad.Idx[5] = 16
	good := lutMatrix(r, "gate", "LUT4 per-tensor + pcs", 8, 6, 1, 16, true)
	dir := t.TempDir()
	err := WriteMLP(dir, 0, Basis{Block: 32}, good, lutMatrix(r, "up", "LUT4 per-tensor + pcs", 8, 6, 1, 16, true), bad)
	if err == nil || !strings.Contains(err.Error(), "past the 16-entry codebook") {
		t.Errorf("index past the codebook: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, MLPFile(0))); err == nil {
		t.Error("a rejected MLP still wrote its file")
	}
	if err := WriteMixer(dir, 0, "sliding_attention", "bf16", KVFormat, nil); err == nil {
		t.Error("unknown mixer kind accepted")
	}
	if err := WriteHead(dir, good); err == nil {
		t.Error("a head keyed \"gate\" accepted")
	}
}
