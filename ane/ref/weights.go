package ref

import (
	"fmt"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/kernels"
)

// Checkpoint tensor names (Hugging Face qwen3_5, text model nested as
// model.language_model); ane/format/layout lists the same table with shapes.
const (
	prefix    = "model.language_model."
	embedName = prefix + "embed_tokens.weight"
	normName  = prefix + "norm.weight"
	headName  = "lm_head.weight"
)

func layerPrefix(i int) string { return fmt.Sprintf("%slayers.%d.", prefix, i) }

// matrices supplies the projection matrices of a model: dense from the
// checkpoint, or in stored formats from an export.
type matrices interface {
	// linear returns module (e.g. "linear_attn.in_proj_qkv", "mlp.gate_proj")
	// of layer i, which must be rows×cols.
	linear(i int, module string, rows, cols int) (*kernels.Linear, error)
	head(rows, cols int) (*kernels.Linear, error)
	// rotations sets the online-basis rotations of layer i, if any.
	rotations(i int, l *layer) error
	bytes() int64
}

// denseMatrices reads every matrix from the BF16 checkpoint.
type denseMatrices struct{ r *reader }

func (d *denseMatrices) linear(i int, module string, rows, cols int) (*kernels.Linear, error) {
	m, err := d.r.dense(layerPrefix(i)+module+".weight", rows, cols)
	if err != nil {
		return nil, err
	}
	return kernels.NewLinear(module, m, nil, nil)
}

func (d *denseMatrices) head(rows, cols int) (*kernels.Linear, error) {
	m, err := d.r.dense(headName, rows, cols)
	if err != nil {
		return nil, err
	}
	return kernels.NewLinear(headName, m, nil, nil)
}

func (d *denseMatrices) rotations(int, *layer) error { return nil }
func (d *denseMatrices) bytes() int64                { return 0 } // counted by the shared reader

// LoadCheckpoint builds dense weights from a BF16 checkpoint source.
func LoadCheckpoint(cfg Config, src Source) (*Weights, error) {
	r := &reader{src: src, where: "checkpoint"}
	return loadWeights(cfg, r, &denseMatrices{r}, nil)
}

// loadWeights reads norms, DeltaNet parameters and the embedding from the
// checkpoint reader base and every projection from mats.
func loadWeights(cfg Config, base *reader, mats matrices, embed Embedding) (*Weights, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	H, I := cfg.Hidden, cfg.Intermediate
	w := &Weights{layers: make([]layer, cfg.Layers), embed: embed}
	var err error
	lin := func(i int, module string, rows, cols int) *kernels.Linear {
		if err != nil {
			return nil
		}
		var l *kernels.Linear
		l, err = mats.linear(i, module, rows, cols)
		return l
	}
	vec := func(name string, shape ...int) []float32 {
		if err != nil {
			return nil
		}
		var v []float32
		v, err = base.vector(name, shape...)
		return v
	}
	for i := range w.layers {
		L := &w.layers[i]
		p := layerPrefix(i)
		L.full = cfg.FullAttention[i]
		L.inNorm = vec(p+"input_layernorm.weight", H)
		L.postNorm = vec(p+"post_attention_layernorm.weight", H)
		if L.full {
			q, kv := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
			L.q = lin(i, "self_attn.q_proj", 2*q, H)
			L.k = lin(i, "self_attn.k_proj", kv, H)
			L.v = lin(i, "self_attn.v_proj", kv, H)
			L.o = lin(i, "self_attn.o_proj", H, q)
			L.qNorm = vec(p+"self_attn.q_norm.weight", cfg.HeadDim)
			L.kNorm = vec(p+"self_attn.k_norm.weight", cfg.HeadDim)
		} else {
			cd, vd, nv := cfg.convDim(), cfg.valueDim(), cfg.LinValueHeads
			L.qkv = lin(i, "linear_attn.in_proj_qkv", cd, H)
			L.z = lin(i, "linear_attn.in_proj_z", vd, H)
			L.out = lin(i, "linear_attn.out_proj", H, vd)
			// in_proj_a/b stay BF16 in the checkpoint even with an export.
			if err == nil {
				var m kernels.Matrix
				if m, err = base.dense(p+"linear_attn.in_proj_b.weight", nv, H); err == nil {
					L.b, err = kernels.NewLinear("in_proj_b", m, nil, nil)
				}
			}
			if err == nil {
				var m kernels.Matrix
				if m, err = base.dense(p+"linear_attn.in_proj_a.weight", nv, H); err == nil {
					L.a, err = kernels.NewLinear("in_proj_a", m, nil, nil)
				}
			}
			L.convW = vec(p+"linear_attn.conv1d.weight", cd, 1, cfg.ConvKernel)
			L.aLog = vec(p+"linear_attn.A_log", nv)
			L.dtBias = vec(p+"linear_attn.dt_bias", nv)
			L.gNorm = vec(p+"linear_attn.norm.weight", cfg.LinValueDim)
		}
		L.gate = lin(i, "mlp.gate_proj", I, H)
		L.up = lin(i, "mlp.up_proj", I, H)
		L.down = lin(i, "mlp.down_proj", H, I)
		if err == nil {
			err = mats.rotations(i, L)
		}
		if err != nil {
			return nil, err
		}
	}
	w.finalNorm = vec(normName, H)
	if err != nil {
		return nil, err
	}
	if w.head, err = mats.head(cfg.Vocab, H); err != nil {
		return nil, err
	}
	if w.embed != nil && (w.embed.Rows() != cfg.Vocab || w.embed.Cols() != H) {
		return nil, fmt.Errorf("embedding table is %d×%d, the config needs %d×%d", w.embed.Rows(), w.embed.Cols(), cfg.Vocab, H)
	}
	if w.embed == nil {
		t, err := base.get(embedName, cfg.Vocab, H)
		if err != nil {
			return nil, err
		}
		if t.DType != "BF16" {
			return nil, fmt.Errorf("%s: tensor %q has dtype %s, want BF16", base.where, embedName, t.DType)
		}
		w.embed = &bf16Embedding{cfg.Vocab, H, half.View(t.Data)}
	}
	w.bytes = base.bytes + mats.bytes()
	return w, nil
}
