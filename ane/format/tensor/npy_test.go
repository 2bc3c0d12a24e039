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
	"strings"
	"testing"
)

// numpyF4 is what np.save writes for np.arange(6, dtype='<f4').reshape(2, 3):
// version 1.0, header length 0x76 so the data starts at byte 128.
func numpyF4() []byte {
	dict := "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
	b := append([]byte("\x93NUMPY\x01\x00\x76\x00"), dict...)
	b = append(b, bytes.Repeat([]byte(" "), 128-10-len(dict)-1)...)
	b = append(b, '\n')
	for i := range 6 {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(i)))
	}
	return b
}

func TestNPYKnownBytes(t *testing.T) {
	path := writeTemp(t, "a.npy", numpyF4())
	f, err := OpenNPY(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := f.Header()
	if h.Major != 1 || h.Minor != 0 || h.Descr != "<f4" || h.FortranOrder || !slices.Equal(h.Shape, []int{2, 3}) || h.DataOffset != 128 {
		t.Fatalf("header = %+v", h)
	}
	row, err := f.Row(1)
	if err != nil {
		t.Fatal(err)
	}
	for j, want := range []float32{3, 4, 5} {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(row[4*j:])); got != want {
			t.Errorf("row 1 [%d] = %v, want %v", j, got, want)
		}
	}
	typed, err := NPYRow[float32](f, 1)
	if err != nil || !slices.Equal(typed, []float32{3, 4, 5}) {
		t.Errorf("NPYRow[float32](1) = %v, %v", typed, err)
	}
	if _, err := NPYRow[uint16](f, 0); err == nil || !strings.Contains(err.Error(), "<f4") {
		t.Errorf("NPYRow[uint16] of <f4: err = %v", err)
	}
	if _, err := f.Row(2); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("Row(2): err = %v", err)
	}
	if len(f.Data()) != 24 {
		t.Errorf("Data has %d bytes", len(f.Data()))
	}
	// Our writer produces NumPy's bytes exactly.
	out := filepath.Join(t.TempDir(), "b.npy")
	if err := WriteNPY(out, "<f4", []int{2, 3}, numpyF4()[128:]); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, numpyF4()) {
		t.Errorf("WriteNPY wrote\n%q\nwant\n%q", got, numpyF4())
	}
}

func TestNPYRoundTripEveryDType(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	dir := t.TempDir()
	shapes := [][]int{{5, 3}, {7}, {}, {0, 4}, {2, 3, 4}}
	for descr, size := range npyItemSizes {
		for _, shape := range shapes {
			n, _ := byteSize(shape, size)
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			path := filepath.Join(dir, "x.npy")
			if err := WriteNPY(path, descr, shape, data); err != nil {
				t.Fatal(err)
			}
			for _, mapped := range []bool{true, false} {
				f, err := OpenNPY(path)
				if err != nil {
					t.Fatalf("%s %v: %v", descr, shape, err)
				}
				if !mapped && f.m.data != nil {
					unmapFile(f.m.data)
					f.m.data = nil
				}
				h := f.Header()
				if h.Descr != descr || !slices.Equal(h.Shape, shape) || h.DataOffset%64 != 0 {
					t.Fatalf("header %+v for %s %v", h, descr, shape)
				}
				if !bytes.Equal(f.Data(), data) {
					t.Fatalf("%s %v: data differs", descr, shape)
				}
				if len(shape) > 0 && shape[0] > 0 {
					last := shape[0] - 1
					row, err := f.Row(last)
					rowLen := len(data) / shape[0]
					if err != nil || !bytes.Equal(row, data[last*rowLen:]) {
						t.Fatalf("%s %v: Row(%d) = %x, %v", descr, shape, last, row, err)
					}
				}
				f.Close()
			}
		}
	}
}

// npyFile builds a file with the given version and dict text (padding and
// newline added) followed by dataLen bytes.
func npyFile(major byte, dict string, dataLen int) []byte {
	text := dict + "\n"
	b := append([]byte("\x93NUMPY"), major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(text)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(text)))
	}
	b = append(b, text...)
	return append(b, make([]byte, dataLen)...)
}

func TestNPYVersions2And3(t *testing.T) {
	for _, major := range []byte{2, 3} {
		dict := "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"
		if major == 3 {
			dict = "{\"descr\": \"|u1\", \"shape\": (3,) , \"fortran_order\": False}  "
		}
		f, err := OpenNPY(writeTemp(t, "v.npy", npyFile(major, dict, 3)))
		if err != nil {
			t.Fatalf("version %d: %v", major, err)
		}
		if h := f.Header(); h.Major != int(major) || h.DataOffset != int64(12+len(dict)+1) || !slices.Equal(h.Shape, []int{3}) {
			t.Errorf("version %d header %+v", major, h)
		}
		f.Close()
	}
}

func TestReadNPYHeaderLeavesReaderAtData(t *testing.T) {
	r := bytes.NewReader(numpyF4())
	h, err := ReadNPYHeader(r)
	if err != nil || h.DataSize() != 24 {
		t.Fatalf("%+v, %v", h, err)
	}
	if r.Len() != 24 {
		t.Errorf("reader has %d bytes left, want the 24 data bytes", r.Len())
	}
}

func TestNPYValidationRules(t *testing.T) {
	ok := "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 2), }"
	with := func(old, new string) string { return strings.Replace(ok, old, new, 1) }
	long := npyFile(2, "{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }"+strings.Repeat(" ", MaxNPYHeaderSize), 1)
	cases := []struct {
		name string
		file []byte
		rule string
		msg  string
	}{
		{"short file", []byte("\x93NUM"), RuleNPYMagic, "too short"},
		{"bad magic", npyFile(1, ok, 8)[1:], RuleNPYMagic, "magic"},
		{"version 4", npyFile(4, ok, 8), RuleNPYMagic, "4.0"},
		{"header over 64 KiB", long, RuleNPYHeader, "exceeds"},
		{"truncated header", npyFile(1, ok, 0)[:40], RuleNPYHeader, "ends inside"},
		{"no newline", bytes.Replace(npyFile(1, ok, 8), []byte("}\n"), []byte("} "), 1), RuleNPYHeader, "newline"},
		{"fortran order", npyFile(1, with("False", "True"), 8), RuleNPYOrder, "only C-order"},
		{"big-endian dtype", npyFile(1, with("<f2", ">f2"), 8), RuleNPYDescr, `">f2"`},
		{"object dtype", npyFile(1, with("<f2", "|O"), 8), RuleNPYDescr, "not supported"},
		{"negative shape", npyFile(1, with("(2, 2)", "(-2, 2)"), 8), RuleNPYShape, "negative"},
		{"shape not a tuple", npyFile(1, with("(2, 2)", "[2, 2]"), 8), RuleNPYShape, "tuple"},
		{"(n) without comma", npyFile(1, with("(2, 2)", "(4)"), 8), RuleNPYShape, "(n,)"},
		{"shape overflows", npyFile(1, with("(2, 2)", "(9223372036854775807, 4)"), 8), RuleNPYShape, "overflows"},
		{"shape too big for int64", npyFile(1, with("(2, 2)", "(99999999999999999999,)"), 8), RuleNPYShape, "not a valid integer"},
		{"missing key", npyFile(1, "{'descr': '<f2', 'shape': (2, 2)}", 8), RuleNPYHeader, `missing key "fortran_order"`},
		{"extra key", npyFile(1, with("}", "'x': 1}"), 8), RuleNPYHeader, `unexpected key "x"`},
		{"duplicate key", npyFile(1, with("}", "'descr': '<f2'}"), 8), RuleNPYHeader, "twice"},
		{"garbage after dict", npyFile(1, ok+"x", 8), RuleNPYHeader, "after the header dict"},
		{"bad fortran value", npyFile(1, with("False", "0"), 8), RuleNPYHeader, "True or False"},
		{"v3 invalid UTF-8", npyFile(3, ok+"\xff", 8), RuleNPYHeader, "UTF-8"},
		{"data too short", npyFile(1, ok, 7), RuleNPYSize, "file is"},
		{"data too long", npyFile(1, ok, 9), RuleNPYSize, "file is"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeTemp(t, "bad.npy", c.file)
			f, err := OpenNPY(path)
			if err == nil {
				f.Close()
				t.Fatal("opened a malformed file")
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Rule != c.rule {
				t.Fatalf("err = %v, want rule %q", err, c.rule)
			}
			if msg := err.Error(); !strings.Contains(fe.Msg, c.msg) || msg != path+": "+c.rule+": "+fe.Msg {
				t.Fatalf("message %q should name the file, rule %q and %q", msg, c.rule, c.msg)
			}
		})
	}
}

func TestNPYWriterStreams(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "embed.npy")
	w, err := NewNPYWriter(path, "<f2", []int{3, 4})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 24)
	for i := range want {
		want[i] = byte(i + 1)
	}
	for row := range 3 { // one row at a time, as a converter would
		if _, err := w.Write(want[row*8 : row*8+8]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Write([]byte{1}); err == nil || !strings.Contains(err.Error(), "exceed") {
		t.Errorf("overfull write: err = %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("file visible before Commit")
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	f, err := OpenNPY(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !bytes.Equal(f.Data(), want) {
		t.Errorf("data = %v", f.Data())
	}
	// An incomplete stream leaves the committed file untouched.
	w, _ = NewNPYWriter(path, "<f2", []int{3, 4})
	w.Write([]byte{9, 9})
	if err := w.Commit(); err == nil || !strings.Contains(err.Error(), "2 of 24 data bytes") {
		t.Errorf("incomplete commit: err = %v", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got[len(got)-24:], want) {
		t.Error("a failed stream changed the existing file")
	}
	assertOnlyFiles(t, dir, "embed.npy")
}

func TestWriteNPYRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "e.npy")
	for _, c := range []struct {
		descr string
		shape []int
		data  []byte
		want  string
	}{
		{"<f8", []int{1}, make([]byte, 8), "not supported"},
		{"<f2", []int{3}, make([]byte, 4), "needs 6 bytes, data has 4"},
		{"|u1", []int{-1}, nil, "negative"},
	} {
		if err := WriteNPY(path, c.descr, c.shape, c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("WriteNPY(%s, %v): err = %v, want %q", c.descr, c.shape, err, c.want)
		}
	}
	assertOnlyFiles(t, dir)
}

// FuzzNPYHeader: any input is rejected or yields a header our writer can
// re-encode into one that parses back the same.
func FuzzNPYHeader(f *testing.F) {
	f.Add(numpyF4())
	f.Add(npyFile(3, "{'descr': '|i1', 'fortran_order': False, 'shape': ()}", 1))
	f.Add(npyFile(2, "{'descr': '<i8', 'fortran_order': True, 'shape': (1,)}", 8))
	f.Add(npyFile(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (9223372036854775807, 9223372036854775807)}", 0))
	f.Add(npyFile(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (-1,)}", 0))
	f.Add(npyFile(1, "{'descr': '<f2'"+strings.Repeat("{", 5000), 0))
	f.Add(npyFile(3, "{'descr': '\xff\xfe', 'fortran_order': False, 'shape': (1,)}", 0))
	f.Add([]byte("\x93NUMPY\x02\x00\xff\xff\xff\xff"))
	f.Add(numpyF4()[:50])
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadNPYHeader(bytes.NewReader(data))
		if err != nil {
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if h.FortranOrder || h.ItemSize() == 0 || h.DataOffset > int64(len(data)) {
			t.Fatalf("accepted invalid header %+v", h)
		}
		back, err := ReadNPYHeader(bytes.NewReader(encodeNPYHeader(h.Descr, h.Shape)))
		if err != nil || back.Descr != h.Descr || !slices.Equal(back.Shape, h.Shape) {
			t.Fatalf("re-encoded header %+v, %v; want %+v", back, err, h)
		}
	})
}
