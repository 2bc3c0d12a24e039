package synth

import (
	"encoding/binary"
	"hash/fnv"
	"math"

	"github.com/forgedaemon/forged/ane/format/layout"
	"github.com/forgedaemon/forged/ane/nprand"
)

// Weight synthesis. Every tensor has its own generator, NumPy's PCG64 (see
// ane/nprand) seeded with FNV-1a-64 of the 8 little-endian bytes of the
// user's seed followed by the tensor name, so tensors are independent of
// each other and of the order they are written in.
//
// Only integer arithmetic, exact power-of-two scaling and single float32
// multiplications or additions (each explicitly rounded, so no platform
// may fuse them) are used between the raw 64-bit draws and the BF16 bits:
// the output is byte-identical on every platform, not only run to run.

func tensorRNG(seed uint64, name string) *nprand.PCG64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(name))
	return nprand.NewPCG64(h.Sum64())
}

// irwinHall maps three 16-bit fields of a raw draw to an odd integer in
// [-196605, 196605] whose distribution is close to normal with standard
// deviation irwinHallStd.
func irwinHall(raw uint64) int32 {
	s := int32(raw&0xffff) + int32(raw>>16&0xffff) + int32(raw>>32&0xffff)
	return 2*s - 3*0xffff
}

// irwinHallStd = 2·sqrt(3·(65536²−1)/12).
const irwinHallStd = 65535.49998

// gaussian returns an approximately standard normal float32 from one draw.
func gaussian(raw uint64) float32 {
	return float32(irwinHall(raw)) * float32(1/irwinHallStd)
}

// heavyTailed is gaussian with the top 16 bits of the draw picking a heavy
// tail: one value in 1024 is tripled, giving the occasional large weight
// trained matrices have.
func heavyTailed(raw uint64) float32 {
	z := gaussian(raw)
	if raw>>48 < 64 {
		z = float32(z * 3)
	}
	return z
}

// pow2Eighths holds 2^(k/8) for k = 0..7, for log-normal scales on a lattice.
var pow2Eighths = [8]float32{1, 1.0905077, 1.1892071, 1.2968396, 1.4142135, 1.5422108, 1.6817929, 1.8340081}

// logNormalScale returns 2^(e/8) where e is approximately normal with
// standard deviation sd8 (in eighths of an octave).
func logNormalScale(raw uint64, sd8 int32) float32 {
	e := int32(int64(irwinHall(raw)) * int64(sd8) / 65535)
	q, r := e>>3, e&7 // floor division, r in 0..7
	return float32(math.Ldexp(float64(pow2Eighths[r]), int(q)))
}

// filler produces a tensor's values row by row.
type filler struct {
	rng  *nprand.PCG64
	spec layout.TensorSpec
	cols int
	row  int

	rowScale []float32 // per output row
	colScale []float32 // per input column: 1, or large for outlier channels
	base     float32
}

// Linear layers: values = base · rowScale[r] · colScale[c] · gaussian, with
// log-normal row scales (σ = 0.5 octave) and about one input channel in 128
// (at least one) an outlier ×8, as in trained LLMs where a few hidden
// dimensions carry much larger activations and weights.
const (
	rowScaleSD8   = 4 // eighths of an octave
	outlierEvery  = 128
	outlierFactor = 8
)

func newFiller(seed uint64, spec layout.TensorSpec) *filler {
	f := &filler{rng: tensorRNG(seed, spec.Name), spec: spec}
	rows := spec.Shape[0]
	f.cols = int(spec.Elements()) / rows
	switch spec.Kind {
	case layout.Linear, layout.Embedding:
		f.rowScale = make([]float32, rows)
		sd := int32(rowScaleSD8)
		if spec.Kind == layout.Embedding {
			sd = 2
		}
		for r := range f.rowScale {
			f.rowScale[r] = logNormalScale(f.rng.Uint64(), sd)
		}
		f.colScale = make([]float32, f.cols)
		for c := range f.colScale {
			f.colScale[c] = 1
		}
		if spec.Kind == layout.Linear {
			for range max(1, f.cols/outlierEvery) {
				f.colScale[f.rng.BoundedUint32(uint32(f.cols-1))] = outlierFactor
			}
			f.base = float32(1 / math.Sqrt(float64(f.cols)))
		} else {
			f.base = 0.05
		}
	}
	return f
}

// next fills dst (a whole number of rows) with the next values.
func (f *filler) next(dst []float32) {
	for i := range dst {
		dst[i] = f.value(f.row+i/f.cols, i%f.cols)
	}
	f.row += len(dst) / f.cols
}

func (f *filler) value(r, c int) float32 {
	raw := f.rng.Uint64()
	z := gaussian(raw)
	switch f.spec.Kind {
	case layout.Linear, layout.Embedding:
		z = heavyTailed(raw)
		s := float32(f.rowScale[r] * f.colScale[c])
		s = float32(s * f.base)
		return float32(z * s)
	case layout.Norm:
		// Zero-centred gains: the layer multiplies by 1+w, so w ≈ 0.05 ± 0.1.
		return float32(float32(z*0.1) + 0.05)
	case layout.GatedNorm:
		// The DeltaNet output norm multiplies by w itself: w ≈ 1 ± 0.1.
		return float32(float32(z*0.1) + 1)
	case layout.Conv:
		// Small depthwise kernels leaning on the current token (last tap).
		v := float32(z * 0.2)
		if c == f.cols-1 {
			v = float32(v + 0.4)
		}
		return v
	case layout.ALog:
		// A = exp(A_log) in [0.37, 15.6]: A_log = k/8, k uniform in [-8, 22].
		return float32(int32(f.rng.BoundedUint32(30))-8) / 8
	case layout.DtBias:
		// softplus(dt_bias) in [0.001, 0.1], the usual time-step range:
		// dt_bias = k/8, k uniform in [-55, -18].
		return float32(int32(f.rng.BoundedUint32(37))-55) / 8
	}
	return z
}
