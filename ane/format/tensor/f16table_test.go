package tensor

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/half"
)

// TestF16Table: an FP16 .npy opens in place and reads back row by row; a
// table of another dtype or shape, or bytes that do not fill the shape,
// are refused naming what is wrong.
func TestF16Table(t *testing.T) {
	dir := t.TempDir()
	vals := []float32{0, 1, -2, 0.5, 3, -0.25}
	data := make([]byte, 2*len(vals))
	for i, v := range vals {
		h := half.F16(v)
		data[2*i], data[2*i+1] = byte(h), byte(h>>8)
	}
	p := filepath.Join(dir, EmbeddingNPY)
	if err := WriteNPY(p, "<f2", []int{3, 2}, data); err != nil {
		t.Fatal(err)
	}
	tab, err := OpenF16Table(p, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	row := make([]float32, 2)
	for r := range 3 {
		tab.Row(r, row)
		if row[0] != vals[2*r] || row[1] != vals[2*r+1] {
			t.Errorf("row %d = %v, want %v", r, row, vals[2*r:2*r+2])
		}
	}
	if tab.Rows() != 3 || tab.Cols() != 2 || tab.Bytes() != 12 {
		t.Errorf("table %d×%d, %d bytes", tab.Rows(), tab.Cols(), tab.Bytes())
	}
	if _, err := OpenF16Table(p, 2, 3); err == nil || !strings.Contains(err.Error(), "want <f2 [2 3]") {
		t.Errorf("wrong shape: %v", err)
	}
	f4 := filepath.Join(dir, "f4.npy")
	if err := WriteNPY(f4, "<f4", []int{3}, make([]byte, 12)); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenF16Table(f4); err == nil || !strings.Contains(err.Error(), "<f4 [3], want <f2 (rows, cols)") {
		t.Errorf("float32 vector: %v", err)
	}
	if _, err := NewF16Table(3, 2, data[:10]); err == nil || !strings.Contains(err.Error(), "10 bytes for 3×2") {
		t.Errorf("short data: %v", err)
	}
}
