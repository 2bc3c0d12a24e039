// Package half converts between float32 and the two 16-bit float formats
// model files use: IEEE 754 binary16 (fp16) and bfloat16 (bf16).
//
// All conversions to 16 bits round to nearest, ties to even; NaN stays NaN
// (quietened, sign kept) and ±Inf stays ±Inf. Single fp16 values go through
// github.com/x448/float16 (verified over all 2^32 inputs by its author); bulk
// fp16 → float32 uses a 65,536-entry table because model loading converts
// billions of elements. bf16 is the top half of a float32, so it is done by
// hand with integer rounding.
package half

import (
	"math"
	"sync"

	"github.com/x448/float16"
)

// F16 returns the fp16 bit pattern nearest to f.
func F16(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// F16Float returns the float32 value of the fp16 bit pattern h (exact).
func F16Float(h uint16) float32 { return float16.Frombits(h).Float32() }

// BF16 returns the bf16 bit pattern nearest to f.
func BF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: truncating could zero the payload, so force the quiet bit
		return uint16(b>>16) | 0x0040
	}
	// Add just under half an ulp of the 16-bit result, plus one more when
	// the kept part is odd: exact halves then round to the even neighbour.
	// Overflow carries into the exponent, which correctly yields ±Inf.
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16Float returns the float32 value of the bf16 bit pattern h (exact).
func BF16Float(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// f16Table maps every fp16 bit pattern to its float32 value.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = F16Float(uint16(i))
	}
	return &t
})

// F16ToF32 converts fp16 bit patterns to float32: dst[i] = value of src[i].
// It panics if dst is shorter than src rather than convert fewer elements.
func F16ToF32(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	t := f16Table()
	for i, h := range src {
		dst[i] = t[h]
	}
}

// F32ToF16 converts float32 values to fp16 bit patterns.
// It panics if dst is shorter than src.
func F32ToF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = F16(f)
	}
}

// BF16ToF32 converts bf16 bit patterns to float32.
// It panics if dst is shorter than src.
func BF16ToF32(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}

// F32ToBF16 converts float32 values to bf16 bit patterns.
// It panics if dst is shorter than src.
func F32ToBF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = BF16(f)
	}
}
