package tensor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rawFile builds a safetensors file from a header string and dataLen bytes
// of data (filled with a counting pattern).
func rawFile(header string, dataLen int) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	for i := range dataLen {
		b.WriteByte(byte(i))
	}
	return b.Bytes()
}

func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHandBuiltFile(t *testing.T) {
	header := `{"b":{"dtype":"F16","shape":[1,2],"data_offsets":[8,12]},` +
		`"__metadata__":{"format":"pt","note":"ünïcode"},` +
		`"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"c":{"dtype":"BF16","shape":[],"data_offsets":[12,14]}}`
	var data bytes.Buffer
	binary.Write(&data, binary.LittleEndian, []uint32{0x3fc00000, 0xc0000000}) // 1.5, -2
	binary.Write(&data, binary.LittleEndian, []uint16{0x3c00, 0xc500})         // fp16 1, -5
	binary.Write(&data, binary.LittleEndian, []uint16{0x4049})                 // bf16 3.140625
	raw := rawFile(header, 0)
	raw = append(raw, data.Bytes()...)
	f, err := OpenSafetensors(writeTemp(t, "known.safetensors", raw))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if md := f.Metadata(); len(md) != 2 || md["format"] != "pt" || md["note"] != "ünïcode" {
		t.Errorf("metadata = %v", md)
	}
	want := []TensorInfo{
		{Name: "a", DType: F32, Shape: []int{2}, Offset: 0, Size: 8},
		{Name: "b", DType: F16, Shape: []int{1, 2}, Offset: 8, Size: 4},
		{Name: "c", DType: BF16, Shape: []int{}, Offset: 12, Size: 2},
	}
	got := f.Tensors()
	if len(got) != len(want) {
		t.Fatalf("tensors = %+v", got)
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].DType != want[i].DType || !slices.Equal(got[i].Shape, want[i].Shape) ||
			got[i].Offset != want[i].Offset || got[i].Size != want[i].Size {
			t.Errorf("tensor %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for name, vals := range map[string][]float32{"a": {1.5, -2}, "b": {1, -5}, "c": {3.140625}} {
		f32, err := f.Float32(name)
		if err != nil || !slices.Equal(f32, vals) {
			t.Errorf("Float32(%q) = %v, %v; want %v", name, f32, err, vals)
		}
	}
	h, err := View[uint16](f, "b")
	if err != nil || !slices.Equal(h, []uint16{0x3c00, 0xc500}) {
		t.Errorf("View[uint16](b) = %#v, %v", h, err)
	}
	if _, err := View[float32](f, "b"); err == nil || !strings.Contains(err.Error(), "F16") {
		t.Errorf("View[float32] of an F16 tensor: err = %v, want a dtype mismatch", err)
	}
	if _, err := f.Bytes("missing"); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("Bytes(missing): err = %v", err)
	}
	if ti, ok := f.Tensor("b"); !ok || ti.Offset != 8 {
		t.Errorf("Tensor(b) = %+v, %v", ti, ok)
	}
}

// TestUnalignedView reads an F32 tensor that starts one byte into an
// 8-aligned data section: the view must still hold the right values.
func TestUnalignedView(t *testing.T) {
	header := `{"pad":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}}`
	for (8+len(header))%8 != 0 {
		header += " "
	}
	raw := append(rawFile(header, 0), 0xAA)
	raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(-1.25))
	raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(7))
	f, err := OpenSafetensors(writeTemp(t, "u.safetensors", raw))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := View[float32](f, "x")
	if err != nil || !slices.Equal(v, []float32{-1.25, 7}) {
		t.Fatalf("View = %v, %v", v, err)
	}
}

// decodeLE reads element i of a little-endian tensor as float64 for comparison,
// independently of the package's unsafe views.
func decodeLE(d DType, b []byte, i int) float64 {
	switch d {
	case Bool, U8:
		return float64(b[i])
	case I8:
		return float64(int8(b[i]))
	case U16, F16, BF16:
		return float64(binary.LittleEndian.Uint16(b[2*i:]))
	case I16:
		return float64(int16(binary.LittleEndian.Uint16(b[2*i:])))
	case U32:
		return float64(binary.LittleEndian.Uint32(b[4*i:]))
	case I32:
		return float64(int32(binary.LittleEndian.Uint32(b[4*i:])))
	case F32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	case U64:
		return float64(binary.LittleEndian.Uint64(b[8*i:]))
	case I64:
		return float64(int64(binary.LittleEndian.Uint64(b[8*i:])))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
}

func viewAsFloat64(t *testing.T, f *SafeFile, name string, d DType) []float64 {
	t.Helper()
	var out []float64
	conv := func(n int, at func(int) float64) {
		for i := range n {
			out = append(out, at(i))
		}
	}
	var err error
	switch d {
	case Bool, U8:
		var v []uint8
		v, err = View[uint8](f, name)
		conv(len(v), func(i int) float64 { return float64(v[i]) })
	case I8:
		var v []int8
		v, err = View[int8](f, name)
		conv(len(v), func(i int) float64 { return float64(v[i]) })
	case U16, F16, BF16:
		var v []uint16
		v, err = View[uint16](f, name)
		conv(len(v), func(i int) float64 { return float64(v[i]) })
	case I16:
		var v []int16
		v, err = View[int16](f, name)
		conv(len(v), func(i int) float64 { return float64(v[i]) })
	case U32:
		var v []uint32
		v, err = View[uint32](f, name)
		conv(len(v), func(i int) float64 { return float64(v[i]) })
	case I32:
		var v []int32
		v, err = View[int32](f, name)
		conv(len(v), func(i int) float64 { return float64(v[i]) })
	case F32:
		var v []float32
		v, err = View[float32](f, name)
		conv(len(v), func(i int) float64 { return float64(v[i]) })
	case U64:
		var v []uint64
		v, err = View[uint64](f, name)
		conv(len(v), func(i int) float64 { return float64(v[i]) })
	case I64:
		var v []int64
		v, err = View[int64](f, name)
		conv(len(v), func(i int) float64 { return float64(v[i]) })
	case F64:
		var v []float64
		v, err = View[float64](f, name)
		conv(len(v), func(i int) float64 { return v[i] })
	}
	if err != nil {
		t.Fatalf("View %s: %v", name, err)
	}
	return out
}

func randomTensors(seed uint64) []Tensor {
	r := rand.New(rand.NewPCG(seed, 7))
	var ts []Tensor
	for i, d := range dtypes {
		shape := []int{1 + r.IntN(3), 1 + r.IntN(5)}
		data := make([]byte, shape[0]*shape[1]*d.Size())
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		if d == Bool {
			for j := range data {
				data[j] &= 1
			}
		}
		ts = append(ts, Tensor{Name: "t" + string(rune('a'+i)) + "." + string(d), DType: d, Shape: shape, Data: data})
	}
	ts = append(ts, Tensor{Name: "empty", DType: F32, Shape: []int{0, 4}, Data: nil},
		Tensor{Name: "scalar", DType: I64, Shape: []int{}, Data: make([]byte, 8)})
	return ts
}

func TestRoundTripEveryDType(t *testing.T) {
	tensors := randomTensors(1)
	path := filepath.Join(t.TempDir(), "rt.safetensors")
	md := map[string]string{"format": "pt", "z": "last", "a": "first"}
	if err := WriteSafetensors(path, md, tensors); err != nil {
		t.Fatal(err)
	}
	for _, mapped := range []bool{true, false} {
		f, err := OpenSafetensors(path)
		if err != nil {
			t.Fatal(err)
		}
		if !mapped { // exercise the ReadAt fallback on the same file
			unmapFile(f.m.data)
			f.m.data = nil
		}
		if f.Mapped() != mapped {
			t.Fatalf("Mapped() = %v, want %v", f.Mapped(), mapped)
		}
		if got := f.Metadata(); len(got) != 3 || got["z"] != "last" || got["a"] != "first" {
			t.Errorf("metadata = %v", got)
		}
		if len(f.Tensors()) != len(tensors) {
			t.Fatalf("%d tensors, want %d", len(f.Tensors()), len(tensors))
		}
		if (8+f.HeaderSize())%8 != 0 {
			t.Errorf("data section starts at %d, not 8-aligned", 8+f.HeaderSize())
		}
		for _, want := range tensors {
			info, ok := f.Tensor(want.Name)
			if !ok || info.DType != want.DType || !slices.Equal(info.Shape, want.Shape) {
				t.Fatalf("Tensor(%q) = %+v, %v", want.Name, info, ok)
			}
			if info.Offset%int64(want.DType.Size()) != 0 {
				t.Errorf("%s at offset %d is not aligned to %d", want.Name, info.Offset, want.DType.Size())
			}
			got, err := f.Bytes(want.Name)
			if err != nil || !bytes.Equal(got, want.Data) {
				t.Fatalf("Bytes(%q) = %x, %v; want %x", want.Name, got, err, want.Data)
			}
			view := viewAsFloat64(t, f, want.Name, want.DType)
			for i, v := range view {
				w := decodeLE(want.DType, want.Data, i)
				if v != w && !(math.IsNaN(v) && math.IsNaN(w)) {
					t.Fatalf("%s[%d] = %v, want %v", want.Name, i, v, w)
				}
			}
			if len(view)*want.DType.Size() != len(want.Data) {
				t.Fatalf("%s: view has %d elements for %d bytes", want.Name, len(view), len(want.Data))
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriterDeterministic(t *testing.T) {
	tensors := randomTensors(2)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.safetensors"), filepath.Join(dir, "b.safetensors")
	md := map[string]string{"k1": "v1", "k2": "v2", "k3": `quote " and <tag>`}
	if err := WriteSafetensors(a, md, tensors); err != nil {
		t.Fatal(err)
	}
	reversed := slices.Clone(tensors)
	slices.Reverse(reversed)
	if err := WriteSafetensors(b, md, reversed); err != nil {
		t.Fatal(err)
	}
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ba, bb) {
		t.Fatal("same tensors in a different order produced different files")
	}
	f, err := OpenSafetensors(a)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata()["k3"] != md["k3"] {
		t.Errorf("metadata escaping lost: %q", f.Metadata()["k3"])
	}
}

func TestStreamingWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.safetensors")
	specs := []Spec{{"big", F32, []int{4, 4}}, {"small", U8, []int{3}}}
	w, err := NewWriter(path, nil, specs)
	if err != nil {
		t.Fatal(err)
	}
	small := []byte{7, 8, 9}
	big := make([]byte, 64)
	for i := range big {
		big[i] = byte(i * 3)
	}
	// Out of declaration order and in chunks.
	for _, step := range []struct {
		name string
		p    []byte
	}{{"small", small}, {"big", big[:10]}, {"big", big[10:50]}, {"big", big[50:]}} {
		if err := w.Write(step.name, step.p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write("small", []byte{1}); err == nil || !strings.Contains(err.Error(), "exceed") {
		t.Errorf("overfull write: err = %v", err)
	}
	if err := w.Write("nope", nil); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("undeclared tensor: err = %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("file visible before Commit: %v", err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	f, err := OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, _ := f.Bytes("big"); !bytes.Equal(got, big) {
		t.Errorf("big = %x", got)
	}
	if got, _ := f.Bytes("small"); !bytes.Equal(got, small) {
		t.Errorf("small = %x", got)
	}
	assertOnlyFiles(t, dir, "s.safetensors")
}

func assertOnlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, names) {
		t.Errorf("directory holds %v, want %v (temporary file left behind?)", got, names)
	}
}

func TestWriterLosesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keep.safetensors")
	good := []Tensor{{Name: "x", DType: U8, Shape: []int{2}, Data: []byte{1, 2}}}
	if err := WriteSafetensors(path, nil, good); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	bad := []struct {
		name    string
		tensors []Tensor
		md      map[string]string
		want    string
	}{
		{"short data", []Tensor{{Name: "x", DType: F32, Shape: []int{2}, Data: []byte{1}}}, nil, "needs 8 bytes, data has 1"},
		{"duplicate", []Tensor{good[0], good[0]}, nil, "declared twice"},
		{"reserved name", []Tensor{{Name: "__metadata__", DType: U8, Shape: []int{0}}}, nil, "reserved"},
		{"unknown dtype", []Tensor{{Name: "x", DType: "F8", Shape: []int{1}, Data: []byte{0}}}, nil, `unknown dtype "F8"`},
		{"negative shape", []Tensor{{Name: "x", DType: U8, Shape: []int{-1}}}, nil, "negative"},
		{"bad utf-8 name", []Tensor{{Name: "x\xff", DType: U8, Shape: []int{0}}}, nil, "UTF-8"},
		{"bad utf-8 metadata", good, map[string]string{"k": "\xfe"}, "UTF-8"},
	}
	for _, c := range bad {
		err := WriteSafetensors(path, c.md, c.tensors)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	w, err := NewWriter(path, nil, []Spec{{"x", U8, []int{4}}})
	if err != nil {
		t.Fatal(err)
	}
	w.Write("x", []byte{9})
	if err := w.Commit(); err == nil || !strings.Contains(err.Error(), "has 1 of its 4 bytes") {
		t.Errorf("incomplete commit: err = %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("a failed write changed the existing file")
	}
	assertOnlyFiles(t, dir, "keep.safetensors")
}

// TestValidationRules has one case per rule (several for the rules with
// several ways to break them); each asserts the error names its rule.
func TestValidationRules(t *testing.T) {
	entry := func(name, dtype, shape string, b, e int) string {
		return `"` + name + `":{"dtype":"` + dtype + `","shape":` + shape + `,"data_offsets":[` + strconv.Itoa(b) + `,` + strconv.Itoa(e) + `]}`
	}
	hugeLen := make([]byte, 16)
	binary.LittleEndian.PutUint64(hugeLen, 100<<20+1)
	pastEOF := make([]byte, 16)
	binary.LittleEndian.PutUint64(pastEOF, 9)
	cases := []struct {
		name string
		file []byte
		rule string
		msg  string // a fragment the message must contain
	}{
		{"file shorter than 8 bytes", []byte{1, 2, 3}, RuleHeaderLength, "shorter than the 8-byte"},
		{"header length over 100 MiB", hugeLen, RuleHeaderLength, "exceeds"},
		{"header length past end of file", pastEOF, RuleHeaderLength, "past the end"},
		{"invalid UTF-8", rawFile("{\"a\xff\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0), RuleHeaderUTF8, "UTF-8"},
		{"not an object", rawFile(`[1,2]`, 0), RuleHeaderJSON, "start with '{'"},
		{"leading whitespace", rawFile(` {}`, 0), RuleHeaderJSON, "start with '{'"},
		{"empty header", rawFile(``, 0), RuleHeaderJSON, "start with '{'"},
		{"object then garbage", rawFile(`{"a":}`, 0), RuleHeaderJSON, "invalid JSON"},
		{"truncated JSON", rawFile(`{"a":{"dtype":"U8"`, 0), RuleHeaderJSON, ""},
		{"trailing JSON", rawFile(`{}{}`, 0), RuleHeaderJSON, "after the header"},
		{"NUL after the object", rawFile("{}  \x00", 0), RuleHeaderJSON, "after the header"},
		{"duplicate tensor", rawFile(`{`+entry("a", "U8", "[1]", 0, 1)+`,`+entry("a", "U8", "[1]", 1, 2)+`}`, 2), RuleDuplicateKey, `"a" appears twice`},
		{"duplicate metadata key", rawFile(`{"__metadata__":{"k":"1","k":"2"}}`, 0), RuleDuplicateKey, `"k"`},
		{"duplicate entry field", rawFile(`{"a":{"dtype":"U8","dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, 0), RuleDuplicateKey, `"dtype"`},
		{"metadata value not a string", rawFile(`{"__metadata__":{"k":1}}`, 0), RuleMetadata, `__metadata__["k"] is number 1`},
		{"metadata not an object", rawFile(`{"__metadata__":["k"]}`, 0), RuleMetadata, ""},
		{"entry missing data_offsets", rawFile(`{"a":{"dtype":"U8","shape":[0]}}`, 0), RuleEntry, "missing data_offsets"},
		{"entry unknown field", rawFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":1}}`, 0), RuleEntry, `unknown field "x"`},
		{"entry not an object", rawFile(`{"a":3}`, 0), RuleEntry, `tensor "a"`},
		{"three data_offsets", rawFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0,0]}}`, 0), RuleEntry, "3 entries"},
		{"unknown dtype", rawFile(`{`+entry("a", "F8", "[1]", 0, 1)+`}`, 1), RuleDType, `unknown dtype "F8"`},
		{"negative shape", rawFile(`{`+entry("a", "U8", "[-1]", 0, 1)+`}`, 1), RuleShape, "negative"},
		{"fractional shape", rawFile(`{`+entry("a", "U8", "[1.5]", 0, 1)+`}`, 1), RuleShape, "not an integer"},
		{"shape beyond int64", rawFile(`{`+entry("a", "U8", "[99999999999999999999]", 0, 1)+`}`, 1), RuleShape, "fits in 64 bits"},
		{"shape/offsets mismatch", rawFile(`{`+entry("a", "F32", "[2]", 0, 4)+`}`, 4), RuleSpan, "8 bytes but data_offsets span 4"},
		{"shape product overflows", rawFile(`{`+entry("a", "F32", "[4611686018427387904,8]", 0, 0)+`}`, 0), RuleSpan, "overflows"},
		{"offsets overlap", rawFile(`{`+entry("a", "U8", "[4]", 0, 4)+`,`+entry("b", "U8", "[4]", 2, 6)+`}`, 6), RuleOffsetsOrder, "overlapping"},
		{"offsets gap", rawFile(`{`+entry("a", "U8", "[2]", 0, 2)+`,`+entry("b", "U8", "[2]", 4, 6)+`}`, 6), RuleOffsetsOrder, "gap"},
		{"first tensor not at 0", rawFile(`{`+entry("a", "U8", "[2]", 2, 4)+`}`, 4), RuleOffsetsOrder, "starts at 2"},
		{"offsets backwards", rawFile(`{`+entry("a", "U8", "[0]", 4, 2)+`}`, 4), RuleOffsetsOrder, "backwards"},
		{"offsets past the file", rawFile(`{`+entry("a", "U8", "[8]", 0, 8)+`}`, 4), RuleOffsetsInFile, "ends at byte 8 of a 4-byte"},
		{"trailing data bytes", rawFile(`{`+entry("a", "U8", "[2]", 0, 2)+`}`, 5), RuleFileSize, "trailing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeTemp(t, "bad.safetensors", c.file)
			f, err := OpenSafetensors(path)
			if err == nil {
				f.Close()
				t.Fatal("opened a malformed file")
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Rule != c.rule {
				t.Fatalf("err = %v, want rule %q", err, c.rule)
			}
			msg := err.Error()
			if !strings.Contains(fe.Msg, c.msg) || msg != path+": "+c.rule+": "+fe.Msg || strings.Contains(msg, "\n") {
				t.Fatalf("message %q should be one line naming the file, rule %q and %q", msg, c.rule, c.msg)
			}
		})
	}
}
