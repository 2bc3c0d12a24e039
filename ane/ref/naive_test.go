package ref

// An independent float64 implementation of the qwen3_5 forward, written
// from the formulas in docs/MODEL.md with plain loops. It shares no code
// with the engine (its own RMSNorm, conv, delta rule, RoPE, softmax and
// fp16 rounding via x448/float16), so agreement tests the engine's math.

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/x448/float16"
)

type nLayer struct {
	full              bool
	inNorm, postNorm  []float64
	qkv, z, b, a, out [][]float64
	conv              [][]float64 // convDim × kernel
	aLog, dtBias      []float64
	gNorm             []float64
	q, k, v, o        [][]float64
	qNorm, kNorm      []float64
	gate, up, down    [][]float64
}

type nModel struct {
	cfg       Config
	embed     [][]float64
	layers    []nLayer
	finalNorm []float64
	head      [][]float64
}

// nState is one sequence's state in the naive model.
type nState struct {
	conv [][][]float64   // layer → kernel−1 raw rows (oldest first)
	S    [][][][]float64 // layer → value head → dk × dv
	K, V [][][]float64   // layer → position → kvHeads·headDim (fp16-rounded)
	pos  int
}

func tinyConfig() Config {
	return Config{
		Vocab: 256, Hidden: 64, Intermediate: 128, Layers: 4,
		Heads: 4, KVHeads: 2, HeadDim: 16, RotaryDim: 4, RopeTheta: 10000,
		LinKeyHeads: 2, LinValueHeads: 4, LinKeyDim: 16, LinValueDim: 8, ConvKernel: 4,
		FullAttention: []bool{false, false, false, true}, Eps: 1e-6,
	}
}

// bf16Round rounds to the nearest bfloat16 (ties to even) and returns the
// value and its bit pattern.
func bf16Round(x float64) (float64, uint16) {
	b := math.Float32bits(float32(x))
	b += 0x7fff + (b>>16)&1
	h := uint16(b >> 16)
	return float64(math.Float32frombits(uint32(h) << 16)), h
}

// gen makes random BF16 weights, storing them both as float64 (for the
// naive model) and as BF16 tensors (for the engine).
type gen struct {
	r   *rand.Rand
	src MapSource
}

func (g *gen) mat(name string, rows, cols int, std float64) [][]float64 {
	m := make([][]float64, rows)
	data := make([]byte, rows*cols*2)
	for i := range m {
		m[i] = make([]float64, cols)
		for j := range m[i] {
			v, h := bf16Round(g.r.NormFloat64() * std)
			m[i][j] = v
			binary.LittleEndian.PutUint16(data[2*(i*cols+j):], h)
		}
	}
	if name != "" {
		g.src[name] = Tensor{DType: "BF16", Shape: []int{rows, cols}, Data: data}
	}
	return m
}

func (g *gen) vec(name string, n int, mean, std float64, shape ...int) []float64 {
	v := make([]float64, n)
	data := make([]byte, n*2)
	for i := range v {
		x, h := bf16Round(mean + g.r.NormFloat64()*std)
		v[i] = x
		binary.LittleEndian.PutUint16(data[2*i:], h)
	}
	if shape == nil {
		shape = []int{n}
	}
	g.src[name] = Tensor{DType: "BF16", Shape: shape, Data: data}
	return v
}

// newTinyModel returns the naive model and the same weights as a Source.
func newTinyModel(cfg Config, seed uint64) (*nModel, MapSource) {
	g := &gen{r: rand.New(rand.NewPCG(seed, 99)), src: MapSource{}}
	H, I := cfg.Hidden, cfg.Intermediate
	m := &nModel{cfg: cfg}
	m.embed = g.mat(embedName, cfg.Vocab, H, 1)
	for i := 0; i < cfg.Layers; i++ {
		p := layerPrefix(i)
		L := nLayer{full: cfg.FullAttention[i]}
		L.inNorm = g.vec(p+"input_layernorm.weight", H, 0, 0.2)
		L.postNorm = g.vec(p+"post_attention_layernorm.weight", H, 0, 0.2)
		sd := 1 / math.Sqrt(float64(H))
		if L.full {
			q, kv := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
			L.q = g.mat(p+"self_attn.q_proj.weight", 2*q, H, sd)
			L.k = g.mat(p+"self_attn.k_proj.weight", kv, H, sd)
			L.v = g.mat(p+"self_attn.v_proj.weight", kv, H, sd)
			L.o = g.mat(p+"self_attn.o_proj.weight", H, q, 1/math.Sqrt(float64(q)))
			L.qNorm = g.vec(p+"self_attn.q_norm.weight", cfg.HeadDim, 0, 0.2)
			L.kNorm = g.vec(p+"self_attn.k_norm.weight", cfg.HeadDim, 0, 0.2)
		} else {
			kd, vd, nv := cfg.LinKeyHeads*cfg.LinKeyDim, cfg.LinValueHeads*cfg.LinValueDim, cfg.LinValueHeads
			cd := 2*kd + vd
			L.qkv = g.mat(p+"linear_attn.in_proj_qkv.weight", cd, H, sd)
			L.z = g.mat(p+"linear_attn.in_proj_z.weight", vd, H, sd)
			L.b = g.mat(p+"linear_attn.in_proj_b.weight", nv, H, sd)
			L.a = g.mat(p+"linear_attn.in_proj_a.weight", nv, H, sd)
			L.out = g.mat(p+"linear_attn.out_proj.weight", H, vd, 1/math.Sqrt(float64(vd)))
			flat := g.vec(p+"linear_attn.conv1d.weight", cd*cfg.ConvKernel, 0, 0.5, cd, 1, cfg.ConvKernel)
			L.conv = make([][]float64, cd)
			for c := range L.conv {
				L.conv[c] = flat[c*cfg.ConvKernel : (c+1)*cfg.ConvKernel]
			}
			L.aLog = g.vec(p+"linear_attn.A_log", nv, 0.5, 0.5)
			L.dtBias = g.vec(p+"linear_attn.dt_bias", nv, 0, 1)
			L.gNorm = g.vec(p+"linear_attn.norm.weight", cfg.LinValueDim, 1, 0.2)
		}
		L.gate = g.mat(p+"mlp.gate_proj.weight", I, H, sd)
		L.up = g.mat(p+"mlp.up_proj.weight", I, H, sd)
		L.down = g.mat(p+"mlp.down_proj.weight", H, I, 1/math.Sqrt(float64(I)))
		m.layers = append(m.layers, L)
	}
	m.finalNorm = g.vec(normName, H, 0, 0.2)
	m.head = g.mat(headName, cfg.Vocab, H, 1/math.Sqrt(float64(H)))
	return m, g.src
}

func (m *nModel) newState() *nState {
	c := m.cfg
	st := &nState{}
	for _, L := range m.layers {
		if L.full {
			st.conv, st.S = append(st.conv, nil), append(st.S, nil)
		} else {
			cd := 2*c.LinKeyHeads*c.LinKeyDim + c.LinValueHeads*c.LinValueDim
			rows := make([][]float64, c.ConvKernel-1)
			for i := range rows {
				rows[i] = make([]float64, cd)
			}
			S := make([][][]float64, c.LinValueHeads)
			for h := range S {
				S[h] = make([][]float64, c.LinKeyDim)
				for i := range S[h] {
					S[h][i] = make([]float64, c.LinValueDim)
				}
			}
			st.conv, st.S = append(st.conv, rows), append(st.S, S)
		}
		st.K, st.V = append(st.K, nil), append(st.V, nil)
	}
	return st
}

func nMatVec(w [][]float64, x []float64) []float64 {
	y := make([]float64, len(w))
	for i, row := range w {
		for j, v := range row {
			y[i] += v * x[j]
		}
	}
	return y
}

func nRMS(x []float64, eps float64) []float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	r := 1 / math.Sqrt(s/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * r
	}
	return out
}

// nNorm is the zero-centred norm: rms(x)·(1+w).
func nNorm(x, w []float64, eps float64) []float64 {
	out := nRMS(x, eps)
	for i := range out {
		out[i] *= 1 + w[i]
	}
	return out
}

func nSilu(x float64) float64    { return x / (1 + math.Exp(-x)) }
func nSigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
func nSoftplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log(1 + math.Exp(x))
}
func nF16(x float64) float64 { return float64(float16.Fromfloat32(float32(x)).Float32()) }

func nL2(x []float64) {
	var s float64
	for _, v := range x {
		s += v * v
	}
	r := 1 / math.Sqrt(s+1e-6)
	for i := range x {
		x[i] *= r
	}
}

// gdn is one Gated DeltaNet step for layer li on the normed input h.
func (m *nModel) gdn(st *nState, li int, h []float64) []float64 {
	c, L := m.cfg, m.layers[li]
	nk, nv, dk, dv := c.LinKeyHeads, c.LinValueHeads, c.LinKeyDim, c.LinValueDim
	raw := nMatVec(L.qkv, h)
	z, b, a := nMatVec(L.z, h), nMatVec(L.b, h), nMatVec(L.a, h)
	K := c.ConvKernel
	window := append(append([][]float64{}, st.conv[li]...), raw) // K rows, oldest first
	conv := make([]float64, len(raw))
	for ch := range raw {
		var s float64
		for j := 0; j < K; j++ {
			s += L.conv[ch][j] * window[j][ch]
		}
		conv[ch] = nSilu(s)
	}
	st.conv[li] = window[1:]
	q, k, v := conv[:nk*dk], conv[nk*dk:2*nk*dk], conv[2*nk*dk:]
	out := make([]float64, nv*dv)
	for hv := 0; hv < nv; hv++ {
		kh := hv / (nv / nk)
		qh := append([]float64(nil), q[kh*dk:(kh+1)*dk]...)
		kk := append([]float64(nil), k[kh*dk:(kh+1)*dk]...)
		nL2(qh)
		nL2(kk)
		for i := range qh {
			qh[i] /= math.Sqrt(float64(dk))
		}
		beta := nSigmoid(b[hv])
		g := -math.Exp(L.aLog[hv]) * nSoftplus(a[hv]+L.dtBias[hv])
		S := st.S[li][hv]
		for i := range S {
			for j := range S[i] {
				S[i][j] *= math.Exp(g)
			}
		}
		for j := 0; j < dv; j++ {
			var mem float64
			for i := 0; i < dk; i++ {
				mem += S[i][j] * kk[i]
			}
			delta := (v[hv*dv+j] - mem) * beta
			for i := 0; i < dk; i++ {
				S[i][j] += kk[i] * delta
			}
		}
		o := make([]float64, dv)
		for j := range o {
			for i := 0; i < dk; i++ {
				o[j] += S[i][j] * qh[i]
			}
		}
		o = nRMS(o, c.Eps)
		for j := range o {
			out[hv*dv+j] = o[j] * L.gNorm[j] * nSilu(z[hv*dv+j])
		}
	}
	return nMatVec(L.out, out)
}

func (m *nModel) rope(x []float64, pos int) {
	c := m.cfg
	half := c.RotaryDim / 2
	for i := 0; i < half; i++ {
		f := 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.RotaryDim))
		cs, sn := math.Cos(float64(pos)*f), math.Sin(float64(pos)*f)
		a, b := x[i], x[i+half]
		x[i], x[i+half] = a*cs-b*sn, b*cs+a*sn
	}
}

// attn is one full-attention step for layer li at st.pos.
func (m *nModel) attn(st *nState, li int, h []float64) []float64 {
	c, L := m.cfg, m.layers[li]
	hd := c.HeadDim
	qg, k, v := nMatVec(L.q, h), nMatVec(L.k, h), nMatVec(L.v, h)
	krow := make([]float64, 0, len(k))
	for g := 0; g < c.KVHeads; g++ {
		kh := nNorm(k[g*hd:(g+1)*hd], L.kNorm, c.Eps)
		m.rope(kh, st.pos)
		krow = append(krow, kh...)
	}
	for i := range krow {
		krow[i] = nF16(krow[i])
	}
	vrow := make([]float64, len(v))
	for i := range v {
		vrow[i] = nF16(v[i])
	}
	st.K[li] = append(st.K[li], krow)
	st.V[li] = append(st.V[li], vrow)
	out := make([]float64, c.Heads*hd)
	for hh := 0; hh < c.Heads; hh++ {
		q := nNorm(qg[hh*2*hd:hh*2*hd+hd], L.qNorm, c.Eps)
		gate := qg[hh*2*hd+hd : (hh+1)*2*hd]
		m.rope(q, st.pos)
		g := hh / (c.Heads / c.KVHeads)
		scores := make([]float64, len(st.K[li]))
		mx := math.Inf(-1)
		for p, kr := range st.K[li] {
			for d := 0; d < hd; d++ {
				scores[p] += q[d] * kr[g*hd+d]
			}
			scores[p] /= math.Sqrt(float64(hd))
			mx = math.Max(mx, scores[p])
		}
		var sum float64
		for p := range scores {
			scores[p] = math.Exp(scores[p] - mx)
			sum += scores[p]
		}
		for d := 0; d < hd; d++ {
			var acc float64
			for p, vr := range st.V[li] {
				acc += scores[p] / sum * vr[g*hd+d]
			}
			out[hh*hd+d] = acc * nSigmoid(gate[d])
		}
	}
	return nMatVec(L.o, out)
}

func (m *nModel) mlp(li int, h []float64) []float64 {
	L := m.layers[li]
	g, u := nMatVec(L.gate, h), nMatVec(L.up, h)
	for i := range g {
		g[i] = nSilu(g[i]) * u[i]
	}
	return nMatVec(L.down, g)
}

// step feeds one token and returns its logits.
func (m *nModel) step(st *nState, id int) []float64 {
	c := m.cfg
	x := append([]float64(nil), m.embed[id]...)
	for li, L := range m.layers {
		h := nNorm(x, L.inNorm, c.Eps)
		var y []float64
		if L.full {
			y = m.attn(st, li, h)
		} else {
			y = m.gdn(st, li, h)
		}
		for i := range x {
			x[i] += y[i]
		}
		y = m.mlp(li, nNorm(x, L.postNorm, c.Eps))
		for i := range x {
			x[i] += y[i]
		}
	}
	st.pos++
	return nMatVec(m.head, nNorm(x, m.finalNorm, c.Eps))
}
