package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parsed is a GGUF file read back by the test's own decoder, which walks
// the layout of ggml's docs/gguf.md field by field.
type parsed struct {
	version uint32
	kv      map[string]any
	tensors []Tensor
	offsets []uint64
}

func parse(t *testing.T, b []byte) parsed {
	t.Helper()
	r := bytes.NewReader(b)
	rd := func(v any) {
		if err := binary.Read(r, binary.LittleEndian, v); err != nil {
			t.Fatalf("short file: %v", err)
		}
	}
	str := func() string {
		var n uint64
		rd(&n)
		s := make([]byte, n)
		rd(s)
		return string(s)
	}
	var magic [4]byte
	rd(&magic)
	if string(magic[:]) != "GGUF" {
		t.Fatalf("magic %q", magic)
	}
	var p parsed
	var nt, nkv uint64
	rd(&p.version)
	rd(&nt)
	rd(&nkv)
	p.kv = map[string]any{}
	for range nkv {
		k := str()
		var typ uint32
		rd(&typ)
		switch typ {
		case typeUint32:
			var v uint32
			rd(&v)
			p.kv[k] = v
		case typeInt32:
			var v int32
			rd(&v)
			p.kv[k] = v
		case typeFloat32:
			var v float32
			rd(&v)
			p.kv[k] = v
		case typeBool:
			var v uint8
			rd(&v)
			p.kv[k] = v == 1
		case typeString:
			p.kv[k] = str()
		case typeArray:
			var et uint32
			var n uint64
			rd(&et)
			rd(&n)
			switch et {
			case typeInt32:
				v := make([]int32, n)
				rd(v)
				p.kv[k] = v
			case typeString:
				v := make([]string, n)
				for i := range v {
					v[i] = str()
				}
				p.kv[k] = v
			default:
				t.Fatalf("array of type %d", et)
			}
		default:
			t.Fatalf("key %q: type %d", k, typ)
		}
	}
	for range nt {
		var ti Tensor
		ti.Name = str()
		var nd uint32
		rd(&nd)
		ti.Dims = make([]uint64, nd)
		rd(ti.Dims)
		rd(&ti.Type)
		var off uint64
		rd(&off)
		p.tensors, p.offsets = append(p.tensors, ti), append(p.offsets, off)
	}
	start := (len(b) - r.Len() + Alignment - 1) / Alignment * Alignment
	for i := range p.tensors {
		n, _ := p.tensors[i].Type.elemBytes()
		for _, d := range p.tensors[i].Dims {
			n *= int(d)
		}
		o := start + int(p.offsets[i])
		p.tensors[i].Data = b[o : o+n]
	}
	return p
}

func TestWriteRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	bf := BF16Bytes([]float32{1, -2.5, 3, 0.15625})
	kvs := []KV{
		{"general.architecture", "qwen35"},
		{"qwen35.block_count", uint32(16)},
		{"qwen35.attention.layer_norm_rms_epsilon", float32(1e-6)},
		{"qwen35.rope.dimension_sections", []int32{11, 11, 10, 0}},
		{"tokenizer.ggml.tokens", []string{"a", "bc", ""}},
		{"flag", true},
		{"signed", int32(-3)},
	}
	tensors := []Tensor{
		{Name: "norm", Dims: []uint64{3}, Type: F32, Data: Float32Bytes([]float32{1, -2, 0.5})},
		{Name: "w", Dims: []uint64{2, 2}, Type: BF16, Data: bf},
		{Name: "h", Dims: []uint64{1}, Type: BF16, Data: []byte{0x80, 0x3f}},
	}
	if err := Write(path, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, b)
	if p.version != 3 || len(p.kv) != len(kvs) || len(p.tensors) != len(tensors) {
		t.Fatalf("version %d, %d keys, %d tensors", p.version, len(p.kv), len(p.tensors))
	}
	for _, kv := range kvs {
		got, want := p.kv[kv.Key], kv.Value
		if gs, ok := got.([]string); ok {
			if strings.Join(gs, "|") != strings.Join(want.([]string), "|") {
				t.Errorf("%s = %v, want %v", kv.Key, got, want)
			}
			continue
		}
		if gi, ok := got.([]int32); ok {
			if len(gi) != 4 || gi[0] != 11 || gi[2] != 10 {
				t.Errorf("%s = %v, want %v", kv.Key, got, want)
			}
			continue
		}
		if got != want {
			t.Errorf("%s = %v (%T), want %v (%T)", kv.Key, got, got, want, want)
		}
	}
	for i, ti := range p.tensors {
		w := tensors[i]
		if ti.Name != w.Name || ti.Type != w.Type || len(ti.Dims) != len(w.Dims) || !bytes.Equal(ti.Data, w.Data) {
			t.Errorf("tensor %d: %s %v %v, want %s %v %v", i, ti.Name, ti.Type, ti.Dims, w.Name, w.Type, w.Dims)
		}
		if p.offsets[i]%Alignment != 0 {
			t.Errorf("tensor %s at offset %d, not aligned to %d", ti.Name, p.offsets[i], Alignment)
		}
	}
	if len(b)%Alignment != 0 {
		t.Errorf("file of %d bytes does not end on the alignment", len(b))
	}
}

func TestWriteRejects(t *testing.T) {
	dir := t.TempDir()
	f32 := Float32Bytes([]float32{1, 2})
	for _, c := range []struct {
		name    string
		kvs     []KV
		tensors []Tensor
		want    string
	}{
		{"duplicate key", []KV{{"a", uint32(1)}, {"a", uint32(2)}}, nil, `duplicate metadata key "a"`},
		{"bad value", []KV{{"a", 1.5}}, nil, `metadata "a": unsupported value type float64`},
		{"duplicate tensor", nil, []Tensor{{"t", []uint64{2}, F32, f32}, {"t", []uint64{2}, F32, f32}}, `duplicate tensor "t"`},
		{"short data", nil, []Tensor{{"t", []uint64{3}, F32, f32}}, `has 8 bytes of data, want 12`},
		{"short BF16", nil, []Tensor{{"t", []uint64{3, 2}, BF16, make([]byte, 10)}}, "has 10 bytes of data, want 12"},
		{"zero dim", nil, []Tensor{{"t", []uint64{2, 0}, F32, nil}}, "none zero"},
		{"unknown type", nil, []Tensor{{"t", []uint64{2}, Type(99), f32}}, "unsupported tensor type ggml_type(99)"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		err := Write(path, c.kvs, c.tensors)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if _, serr := os.Stat(path); serr == nil {
			t.Errorf("%s: a file was left at %s", c.name, path)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".gguf-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestBF16Bytes: BF16 data is the top half of each float32, rounded to
// nearest even, little-endian.
func TestBF16Bytes(t *testing.T) {
	got := BF16Bytes([]float32{1, -2.5, math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000)})
	want := []byte{0x80, 0x3f, 0x20, 0xc0, 0x80, 0x3f, 0x82, 0x3f} // 1.00390625 ties to even 1; 1.01171875 ties up
	if !bytes.Equal(got, want) {
		t.Fatalf("% x, want % x", got, want)
	}
}
