package refchunk

import (
	"fmt"
	"unsafe"
)

// layerW is one decoder layer's weights as float32.
type layerW struct {
	full              bool
	inNorm, postNorm  []float32
	gate, up, down    []float32
	qkv, z, b, a, out []float32 // DeltaNet
	convW             []float32 // (CD, K)
	aLog, dtBias      []float32
	gNorm             []float32
	q, k, v, o        []float32 // attention
	qNorm, kNorm      []float32
}

func loadLayer(w *Weights, i int) (layerW, error) {
	m := w.Cfg
	H, I := m.HiddenSize, m.IntermediateSize
	p := fmt.Sprintf("%slayers.%d.", prefix, i)
	L := layerW{full: m.IsFullAttention(i)}
	var err error
	get := func(dst *[]float32, name string, n int) {
		if err == nil {
			*dst, err = w.get(p+name, n)
		}
	}
	get(&L.inNorm, "input_layernorm.weight", H)
	get(&L.postNorm, "post_attention_layernorm.weight", H)
	get(&L.gate, "mlp.gate_proj.weight", I*H)
	get(&L.up, "mlp.up_proj.weight", I*H)
	get(&L.down, "mlp.down_proj.weight", H*I)
	if L.full {
		nh, nkv, hd := m.NumAttentionHeads, m.NumKeyValueHeads, m.HeadDim
		get(&L.q, "self_attn.q_proj.weight", 2*nh*hd*H)
		get(&L.k, "self_attn.k_proj.weight", nkv*hd*H)
		get(&L.v, "self_attn.v_proj.weight", nkv*hd*H)
		get(&L.o, "self_attn.o_proj.weight", H*nh*hd)
		get(&L.qNorm, "self_attn.q_norm.weight", hd)
		get(&L.kNorm, "self_attn.k_norm.weight", hd)
	} else {
		kd, vd, nv := m.LinearNumKeyHeads*m.LinearKeyHeadDim, m.LinearNumValueHeads*m.LinearValueHeadDim, m.LinearNumValueHeads
		cd := 2*kd + vd
		get(&L.qkv, "linear_attn.in_proj_qkv.weight", cd*H)
		get(&L.z, "linear_attn.in_proj_z.weight", vd*H)
		get(&L.b, "linear_attn.in_proj_b.weight", nv*H)
		get(&L.a, "linear_attn.in_proj_a.weight", nv*H)
		get(&L.out, "linear_attn.out_proj.weight", H*vd)
		get(&L.convW, "linear_attn.conv1d.weight", cd*m.LinearConvKernelDim)
		get(&L.aLog, "linear_attn.A_log", nv)
		get(&L.dtBias, "linear_attn.dt_bias", nv)
		get(&L.gNorm, "linear_attn.norm.weight", m.LinearValueHeadDim)
	}
	return L, err
}

func u16(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}

func i8(b []byte) []int8 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}
