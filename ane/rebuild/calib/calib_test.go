package calib

import (
	"encoding/binary"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/tensor"
)

func TestMixAndCut(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.npy")
	if err := WriteRows(a, [][]int{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}); err != nil {
		t.Fatal(err)
	}
	// A 1-D int64 stream of ids, cut into rows of --seq.
	b := filepath.Join(dir, "b.npy")
	var data []byte
	for i := 0; i < 10; i++ {
		data = binary.LittleEndian.AppendUint64(data, uint64(100+i))
	}
	if err := tensor.WriteNPY(b, "<i8", []int{10}, data); err != nil {
		t.Fatal(err)
	}
	srcs, err := ParseSpec(a + ":2," + b + ":2")
	if err != nil {
		t.Fatal(err)
	}
	set, err := Load(srcs, 3, 200)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{1, 2, 3}, {5, 6, 7}, {100, 101, 102}, {103, 104, 105}}
	if !slices.EqualFunc(set.Rows, want, slices.Equal) || set.Seq != 3 || len(set.Hash) != 64 {
		t.Errorf("rows %v seq %d", set.Rows, set.Seq)
	}
	other, _ := Load([]Source{{Path: a, Rows: 2}, {Path: b, Rows: 2}}, 3, 200)
	swapped, _ := Load([]Source{{Path: b, Rows: 2}, {Path: a, Rows: 2}}, 3, 200)
	if other.Hash != set.Hash || swapped.Hash == set.Hash {
		t.Error("the hash does not identify the rows in order")
	}
	// Rows default to the first source's length.
	all, err := Load([]Source{{Path: a}}, 0, 200)
	if err != nil || all.Seq != 4 || len(all.Rows) != 3 {
		t.Errorf("all rows: %v %v", all, err)
	}
}

func TestBadCalibration(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.npy")
	WriteRows(a, [][]int{{1, 2, 3, 4}, {5, 6, 7, 600}})
	f := filepath.Join(dir, "f.npy")
	tensor.WriteNPY(f, "<f4", []int{2}, make([]byte, 8))
	cases := []struct {
		srcs []Source
		seq  int
		want string
	}{
		{[]Source{{Path: a}}, 0, "row 1, position 3: token id 600 is out of range [0, 512)"},
		{[]Source{{Path: a, Rows: 3}}, 0, "3 rows requested, the array has 2"},
		{[]Source{{Path: a}}, 5, "shorter than --seq 5"},
		{[]Source{{Path: f}}, 2, "not an integer token array"},
		{[]Source{{Path: filepath.Join(dir, "none.npy")}}, 2, "none.npy"},
		{nil, 2, "no sources"},
	}
	for _, c := range cases {
		if _, err := Load(c.srcs, c.seq, 512); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.srcs, err, c.want)
		}
	}
	for _, spec := range []string{"a.npy:0", "a.npy:x", "a.npy,,b.npy"} {
		if _, err := ParseSpec(spec); err == nil {
			t.Errorf("spec %q accepted", spec)
		}
	}
}
