// Package export writes the quantized export directory in the published layout
// (Anemll/anemll-forge scripts/qwen3_lut_common.py,
// scripts/qwen38_gptq_27b.py): layer_NN.safetensors (MLP gate/up/down with
// their basis metadata), layer_NN_mixer.safetensors (the token mixer's
// projections) and lm_head.safetensors. Tensor names, dtypes and metadata
// strings are exactly those the reference backend (ane/ref) and the published
// tools read. Files are written atomically and byte-for-byte deterministically
// for the same inputs.
package export

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/forgedaemon/forged/ane/format/qformat"
	"github.com/forgedaemon/forged/ane/format/tensor"
)

// MLPFile, MixerFile and HeadFile name the export's files.
func MLPFile(layer int) string   { return fmt.Sprintf("layer_%02d.safetensors", layer) }
func MixerFile(layer int) string { return fmt.Sprintf("layer_%02d_mixer.safetensors", layer) }

const HeadFile = "lm_head.safetensors"

// KVFormat is the format of full-attention k_proj/v_proj weights
// (the quantizer's KV_FMT; it names weights, not the KV cache).
const KVFormat = "INT8 per-channel"

// BF16 is the plan value that keeps a matrix unquantized.
const BF16 = "bf16"

// Matrix is one projection as stored in the export. Exactly one payload is
// set: Weight (BF16, format "bf16"), Int8 + Scale (INT8 per-channel), or
// Idx + LUT (+ Scale for "+ pcs" formats). LrA/LrB are optional rank-r FP16
// correction factors (lr_a Rows×Rank, lr_b Rank×Cols). FP16 and BF16 values
// are bit patterns.
type Matrix struct {
	Key        string // tensor key prefix: "gate", "linear_attn.in_proj_qkv", "lm_head"
	Format     string // a kernels.LookupFormat name or "bf16"
	Rows, Cols int

	Weight   []uint16 // BF16 Rows×Cols
	Int8     []int8   // Rows×Cols
	Idx      []uint8  // (Rows/CD)×Cols, one index per byte
	LUT      []uint16 // FP16 Entries×CD
	LUTShape [2]int   // {Entries, CD}
	Scale    []uint16 // FP16, one per output row

	LrA, LrB []uint16
	Rank     int
}

// Check verifies the payload against the format and the shape, naming the
// matrix and the rule broken.
func (m *Matrix) Check() error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("export: matrix %q (%s, %d×%d): %s", m.Key, m.Format, m.Rows, m.Cols, fmt.Sprintf(format, args...))
	}
	f, err := qformat.Lookup(m.Format)
	if err != nil {
		return fail("%v", err)
	}
	if m.Rows <= 0 || m.Cols <= 0 {
		return fail("dimensions must be positive")
	}
	n := m.Rows * m.Cols
	switch f.Kind {
	case qformat.KindDense:
		if len(m.Weight) != n || m.Idx != nil || m.Int8 != nil {
			return fail("a bf16 matrix needs exactly %d BF16 weights and nothing else", n)
		}
	case qformat.KindInt8:
		if len(m.Int8) != n || len(m.Scale) != m.Rows || m.Idx != nil || m.Weight != nil {
			return fail("INT8 needs %d codes and %d scales", n, m.Rows)
		}
	case qformat.KindLUT:
		if m.Rows%f.CD != 0 {
			return fail("%d output rows are not divisible by the vector length %d", m.Rows, f.CD)
		}
		if len(m.Idx) != n/f.CD || m.Weight != nil || m.Int8 != nil {
			return fail("needs %d indices (one per %d rows and column)", n/f.CD, f.CD)
		}
		if m.LUTShape != [2]int{f.Entries, f.CD} || len(m.LUT) != f.Entries*f.CD {
			return fail("codebook is %v with %d values, want [%d %d]", m.LUTShape, len(m.LUT), f.Entries, f.CD)
		}
		if f.Scaled != (m.Scale != nil) || (m.Scale != nil && len(m.Scale) != m.Rows) {
			return fail("scale has %d values; the format wants %v per-row scales", len(m.Scale), f.Scaled)
		}
		for i, v := range m.Idx {
			if int(v) >= f.Entries {
				return fail("index %d at %d is past the %d-entry codebook", v, i, f.Entries)
			}
		}
	}
	if (m.LrA == nil) != (m.LrB == nil) {
		return fail("low-rank factors need both lr_a and lr_b")
	}
	if m.LrA != nil && (m.Rank <= 0 || len(m.LrA) != m.Rows*m.Rank || len(m.LrB) != m.Rank*m.Cols) {
		return fail("low-rank factors of rank %d have %d and %d values", m.Rank, len(m.LrA), len(m.LrB))
	}
	return nil
}

// Tensors returns the stored tensors of m, named as the published pack():
// key.weight | key.int8 + key.scale | key.idx + key.lut [+ key.scale], plus
// key.lr_a and key.lr_b.
func (m *Matrix) Tensors() []tensor.Tensor {
	var ts []tensor.Tensor
	add := func(suffix string, dt tensor.DType, shape []int, data []byte) {
		ts = append(ts, tensor.Tensor{Name: m.Key + "." + suffix, DType: dt, Shape: shape, Data: data})
	}
	switch {
	case m.Weight != nil:
		add("weight", tensor.BF16, []int{m.Rows, m.Cols}, u16Bytes(m.Weight))
	case m.Int8 != nil:
		b := make([]byte, len(m.Int8))
		for i, v := range m.Int8 {
			b[i] = byte(v)
		}
		add("int8", tensor.I8, []int{m.Rows, m.Cols}, b)
	default:
		add("idx", tensor.U8, []int{m.Rows / m.LUTShape[1], m.Cols}, append([]byte(nil), m.Idx...))
		add("lut", tensor.F16, []int{m.LUTShape[0], m.LUTShape[1]}, u16Bytes(m.LUT))
	}
	if m.Scale != nil {
		add("scale", tensor.F16, []int{m.Rows}, u16Bytes(m.Scale))
	}
	if m.LrA != nil {
		add("lr_a", tensor.F16, []int{m.Rows, m.Rank}, u16Bytes(m.LrA))
		add("lr_b", tensor.F16, []int{m.Rank, m.Cols}, u16Bytes(m.LrB))
	}
	return ts
}

func u16Bytes(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}

// Basis is the MLP's online rotation metadata.
type Basis struct {
	Online bool
	Block  int // Hadamard block width (1024 for the published model)
}

// MLPMetadata is the metadata of layer_NN.safetensors: basis, the NumPy
// seeds of the gate/up input (1000+i) and down input (2000+i) rotations,
// the block width and each matrix's format.
func MLPMetadata(layer int, b Basis, gate, up, down string) map[string]string {
	basis := "plain"
	if b.Online {
		basis = "online"
	}
	return map[string]string{
		"basis": basis, "seed_in": strconv.Itoa(SeedIn(layer)), "seed_mid": strconv.Itoa(SeedMid(layer)),
		"block": strconv.Itoa(b.Block), "gate.format": gate, "up.format": up, "down.format": down,
	}
}

// SeedIn and SeedMid are the published rotation seeds of layer i.
func SeedIn(layer int) int  { return 1000 + layer }
func SeedMid(layer int) int { return 2000 + layer }

// WriteMLP writes dir/layer_NN.safetensors from gate, up and down (keys
// "gate", "up", "down").
func WriteMLP(dir string, layer int, b Basis, gate, up, down *Matrix) error {
	for _, m := range []struct {
		m   *Matrix
		key string
	}{{gate, "gate"}, {up, "up"}, {down, "down"}} {
		if m.m.Key != m.key {
			return fmt.Errorf("export: layer %d MLP matrix has key %q, want %q", layer, m.m.Key, m.key)
		}
	}
	md := MLPMetadata(layer, b, gate.Format, up.Format, down.Format)
	return write(filepath.Join(dir, MLPFile(layer)), md, gate, up, down)
}

// Mixer kinds (the config's layer types).
const (
	LinearAttention = "linear_attention"
	FullAttention   = "full_attention"
)

// WriteMixer writes dir/layer_NN_mixer.safetensors: kind is
// LinearAttention (in_proj_qkv, in_proj_z, out_proj) or FullAttention
// (q/k/v/o, with k/v in kvFormat). format is the mixer format the metadata
// records; every non-k/v matrix must have it.
func WriteMixer(dir string, layer int, kind, format, kvFormat string, mats []*Matrix) error {
	want := map[string][]string{
		LinearAttention: {"linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.out_proj"},
		FullAttention:   {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"},
	}[kind]
	if want == nil {
		return fmt.Errorf("export: layer %d mixer kind %q is not %q or %q", layer, kind, LinearAttention, FullAttention)
	}
	if len(mats) != len(want) {
		return fmt.Errorf("export: layer %d %s mixer needs %d matrices, got %d", layer, kind, len(want), len(mats))
	}
	for i, m := range mats {
		if m.Key != want[i] {
			return fmt.Errorf("export: layer %d mixer matrix %d is %q, want %q", layer, i, m.Key, want[i])
		}
		f := format
		if m.Key == "self_attn.k_proj" || m.Key == "self_attn.v_proj" {
			f = kvFormat
		}
		if m.Format != f {
			return fmt.Errorf("export: layer %d %s has format %q, the mixer metadata says %q", layer, m.Key, m.Format, f)
		}
	}
	md := map[string]string{"kind": kind, "format": format, "kv_format": kvFormat}
	return write(filepath.Join(dir, MixerFile(layer)), md, mats...)
}

// WriteHead writes dir/lm_head.safetensors (key "lm_head").
func WriteHead(dir string, m *Matrix) error {
	if m.Key != "lm_head" {
		return fmt.Errorf("export: head matrix has key %q, want \"lm_head\"", m.Key)
	}
	return write(filepath.Join(dir, HeadFile), map[string]string{"format": m.Format}, m)
}

func write(path string, md map[string]string, mats ...*Matrix) error {
	var ts []tensor.Tensor
	for _, m := range mats {
		if err := m.Check(); err != nil {
			return err
		}
		ts = append(ts, m.Tensors()...)
	}
	return tensor.WriteSafetensors(path, md, ts)
}

// ReadMatrix reads key's tensors from an export file back into a Matrix
// (format from the file's metadata, which the caller passes).
func ReadMatrix(f *tensor.SafeFile, key, format string) (*Matrix, error) {
	fail := func(msg string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", f.Path(), key, fmt.Sprintf(msg, args...))
	}
	m := &Matrix{Key: key, Format: format}
	u16 := func(name string, dt tensor.DType) ([]uint16, []int, error) {
		info, ok := f.Tensor(name)
		if !ok {
			return nil, nil, nil
		}
		if info.DType != dt {
			return nil, nil, fail("%s has dtype %s, want %s", name, info.DType, dt)
		}
		v, err := tensor.View[uint16](f, name)
		return append([]uint16(nil), v...), info.Shape, err
	}
	var err error
	var shape []int
	switch {
	case has(f, key+".weight"):
		if m.Weight, shape, err = u16(key+".weight", tensor.BF16); err != nil {
			return nil, err
		}
		if len(shape) != 2 {
			return nil, fail(".weight has shape %v", shape)
		}
		m.Rows, m.Cols = shape[0], shape[1]
	case has(f, key+".int8"):
		info, _ := f.Tensor(key + ".int8")
		v, err := tensor.View[int8](f, key+".int8")
		if err != nil || len(info.Shape) != 2 {
			return nil, fail(".int8: %v %v", info.Shape, err)
		}
		m.Int8, m.Rows, m.Cols = append([]int8(nil), v...), info.Shape[0], info.Shape[1]
	case has(f, key+".idx"):
		info, _ := f.Tensor(key + ".idx")
		v, err := tensor.View[uint8](f, key+".idx")
		if err != nil || len(info.Shape) != 2 {
			return nil, fail(".idx: %v %v", info.Shape, err)
		}
		m.Idx = append([]uint8(nil), v...)
		if m.LUT, shape, err = u16(key+".lut", tensor.F16); err != nil {
			return nil, err
		}
		if len(shape) != 2 {
			return nil, fail(".idx without a [entries, vector length] .lut")
		}
		m.LUTShape = [2]int{shape[0], shape[1]}
		m.Rows, m.Cols = info.Shape[0]*shape[1], info.Shape[1]
	default:
		return nil, fail("no .weight, .int8 or .idx tensor")
	}
	if m.Scale, _, err = u16(key+".scale", tensor.F16); err != nil {
		return nil, err
	}
	if m.LrA, shape, err = u16(key+".lr_a", tensor.F16); err != nil {
		return nil, err
	}
	if m.LrA != nil {
		if len(shape) != 2 {
			return nil, fail(".lr_a has shape %v", shape)
		}
		m.Rank = shape[1]
		if m.LrB, _, err = u16(key+".lr_b", tensor.F16); err != nil {
			return nil, err
		}
	}
	return m, m.Check()
}

func has(f *tensor.SafeFile, name string) bool { _, ok := f.Tensor(name); return ok }
