package dflash

import (
	"fmt"
	"math"

	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/kernels"
)

// TargetWeights is what the drafter borrows from its target: the token
// embedding table and the LM head (ref.Model provides both).
type TargetWeights interface {
	EmbedRow(id int, dst []float32)
	LMHead() *kernels.Linear
}

type layerWeights struct {
	inNorm, postNorm, qNorm, kNorm []float32
	q, k, v, o, gate, up, down     *kernels.Linear
	attnKP, mlpKP                  *kernels.Linear
	attnBase, mlpBase              []float32 // [side][tap][group]
}

// Net is the drafter network on the CPU: what the packaged graph's two
// entries compute (context keys and values; the block's hidden rows,
// logits and hidden projection), with RoPE tables and attention keys
// passed in, so the CPU drafter and the Core AI reference entries run the
// same code. Weights are shared read-only; a Net is not safe for
// concurrent use (its matrix runner is not).
type Net struct {
	cfg     *hfconfig.Drafter
	feat    int // feature values per context row
	kvDim   int
	groups  int
	block   int
	fc      *kernels.Linear
	ctxNorm []float32
	layers  []layerWeights
	norm    []float32
	hp      *kernels.Linear
	sel     *Selector
	head    *kernels.Linear
	target  TargetWeights
	run     *kernels.Runner
	inv     []float64 // RoPE inverse frequencies over all head dims
}

// NewNet builds the network from loaded weights over its target. threads
// is the matrix worker count (≤ 0: GOMAXPROCS).
func NewNet(w *Weights, target TargetWeights, threads int) (*Net, error) {
	cfg := w.Config
	head := target.LMHead()
	if head.Rows() != cfg.VocabSize || head.Cols() != cfg.HiddenSize {
		return nil, fmt.Errorf("drafter pairing: target LM head is %d×%d, drafter needs vocab_size %d × hidden_size %d",
			head.Rows(), head.Cols(), cfg.VocabSize, cfg.HiddenSize)
	}
	d := &Net{cfg: cfg, feat: w.Features, kvDim: cfg.NumKeyValueHeads * cfg.HeadDim,
		groups: cfg.HiddenSize / cfg.DFlash.ConvGroupSize, block: cfg.DFlash.BlockSize,
		head: head, target: target}
	shapes := map[string][]int{}
	for _, s := range CheckpointTensors(cfg, w.Features) {
		shapes[s.Name] = s.Shape
		if len(w.T[s.Name]) != shapeSize(s.Shape) {
			return nil, fmt.Errorf("drafter weights: %s has %d values, want shape %v", s.Name, len(w.T[s.Name]), s.Shape)
		}
	}
	var err error
	if d.sel, err = NewSelector(cfg, w.T[drafter.PredecessorCodebook], w.T[drafter.SuccessorCodebook]); err != nil {
		return nil, err
	}
	var linErr error
	lin := func(name string) *kernels.Linear {
		m, err := kernels.NewF32(shapes[name][0], shapes[name][1], w.T[name])
		var l *kernels.Linear
		if err == nil {
			l, err = kernels.NewLinear(name, m, nil, nil)
		}
		if err != nil && linErr == nil {
			linErr = err
		}
		return l
	}
	d.fc, d.ctxNorm = lin("fc.weight"), w.T["hidden_norm.weight"]
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		p := fmt.Sprintf("layers.%d.", i)
		d.layers = append(d.layers, layerWeights{
			inNorm: w.T[p+"input_layernorm.weight"], postNorm: w.T[p+"post_attention_layernorm.weight"],
			qNorm: w.T[p+"self_attn.q_norm.weight"], kNorm: w.T[p+"self_attn.k_norm.weight"],
			q: lin(p + "self_attn.q_proj.weight"), k: lin(p + "self_attn.k_proj.weight"),
			v: lin(p + "self_attn.v_proj.weight"), o: lin(p + "self_attn.o_proj.weight"),
			gate: lin(p + "mlp.gate_proj.weight"), up: lin(p + "mlp.up_proj.weight"), down: lin(p + "mlp.down_proj.weight"),
			attnKP: lin(p + "attention_conv.kernel_projection.weight"), mlpKP: lin(p + "mlp_conv.kernel_projection.weight"),
			attnBase: w.T[p+"attention_conv.base_kernel"], mlpBase: w.T[p+"mlp_conv.base_kernel"],
		})
	}
	d.norm, d.hp = w.T["norm.weight"], lin("candidate_selector.hidden_projection.weight")
	half := cfg.HeadDim / 2
	d.inv = make([]float64, half)
	for i := range d.inv {
		d.inv[i] = 1 / math.Pow(cfg.RopeTheta, float64(2*i)/float64(cfg.HeadDim))
	}
	if linErr != nil {
		return nil, linErr
	}
	d.run = kernels.NewRunner(threads)
	return d, nil
}

// Close stops the network's workers.
func (d *Net) Close() { d.run.Close() }

// Config is the drafter's configuration.
func (d *Net) Config() *hfconfig.Drafter { return d.cfg }

// Features is the width of one context row (taps × target hidden).
func (d *Net) Features() int { return d.feat }

// Selector is the candidate selector built from the weights' codebooks.
func (d *Net) Selector() *Selector { return d.sel }

// EmbedRow writes the target's embedding of token id (the block's rows).
func (d *Net) EmbedRow(id int, dst []float32) { d.target.EmbedRow(id, dst) }

// Rope holds RoPE angles for rows of positions: Cos and Sin are rows ×
// head_dim/2 (the NeoX half split rotates dim i with dim i + head_dim/2).
type Rope struct{ Cos, Sin []float64 }

// RopeAt computes the angles of positions in float64.
func (d *Net) RopeAt(pos []int) Rope {
	half := len(d.inv)
	r := Rope{Cos: make([]float64, len(pos)*half), Sin: make([]float64, len(pos)*half)}
	for t, p := range pos {
		for i, f := range d.inv {
			r.Sin[t*half+i], r.Cos[t*half+i] = math.Sincos(float64(p) * f)
		}
	}
	return r
}

// ContextKV projects n context rows of features into every layer's keys
// and values (n rows of kv heads × head_dim each, keys normed and rotated
// by rope): c = RMSNorm(fc(f))·hidden_norm, K = RoPE(k_norm(k_proj(c))),
// V = v_proj(c).
func (d *Net) ContextKV(features []float32, n int, rope Rope) (k, v [][]float32) {
	cfg := d.cfg
	h := cfg.HiddenSize
	c := make([]float32, n*h)
	d.run.Apply(d.fc, c, features[:n*d.feat], n)
	for t := 0; t < n; t++ {
		rmsNorm(c[t*h:(t+1)*h], d.ctxNorm, cfg.RMSNormEps)
	}
	for l := range d.layers {
		L := &d.layers[l]
		kl, vl := make([]float32, n*d.kvDim), make([]float32, n*d.kvDim)
		d.run.Apply(L.k, kl, c, n)
		d.run.Apply(L.v, vl, c, n)
		d.normRope(kl, L.kNorm, rope, cfg.NumKeyValueHeads)
		k, v = append(k, kl), append(v, vl)
	}
	return k, v
}

// normRope applies the per-head RMSNorm (plain gain) and RoPE over all
// head dims (NeoX half split) to rows of heads × head_dim.
func (d *Net) normRope(x, gain []float32, rope Rope, heads int) {
	hd := d.cfg.HeadDim
	half := hd / 2
	for t := 0; t < len(x)/(heads*hd); t++ {
		cos, sin := rope.Cos[t*half:(t+1)*half], rope.Sin[t*half:(t+1)*half]
		for h := 0; h < heads; h++ {
			v := x[(t*heads+h)*hd : (t*heads+h+1)*hd]
			rmsNorm(v, gain, d.cfg.RMSNormEps)
			for i := 0; i < half; i++ {
				a, b := float64(v[i]), float64(v[i+half])
				v[i], v[i+half] = float32(a*cos[i]-b*sin[i]), float32(b*cos[i]+a*sin[i])
			}
		}
	}
}

// Keys are the context rows a block attends to besides itself: per layer
// N rows of keys and values (kv heads × head_dim each), and Bias(t, s),
// added to block row t's score for key row s (−Inf hides the key; so, in
// effect, does the graph's −1e4).
type Keys struct {
	N    int
	K, V [][]float32
	Bias func(t, s int) float64
}

// BlockInput returns the block's input rows: the target's embedding of
// anchor, then of the mask token for the other rows.
func (d *Net) BlockInput(anchor int) []float32 {
	H := d.cfg.HiddenSize
	x := make([]float32, d.block*H)
	for t := 0; t < d.block; t++ {
		id := d.cfg.DFlash.MaskTokenID
		if t == 0 {
			id = anchor
		}
		d.target.EmbedRow(id, x[t*H:(t+1)*H])
	}
	return x
}

// Block runs the block rows x (block × hidden, overwritten) through the
// layers, attending to keys and, non-causally, to the block itself, and
// returns the final-normed hidden rows (x itself).
func (d *Net) Block(x []float32, rope Rope, keys Keys) []float32 {
	cfg := d.cfg
	B, H := d.block, cfg.HiddenSize
	kp := convSides * cfg.DFlash.ConvKernelSize * d.groups
	n := make([]float32, B*H)
	a := make([]float32, B*H)
	y := make([]float32, B*H)
	dk := make([]float32, B*kp)
	qDim := cfg.NumAttentionHeads * cfg.HeadDim
	q := make([]float32, B*qDim)
	o := make([]float32, B*qDim)
	kb := make([]float32, B*d.kvDim)
	vb := make([]float32, B*d.kvDim)
	gate := make([]float32, B*cfg.IntermediateSize)
	up := make([]float32, B*cfg.IntermediateSize)
	bias := make([]float64, B*keys.N)
	for t := 0; t < B; t++ {
		for s := 0; s < keys.N; s++ {
			bias[t*keys.N+s] = keys.Bias(t, s)
		}
	}
	for l := range d.layers {
		L := &d.layers[l]
		// Attention, between the two sides of the attention convolution.
		normRows(n, x, L.inNorm, B, H, cfg.RMSNormEps)
		d.run.Apply(L.attnKP, dk, n, B)
		d.gconv(a, n, dk, L.attnBase, 0)
		d.run.Apply(L.q, q, a, B)
		d.run.Apply(L.k, kb, a, B)
		d.run.Apply(L.v, vb, a, B)
		d.normRope(q, L.qNorm, rope, cfg.NumAttentionHeads)
		d.normRope(kb, L.kNorm, rope, cfg.NumKeyValueHeads)
		d.attend(o, q, kb, vb, keys.K[l], keys.V[l], keys.N, bias)
		d.run.Apply(L.o, y, o, B)
		d.gconv(a, y, dk, L.attnBase, 1)
		addTo(x, a)
		// MLP, between the two sides of the MLP convolution.
		normRows(n, x, L.postNorm, B, H, cfg.RMSNormEps)
		d.run.Apply(L.mlpKP, dk, n, B)
		d.gconv(a, n, dk, L.mlpBase, 0)
		d.run.Apply(L.gate, gate, a, B)
		d.run.Apply(L.up, up, a, B)
		for i, g := range gate {
			gate[i] = silu(g) * up[i]
		}
		d.run.Apply(L.down, y, gate, B)
		d.gconv(a, y, dk, L.mlpBase, 1)
		addTo(x, a)
	}
	normRows(x, x, d.norm, B, H, cfg.RMSNormEps)
	return x
}

// Logits scores hidden rows 1.. of the block with the target's LM head
// ((block − 1) × vocab).
func (d *Net) Logits(h []float32) []float32 {
	rows := d.block - 1
	logits := make([]float32, rows*d.cfg.VocabSize)
	d.run.Apply(d.head, logits, h[d.cfg.HiddenSize:], rows)
	return logits
}

// Project is the selector's hidden projection of rows hidden rows (rows × rank).
func (d *Net) Project(h []float32, rows int) []float32 {
	hp := make([]float32, rows*d.cfg.DFlash.SelectorRank)
	d.run.Apply(d.hp, hp, h[:rows*d.cfg.HiddenSize], rows)
	return hp
}

// gconv is one side of the dynamic two-tap grouped convolution:
// dst[t][c] = Σ_j (base[side][j][g] + dk[t][side][j][g]) · src[t−j][c],
// g = c / conv_group_size, src rows before the block are zero.
func (d *Net) gconv(dst, src, dk, base []float32, side int) {
	H, G, K := d.cfg.HiddenSize, d.groups, d.cfg.DFlash.ConvKernelSize
	gs := d.cfg.DFlash.ConvGroupSize
	kp := convSides * K * G
	for t := 0; t < d.block; t++ {
		out := dst[t*H : (t+1)*H]
		clear(out)
		for j := 0; j < K && j <= t; j++ {
			in := src[(t-j)*H : (t-j+1)*H]
			for g := 0; g < G; g++ {
				w := base[(side*K+j)*G+g] + dk[t*kp+(side*K+j)*G+g]
				for c := g * gs; c < (g+1)*gs; c++ {
					out[c] += w * in[c]
				}
			}
		}
	}
}

// attend computes o for the block queries over nk context keys (ck, cv,
// with bias per block row and key) and the whole block (non-causal).
func (d *Net) attend(o, q, kb, vb, ck, cv []float32, nk int, bias []float64) {
	cfg := d.cfg
	hd, nh, nkv := cfg.HeadDim, cfg.NumAttentionHeads, cfg.NumKeyValueHeads
	scale := 1 / math.Sqrt(float64(hd))
	scores := make([]float64, nk+d.block)
	acc := make([]float64, hd)
	for t := 0; t < d.block; t++ {
		for h := 0; h < nh; h++ {
			g := h / (nh / nkv)
			qv := q[(t*nh+h)*hd : (t*nh+h+1)*hd]
			maxS := math.Inf(-1)
			for s := 0; s < nk; s++ {
				scores[s] = bias[t*nk+s]
				if !math.IsInf(scores[s], -1) {
					scores[s] += float64(dotf(qv, ck[s*d.kvDim+g*hd:s*d.kvDim+(g+1)*hd])) * scale
					maxS = math.Max(maxS, scores[s])
				}
			}
			for j := 0; j < d.block; j++ {
				sc := float64(dotf(qv, kb[j*d.kvDim+g*hd:j*d.kvDim+(g+1)*hd])) * scale
				scores[nk+j] = sc
				maxS = math.Max(maxS, sc)
			}
			clear(acc)
			var sum float64
			for s, sc := range scores {
				if math.IsInf(sc, -1) {
					continue
				}
				p := math.Exp(sc - maxS)
				sum += p
				var vrow []float32
				if s < nk {
					vrow = cv[s*d.kvDim+g*hd : s*d.kvDim+(g+1)*hd]
				} else {
					j := s - nk
					vrow = vb[j*d.kvDim+g*hd : j*d.kvDim+(g+1)*hd]
				}
				for i, v := range vrow {
					acc[i] += p * float64(v)
				}
			}
			out := o[(t*nh+h)*hd : (t*nh+h+1)*hd]
			for i := range out {
				out[i] = float32(acc[i] / sum)
			}
		}
	}
}

func shapeSize(shape []int) int {
	n := 1
	for _, v := range shape {
		n *= v
	}
	return n
}

func normRows(dst, x, gain []float32, n, h int, eps float64) {
	if &dst[0] != &x[0] {
		copy(dst, x[:n*h])
	}
	for t := 0; t < n; t++ {
		rmsNorm(dst[t*h:(t+1)*h], gain, eps)
	}
}

// rmsNorm scales x in place to x/rms(x)·gain (plain gain, as the drafter's
// norms are), accumulating in float64.
func rmsNorm(x, gain []float32, eps float64) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	r := 1 / math.Sqrt(ss/float64(len(x))+eps)
	for i, v := range x {
		x[i] = float32(float64(v)*r) * gain[i]
	}
}

func silu(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) }

func addTo(x, y []float32) {
	for i, v := range y {
		x[i] += v
	}
}

func dotf(a, b []float32) float32 {
	var s float32
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

var negInf = math.Inf(-1)
