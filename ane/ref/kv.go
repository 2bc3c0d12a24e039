package ref

import (
	"math"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/kernels"
)

// writeHistory stores one position's keys and values (kvHeads × headDim
// each) in the session's history format.
func (s *Session) writeHistory(li, p int, k, v []float32) {
	c := &s.m.cfg
	row := c.KVHeads * c.HeadDim
	half.F32ToF16(s.kc[li][p*row:(p+1)*row], k)
	s.rowGen[p] = s.gen
	if s.m.opts.KV != ane.KVV8 {
		half.F32ToF16(s.vc[li][p*row:(p+1)*row], v)
		return
	}
	for g := 0; g < c.KVHeads; g++ {
		vh := v[g*c.HeadDim : (g+1)*c.HeadDim]
		codes := s.v8[li][p*row+g*c.HeadDim : p*row+(g+1)*c.HeadDim]
		sc := quantizeV8(codes, vh)
		s.vs[li][p*c.KVHeads+g] = sc
	}
}

// quantizeV8 is the published value quantisation: scale = max|v|/127
// (at least 1e-6) stored as fp16, code = clip(rint(v/scale), −127, 127)
// using the stored (fp16) scale so codes·scale reconstructs v.
func quantizeV8(codes []int8, v []float32) uint16 {
	var mx float32
	for _, x := range v {
		mx = max(mx, float32(math.Abs(float64(x))))
	}
	h := half.F16(max(mx/127, 1e-6))
	scale := half.F16Float(h)
	for i, x := range v {
		q := math.RoundToEven(float64(x / scale))
		codes[i] = int8(max(-127, min(127, q)))
	}
	return h
}

// addValue adds w times the value vector of kv head g at position p to dst.
func (s *Session) addValue(li, p, g int, w float32, dst []float32) {
	c := &s.m.cfg
	off := (p*c.KVHeads + g) * c.HeadDim
	if s.m.opts.KV != ane.KVV8 {
		kernels.AxpyF16(dst, w, s.vc[li][off:off+c.HeadDim])
		return
	}
	kernels.AxpyInt8(dst, w*half.F16Float(s.vs[li][p*c.KVHeads+g]), s.v8[li][off:off+c.HeadDim])
}
