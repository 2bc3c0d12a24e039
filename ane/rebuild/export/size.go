package export

import (
	"fmt"
	"math/bits"

	"github.com/forgedaemon/forged/ane/format/qformat"
)

// Size is what one matrix costs in a format.
type Size struct {
	Weights int64 // Rows×Cols
	// ExportBytes is the tensor data in the export file, where every index
	// takes a whole byte (the export is not bit-packed).
	ExportBytes int64
	// PackedBytes counts each index at ceil(log2 entries) bits, INT8 codes
	// at one byte, FP16/BF16 values at two: the realised size the KL
	// evaluator reports (size_gib) and the basis of bits per weight.
	PackedBytes int64
}

// BitsPerWeight is the realised bits per weight: indices + LUT + scales +
// low-rank factors, over Rows×Cols.
func (s Size) BitsPerWeight() float64 {
	if s.Weights == 0 {
		return 0
	}
	return 8 * float64(s.PackedBytes) / float64(s.Weights)
}

// Add sums sizes.
func (s Size) Add(o Size) Size {
	return Size{s.Weights + o.Weights, s.ExportBytes + o.ExportBytes, s.PackedBytes + o.PackedBytes}
}

// MatrixSize is the size of a rows×cols matrix stored in format with
// rank-r low-rank factors (r = 0 for none). A shape the format cannot take
// is an error naming the matrix: nothing is ever skipped silently.
func MatrixSize(name, format string, rows, cols, rank int) (Size, error) {
	f, err := qformat.Lookup(format)
	if err != nil {
		return Size{}, fmt.Errorf("%s: %w", name, err)
	}
	if rows <= 0 || cols <= 0 {
		return Size{}, fmt.Errorf("%s: dimensions %d×%d must be positive", name, rows, cols)
	}
	n := int64(rows) * int64(cols)
	s := Size{Weights: n}
	switch f.Kind {
	case qformat.KindDense:
		s.ExportBytes, s.PackedBytes = 2*n, 2*n
	case qformat.KindInt8:
		s.ExportBytes, s.PackedBytes = n+2*int64(rows), n+2*int64(rows)
	case qformat.KindLUT:
		if rows%f.CD != 0 {
			return Size{}, fmt.Errorf("%s: format %q pairs %d output rows per index, and %d rows are not divisible by %d",
				name, format, f.CD, rows, f.CD)
		}
		idx := n / int64(f.CD)
		idxBits := int64(bits.Len(uint(f.Entries - 1)))
		side := 2 * int64(f.Entries*f.CD)
		if f.Scaled {
			side += 2 * int64(rows)
		}
		s.ExportBytes = idx + side
		s.PackedBytes = (idx*idxBits+7)/8 + side
	}
	if rank > 0 {
		lr := 2 * int64(rank) * int64(rows+cols)
		s.ExportBytes += lr
		s.PackedBytes += lr
	}
	return s, nil
}

// DataBytes sums the tensor data a Matrix holds (what MatrixSize predicts
// as ExportBytes).
func (m *Matrix) DataBytes() int64 {
	var n int64
	for _, t := range m.Tensors() {
		n += int64(len(t.Data))
	}
	return n
}
