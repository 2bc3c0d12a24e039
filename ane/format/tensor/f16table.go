package tensor

import (
	"fmt"
	"slices"

	"github.com/forgedaemon/forged/ane/format/half"
)

// EmbeddingNPY is the FP16 embedding table of a bundle's model/ (and of an
// export directory that carries one): (vocab, hidden) little-endian fp16
// in C order.
const EmbeddingNPY = "embed_tokens_fp16.npy"

// F16Table is a row-major FP16 (rows, cols) table read in place — the
// embedding table both engines take their input rows from.
type F16Table struct {
	rows, cols int
	w          []uint16
	npy        *NPYFile // the mapping it reads, when opened from a file
}

// NewF16Table wraps rows×cols fp16 values held in data (little-endian).
func NewF16Table(rows, cols int, data []byte) (*F16Table, error) {
	if rows <= 0 || cols <= 0 || len(data) != rows*cols*2 {
		return nil, fmt.Errorf("FP16 table: %d bytes for %d×%d", len(data), rows, cols)
	}
	return &F16Table{rows: rows, cols: cols, w: half.View(data)}, nil
}

// OpenF16Table memory-maps an .npy file holding an FP16 table, checking its
// header (<f2, two dimensions, C order; shape, if given, must match).
func OpenF16Table(path string, shape ...int) (*F16Table, error) {
	f, err := OpenNPY(path)
	if err != nil {
		return nil, err
	}
	h := f.Header()
	if h.Descr != "<f2" || len(h.Shape) != 2 || h.FortranOrder || len(shape) > 0 && !slices.Equal(h.Shape, shape) {
		f.Close()
		want := "(rows, cols)"
		if len(shape) > 0 {
			want = fmt.Sprint(shape)
		}
		return nil, fmt.Errorf("%s: %s %v, want <f2 %s in C order", path, h.Descr, h.Shape, want)
	}
	t, err := NewF16Table(h.Shape[0], h.Shape[1], f.Data())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.npy = f
	return t, nil
}

// Rows, Cols and Bytes describe the table.
func (t *F16Table) Rows() int    { return t.rows }
func (t *F16Table) Cols() int    { return t.cols }
func (t *F16Table) Bytes() int64 { return int64(len(t.w)) * 2 }

// Row writes row id as float32 into dst (len ≥ Cols).
func (t *F16Table) Row(id int, dst []float32) {
	half.F16ToF32(dst, t.w[id*t.cols:(id+1)*t.cols])
}

// Close unmaps the file the table was opened from (nothing otherwise).
func (t *F16Table) Close() error {
	if t.npy == nil {
		return nil
	}
	return t.npy.Close()
}
