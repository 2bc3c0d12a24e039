package ref

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/hadamard"
	"github.com/forgedaemon/forged/ane/kernels"
)

// EffectiveTensors returns the model's weights as dense float32 tensors
// under checkpoint names (the ane/format/layout table), such that a dense model
// over them computes what m computes: every projection dequantized from
// its stored format plus its low-rank branch (W + lr_a·lr_b), with the
// online Hadamard rotations folded into the matrices they precede (m
// rotates a projection's input x to R·x, so W_eff = W'·R: rotIn into
// gate/up, rotMid into down, mixIn into the mixer's reader projections
// except in_proj_a/b, mixOut into out_proj/o_proj); the small tensors as
// loaded; the embedding (every row, as m's table gives it) and the LM
// head. Only the results are allocated, about four bytes per parameter.
func (m *Model) EffectiveTensors() map[string][]float32 {
	c, w := &m.cfg, m.w
	out := map[string][]float32{}
	vec := func(name string, v []float32) { out[name] = slices.Clone(v) }
	dense := func(name string, l *kernels.Linear, rot *hadamard.BlockRotation) {
		d := l.Dense()
		if rot != nil {
			cols := l.Cols()
			for r := 0; r < l.Rows(); r++ {
				rot.ApplyInverse(d[r*cols : (r+1)*cols]) // row·R
			}
		}
		out[name] = d
	}
	for i := range w.layers {
		L, p := &w.layers[i], layerPrefix(i)
		vec(p+"input_layernorm.weight", L.inNorm)
		vec(p+"post_attention_layernorm.weight", L.postNorm)
		if L.full {
			dense(p+"self_attn.q_proj.weight", L.q, L.mixIn)
			dense(p+"self_attn.k_proj.weight", L.k, L.mixIn)
			dense(p+"self_attn.v_proj.weight", L.v, L.mixIn)
			dense(p+"self_attn.o_proj.weight", L.o, L.mixOut)
			vec(p+"self_attn.q_norm.weight", L.qNorm)
			vec(p+"self_attn.k_norm.weight", L.kNorm)
		} else {
			dense(p+"linear_attn.in_proj_qkv.weight", L.qkv, L.mixIn)
			dense(p+"linear_attn.in_proj_z.weight", L.z, L.mixIn)
			dense(p+"linear_attn.in_proj_b.weight", L.b, nil) // reads h, not the rotated copy
			dense(p+"linear_attn.in_proj_a.weight", L.a, nil)
			dense(p+"linear_attn.out_proj.weight", L.out, L.mixOut)
			vec(p+"linear_attn.conv1d.weight", L.convW)
			vec(p+"linear_attn.A_log", L.aLog)
			vec(p+"linear_attn.dt_bias", L.dtBias)
			vec(p+"linear_attn.norm.weight", L.gNorm)
		}
		dense(p+"mlp.gate_proj.weight", L.gate, L.rotIn)
		dense(p+"mlp.up_proj.weight", L.up, L.rotIn)
		dense(p+"mlp.down_proj.weight", L.down, L.rotMid)
	}
	vec(normName, w.finalNorm)
	dense(headName, w.head, nil)
	emb := make([]float32, c.Vocab*c.Hidden)
	for id := 0; id < c.Vocab; id++ {
		w.embed.Row(id, emb[id*c.Hidden:(id+1)*c.Hidden])
	}
	out[embedName] = emb
	return out
}

// EffectiveBundle opens the bundle in dir as OpenBundle does (model/ and
// export/: the quantized matrices, small.safetensors, the FP16 embedding)
// and returns its config and EffectiveTensors.
func EffectiveBundle(dir string) (*hfconfig.Model, map[string][]float32, error) {
	cm, err := hfconfig.LoadModel(filepath.Join(dir, "model"))
	if err != nil {
		return nil, nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	m, err := OpenBundle(dir, Options{Threads: 1})
	if err != nil {
		return nil, nil, err
	}
	defer m.Close()
	return cm, m.EffectiveTensors(), nil
}
