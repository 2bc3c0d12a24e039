package quantize

import (
	"fmt"
	"math"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/qformat"
	"github.com/forgedaemon/forged/ane/kernels"
)

// Encoded is one quantized matrix in the export layout (encode() in
// Anemll/anemll-forge scripts/qwen3_lut_common.py, pack() in
// scripts/qwen38_gptq_27b.py).
type Encoded struct {
	Format string
	// LUT is the codebook as fp16 bits, shape LUTShape = (K, cd).
	LUT      []uint16
	LUTShape []int
	// Idx holds one uint8 per index, shape IdxShape = (Cout/cd, Cin): index
	// (g, j) covers output rows g·cd … g·cd+cd−1 at input column j.
	Idx      []uint8
	IdxShape []int
	// Int8 holds the INT8 per-channel codes, (Cout, Cin).
	Int8 []int8
	// Scale is the per-output-row scale as fp16 bits, (Cout); nil if none.
	Scale []uint16
	// Weight is a passthrough matrix (FP16 or bf16 bits, WeightDType), (Cout, Cin).
	Weight      []uint16
	WeightDType string
	Rows, Cols  int
}

// Bytes is the stored size of the encoded tensors.
func (e *Encoded) Bytes() int64 {
	return int64(len(e.LUT))*2 + int64(len(e.Idx)) + int64(len(e.Int8)) + int64(len(e.Scale))*2 + int64(len(e.Weight))*2
}

// Encode turns q (rows×cols, normally the output of GPTQ or RTN with this
// rounder) into the export tensors.
func (r *Rounder) Encode(q []float32) (*Encoded, error) {
	if err := checkMatrix(r.Name, q, r.Rows, r.Cols); err != nil {
		return nil, err
	}
	if !r.Spec.Exportable {
		return nil, fmt.Errorf("matrix %s: per-group LUTs are not exported (format %q)", r.Name, r.Spec.Name)
	}
	rows, cols := r.Rows, r.Cols
	e := &Encoded{Format: r.Spec.Name, Rows: rows, Cols: cols}
	if r.Scale != nil {
		e.Scale = make([]uint16, rows)
		half.F32ToF16(e.Scale, r.Scale)
	}
	switch r.Spec.Kind {
	case qformat.KindDense:
		e.Weight = make([]uint16, len(q))
		if r.Spec.Name == "bf16" {
			e.WeightDType = "BF16"
			half.F32ToBF16(e.Weight, q)
		} else {
			e.WeightDType = "F16"
			half.F32ToF16(e.Weight, q)
		}
	case qformat.KindInt8:
		e.Int8 = make([]int8, len(q))
		for i := 0; i < rows; i++ {
			s := r.Scale[i]
			for j := 0; j < cols; j++ {
				c := math.RoundToEven(float64(q[i*cols+j] / s))
				e.Int8[i*cols+j] = int8(math.Max(-127, math.Min(127, c)))
			}
		}
	default:
		cd := r.CD
		e.LUT = make([]uint16, len(r.LUT))
		half.F32ToF16(e.LUT, r.LUT)
		e.LUTShape = []int{r.K, cd}
		e.IdxShape = []int{rows / cd, cols}
		e.Idx = make([]uint8, rows/cd*cols)
		var v [4]float64
		for g := 0; g < rows/cd; g++ {
			for j := 0; j < cols; j++ {
				for t := 0; t < cd; t++ {
					x := q[(g*cd+t)*cols+j]
					if r.Scale != nil {
						x /= r.Scale[g*cd+t]
					}
					v[t] = float64(x)
				}
				e.Idx[g*cols+j] = uint8(nearest(r.LUT, cd, v[:cd]))
			}
		}
	}
	return e, nil
}

// Dequantize decodes an Encoded matrix to float32 through ane/kernels's stored
// formats (the run-time kernels), so the export is checked by the code that
// will execute it.
func Dequantize(e *Encoded) ([]float32, error) {
	f32 := func(h []uint16) []float32 {
		if h == nil {
			return nil
		}
		o := make([]float32, len(h))
		half.F16ToF32(o, h)
		return o
	}
	var m kernels.Matrix
	var err error
	if e.Rows <= 0 || e.Cols <= 0 {
		return nil, fmt.Errorf("dequantize %s: dimensions %d×%d must be positive", e.Format, e.Rows, e.Cols)
	}
	switch {
	case e.Weight != nil:
		if len(e.Weight) != e.Rows*e.Cols {
			return nil, fmt.Errorf("dequantize %s: %d weights for %d×%d", e.Format, len(e.Weight), e.Rows, e.Cols)
		}
		o := make([]float32, len(e.Weight))
		if e.WeightDType == "BF16" {
			half.BF16ToF32(o, e.Weight)
		} else {
			half.F16ToF32(o, e.Weight)
		}
		return o, nil
	case e.Int8 != nil:
		m, err = kernels.NewInt8(e.Rows, e.Cols, e.Int8, f32(e.Scale))
	case e.LUT != nil:
		if len(e.LUTShape) != 2 || e.LUTShape[0]*e.LUTShape[1] != len(e.LUT) {
			return nil, fmt.Errorf("dequantize %s: LUT shape %v does not hold %d values", e.Format, e.LUTShape, len(e.LUT))
		}
		m, err = kernels.NewLUT(e.Format, e.Rows, e.Cols, e.LUTShape[1], f32(e.LUT), e.Idx, f32(e.Scale))
	default:
		return nil, fmt.Errorf("dequantize %s: no weight, int8 or LUT tensors", e.Format)
	}
	if err != nil {
		return nil, err
	}
	return kernels.Densify(m), nil
}
