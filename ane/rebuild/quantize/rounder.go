package quantize

import (
	"fmt"
	"math"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/qformat"
)

// FitOptions tune codebook fitting.
type FitOptions struct {
	// ColumnWeights (len Cin) weight every element of input column j in the
	// k-means objective; AW=1 passes diag(H). Nil weighs all equally.
	ColumnWeights []float64
	// Seed seeds the sampling and k-means++ initialisation.
	Seed uint64
}

// Rounder maps weights to the nearest value a format can store. It is
// fitted once on the whole matrix (the codebook and per-row scales) and then
// rounds any column, which is what GPTQ needs.
type Rounder struct {
	Name       string // the matrix, for errors
	Spec       qformat.Format
	Rows, Cols int
	// Scale is the per-output-row scale (pcs or INT8), fp16-exact; nil if
	// the format has none.
	Scale []float32
	// LUT holds the codebooks, fp16-exact: Groups() codebooks of K entries
	// of CD values each, entry-major.
	LUT []float32
	K   int
	CD  int
}

// Groups is how many scalar codebooks the rounder holds (1 unless per-group).
func (r *Rounder) Groups() int {
	if r.Spec.GroupRows > 0 {
		return r.Rows / r.Spec.GroupRows
	}
	return 1
}

// Fit builds the rounder of format for the rows×cols matrix w called name.
func Fit(name string, w []float32, rows, cols int, format string, opts FitOptions) (*Rounder, error) {
	spec, err := qformat.LookupQuantizer(format)
	if err != nil {
		return nil, fmt.Errorf("matrix %s: %w", name, err)
	}
	if err := checkMatrix(name, w, rows, cols); err != nil {
		return nil, err
	}
	if opts.ColumnWeights != nil {
		if len(opts.ColumnWeights) != cols {
			return nil, fmt.Errorf("matrix %s: %d column weights for %d input columns", name, len(opts.ColumnWeights), cols)
		}
		for j, v := range opts.ColumnWeights {
			if !(v >= 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("matrix %s: column weight %d is %v (must be finite and ≥ 0)", name, j, v)
			}
		}
	}
	r := &Rounder{Name: name, Spec: spec, Rows: rows, Cols: cols, CD: max(spec.CD, 1)}
	if rows%r.CD != 0 {
		return nil, fmt.Errorf("matrix %s: %d output rows are not divisible by the vector length %d of %q", name, rows, r.CD, format)
	}
	if spec.GroupRows > 0 && rows%spec.GroupRows != 0 {
		return nil, fmt.Errorf("matrix %s: %d output rows are not divisible by the group size %d of %q", name, rows, spec.GroupRows, format)
	}
	switch spec.Kind {
	case qformat.KindDense:
		c := make([]float64, 1)
		for i, v := range w {
			c[0] = float64(v)
			r.roundGroup(c, 1, 0, 0)
			if math.IsInf(c[0], 0) {
				return nil, fmt.Errorf("matrix %s: weight at row %d, column %d (%g) overflows %s", name, i/cols, i%cols, v, format)
			}
		}
		return r, nil
	case qformat.KindInt8:
		r.Scale, err = int8Scales(name, w, rows, cols)
		return r, err
	}
	wn := w
	if spec.Scaled {
		if r.Scale, err = rmsScales(name, w, rows, cols); err != nil {
			return nil, err
		}
		wn = make([]float32, len(w))
		for i := 0; i < rows; i++ {
			s := r.Scale[i]
			for j := 0; j < cols; j++ {
				wn[i*cols+j] = w[i*cols+j] / s
			}
		}
	}
	r.K = spec.Entries
	if r.CD == 1 {
		r.LUT = fitScalar(wn, rows, cols, max(spec.GroupRows, 0), r.K, opts)
	} else {
		r.LUT = fitVector(wn, rows, cols, r.CD, r.K, opts)
	}
	if spec.FP8LUT {
		snapFP8(r.LUT)
	}
	roundF16(r.LUT)
	for _, c := range r.LUT {
		if math.IsInf(float64(c), 0) {
			return nil, fmt.Errorf("matrix %s: a codebook entry (%g before rounding) overflows fp16; %q has no per-channel scale for weights this large", name, maxAbs(wn), format)
		}
	}
	return r, nil
}

func checkMatrix(name string, w []float32, rows, cols int) error {
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("matrix %s: dimensions %d×%d must be positive", name, rows, cols)
	}
	if len(w) != rows*cols {
		return fmt.Errorf("matrix %s: %d values for %d×%d", name, len(w), rows, cols)
	}
	for i, v := range w {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("matrix %s: weight at row %d, column %d is %v", name, i/cols, i%cols, v)
		}
	}
	return nil
}

// rmsScales is pcs: the row RMS rounded through fp16, zeros → 1.
func rmsScales(name string, w []float32, rows, cols int) ([]float32, error) {
	s := make([]float32, rows)
	for i := range s {
		var ss float64
		for _, v := range w[i*cols : (i+1)*cols] {
			ss += float64(v) * float64(v)
		}
		v, err := f16Scale(name, i, math.Sqrt(ss/float64(cols)))
		if err != nil {
			return nil, err
		}
		s[i] = v
	}
	return s, nil
}

// int8Scales is max|w|/127 per row (at least 1e-12) rounded through fp16.
// A row whose scale rounds to fp16 zero gets 1 (its codes are all zero);
// the published code divides by that zero.
func int8Scales(name string, w []float32, rows, cols int) ([]float32, error) {
	s := make([]float32, rows)
	for i := range s {
		var m float64
		for _, v := range w[i*cols : (i+1)*cols] {
			m = math.Max(m, math.Abs(float64(v)))
		}
		v, err := f16Scale(name, i, math.Max(m/127, 1e-12))
		if err != nil {
			return nil, err
		}
		s[i] = v
	}
	return s, nil
}

func f16Scale(name string, row int, v float64) (float32, error) {
	f := half.F16Float(half.F16(float32(v)))
	if math.IsInf(float64(f), 0) {
		return 0, fmt.Errorf("matrix %s: row %d scale %g overflows fp16", name, row, v)
	}
	if f == 0 {
		return 1, nil
	}
	return f, nil
}

func roundF16(x []float32) {
	for i, v := range x {
		x[i] = half.F16Float(half.F16(v))
	}
}

// Round rounds column j of the matrix (Rows values, one per output row) in
// place. j does not change the result for the formats here (codebooks and
// scales are per tensor, row group or row); it is part of the column-rounder
// contract GPTQ uses.
func (r *Rounder) Round(col []float32, j int) {
	c := make([]float64, len(col))
	for i, v := range col {
		c[i] = float64(v)
	}
	r.Round64(c, j)
	for i, v := range c {
		col[i] = float32(v)
	}
}

// Round64 is Round on float64 values, as GPTQ uses it.
func (r *Rounder) Round64(col []float64, j int) {
	if len(col) != r.Rows {
		panic(fmt.Sprintf("quantize: matrix %s: column of %d values, want %d", r.Name, len(col), r.Rows))
	}
	for g := 0; g < r.Rows/r.CD; g++ {
		r.roundGroup(col, 1, 0, g)
	}
}

// roundGroup rounds the CD rows of group g at one column of a row-major
// buffer: row i's value is buf[i*ld+off]. The result is exactly the float32
// value the stored format decodes to.
func (r *Rounder) roundGroup(buf []float64, ld, off, g int) {
	switch r.Spec.Kind {
	case qformat.KindDense:
		p := &buf[g*ld+off]
		if r.Spec.Name == "bf16" {
			*p = float64(half.BF16Float(half.BF16(float32(*p))))
		} else {
			*p = float64(half.F16Float(half.F16(float32(*p))))
		}
	case qformat.KindInt8:
		p, s := &buf[g*ld+off], float64(r.Scale[g])
		c := math.Max(-127, math.Min(127, math.RoundToEven(*p/s)))
		if c == 0 {
			c = 0 // no −0: the int8 code decodes to +0
		}
		*p = c * s
	default:
		var v [4]float64
		row0 := g * r.CD
		for t := 0; t < r.CD; t++ {
			v[t] = buf[(row0+t)*ld+off]
			if r.Scale != nil {
				v[t] /= float64(r.Scale[row0+t])
			}
		}
		book := r.LUT
		if r.Spec.GroupRows > 0 {
			b := row0 / r.Spec.GroupRows * r.K
			book = r.LUT[b : b+r.K]
		}
		e := nearest(book, r.CD, v[:r.CD])
		for t := 0; t < r.CD; t++ {
			q := float64(book[e*r.CD+t])
			if r.Scale != nil {
				q *= float64(r.Scale[row0+t])
			}
			buf[(row0+t)*ld+off] = q
		}
	}
}

// nearest is the index of the codebook entry closest to v (squared
// Euclidean distance; the first of equals, as argmin).
func nearest(book []float32, cd int, v []float64) int {
	best, bestD := 0, math.Inf(1)
	for e := 0; e < len(book)/cd; e++ {
		var d float64
		for t, x := range v {
			diff := x - float64(book[e*cd+t])
			d += diff * diff
		}
		if d < bestD {
			best, bestD = e, d
		}
	}
	return best
}

func maxAbs(w []float32) float64 {
	var m float64
	for _, v := range w {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}
