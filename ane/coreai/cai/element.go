package cai

import (
	"encoding/binary"
	"math"

	"github.com/forgedaemon/forged/ane/format/half"
)

// Element access for the drivers that fill inputs and read outputs in a
// buffer's own (possibly padded) layout.

// MaskOff is the additive mask value the published graphs take for a
// position that must not be attended to (history not yet valid).
const MaskOff = -1e4

// Off is the byte offset of the element at idx (one index per dimension).
func (b *Buffer) Off(idx ...int) int {
	o := 0
	for k, i := range idx {
		o += i * int(b.Strides[k])
	}
	return o * b.DType.Size()
}

// SetF16 stores v, rounded to fp16, at idx.
func (b *Buffer) SetF16(v float32, idx ...int) {
	binary.LittleEndian.PutUint16(b.data[b.Off(idx...):], half.F16(v))
}

// F16 is the fp16 bits at idx.
func (b *Buffer) F16(idx ...int) uint16 { return binary.LittleEndian.Uint16(b.data[b.Off(idx...):]) }

// PutU16 stores 16 raw bits at idx.
func (b *Buffer) PutU16(v uint16, idx ...int) {
	binary.LittleEndian.PutUint16(b.data[b.Off(idx...):], v)
}

// Zero clears the buffer.
func (b *Buffer) Zero() { clear(b.data) }

// RoPEInv is the RoPE inverse frequencies θ^(−2i/dims), i < dims/2.
func RoPEInv(theta float64, dims int) []float64 {
	inv := make([]float64, dims/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(theta, float64(2*i)/float64(dims))
	}
	return inv
}

// FillRoPE writes the (rows, dims) cos and sin input tables of the
// positions pos(t): NeoX layout, dim i and dim i + dims/2 share the angle
// pos·inv[i]. The target's chunks and the drafter take the same tables.
func FillRoPE(cs, sn *Buffer, inv []float64, pos func(t int) int) {
	half := len(inv)
	for t := 0; t < int(cs.Shape[0]); t++ {
		p := float64(pos(t))
		for i := 0; i < int(cs.Shape[1]); i++ {
			s, c := math.Sincos(p * inv[i%half])
			cs.SetF16(float32(c), t, i)
			sn.SetF16(float32(s), t, i)
		}
	}
}
