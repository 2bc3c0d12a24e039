package ref

import (
	"math"

	"github.com/forgedaemon/forged/ane/kernels"
	"github.com/forgedaemon/forged/ane/nn"
)

// forward runs ids at positions pos… through every layer. Attention history
// rows are written; DeltaNet state advances (saved first when verify, with
// the per-row inputs Accept replays). The last logitRows rows get logits.
func (s *Session) forward(ids []int, verify bool, logitRows int) {
	m, c := s.m, &s.m.cfg
	n, H := len(ids), c.Hidden
	s.gen++
	x := s.s.x[:n*H]
	for t, id := range ids {
		m.w.embed.Row(id, x[t*H:(t+1)*H])
	}
	h, y := s.s.h[:n*H], s.s.y[:n*H]
	F := len(m.opts.Taps) * H
	for li := range m.w.layers {
		L := &m.w.layers[li]
		for t := 0; t < n; t++ {
			nn.RMSNormCentered(h[t*H:(t+1)*H], x[t*H:(t+1)*H], L.inNorm, c.Eps)
		}
		if L.full {
			s.attention(li, L, h, y, n)
		} else {
			s.deltaNet(li, L, h, y, n, verify)
		}
		addTo(x, y)
		for t := 0; t < n; t++ {
			nn.RMSNormCentered(h[t*H:(t+1)*H], x[t*H:(t+1)*H], L.postNorm, c.Eps)
		}
		s.mlp(L, h, y, n)
		addTo(x, y)
		for k, tap := range m.opts.Taps {
			if tap == li {
				for t := 0; t < n; t++ {
					copy(s.s.feat[t*F+k*H:t*F+(k+1)*H], x[t*H:(t+1)*H])
				}
			}
		}
	}
	s.lastRows = n
	if logitRows > 0 {
		first := n - logitRows
		hn := h[:logitRows*H]
		for t := 0; t < logitRows; t++ {
			nn.RMSNormCentered(hn[t*H:(t+1)*H], x[(first+t)*H:(first+t+1)*H], m.w.finalNorm, c.Eps)
		}
		s.run.Apply(m.w.head, s.s.logits[:logitRows*c.Vocab], hn, logitRows)
	}
}

func addTo(x, y []float32) {
	y = y[:len(x)]
	for i := range x {
		x[i] += y[i]
	}
}

// rotateRows applies a block rotation to each of the n rows of x (width w).
func rotateRows(r interface{ Apply([]float32) }, x []float32, n, w int) {
	for t := 0; t < n; t++ {
		r.Apply(x[t*w : (t+1)*w])
	}
}

// mixerInput returns the input of the mixer's reader projections: h, or a
// rotated copy of it when the mixer was exported in a rotated basis.
func (s *Session) mixerInput(L *layer, h []float32, n int) []float32 {
	if L.mixIn == nil {
		return h
	}
	H := s.m.cfg.Hidden
	hr := s.s.hr[:n*H]
	copy(hr, h)
	rotateRows(L.mixIn, hr, n, H)
	return hr
}

// mlp computes y = down(silu(gate(h)) · up(h)), applying the online basis
// rotations (h and the product are overwritten).
func (s *Session) mlp(L *layer, h, y []float32, n int) {
	c := &s.m.cfg
	I := c.Intermediate
	if L.rotIn != nil {
		rotateRows(L.rotIn, h, n, c.Hidden)
	}
	g, u := s.s.gate[:n*I], s.s.up[:n*I]
	s.glu = gluTask{fn: &s.m.fn, g: g, u: u, n: n, width: I}
	s.run.ApplyPair(L.gate, L.up, g, u, h, n, &s.glu)
	s.glu = gluTask{}
	if L.rotMid != nil {
		rotateRows(L.rotMid, g, n, I)
	}
	s.run.Apply(L.down, y, g, n)
}

// deltaNet is the Gated DeltaNet mixer for n rows. The elementwise work
// runs on the workers as product epilogues (conv after qkv, the gates after
// b and a) and inside the delta rule (the gated output norm).
func (s *Session) deltaNet(li int, L *layer, h, y []float32, n int, verify bool) {
	c := &s.m.cfg
	cd, kd, vd := c.convDim(), c.keyDim(), c.valueDim()
	nk, nv, dk := c.LinKeyHeads, c.LinValueHeads, c.LinKeyDim
	if verify {
		copy(s.savedConv[li], s.conv[li])
		copy(s.savedRec[li], s.rec[li])
	}
	in := s.mixerInput(L, h, n)
	qkv, z, bb, ba := s.s.qkv[:n*cd], s.s.z[:n*vd], s.s.bb[:n*nv], s.s.ba[:n*nv]
	s.convT = convTask{s: s, li: li, w: L.convW, qkv: qkv, n: n}
	if verify {
		s.convT.raw = s.pRaw[li]
	}
	s.run.ApplyPair(L.qkv, nil, qkv, nil, in, n, &s.convT)
	s.convT = convTask{}
	s.run.Apply(L.z, z, in, n)
	s.gates = gateTask{L: L, fn: &s.m.fn, beta: bb, g: ba, n: n, heads: nv}
	s.run.ApplyPair(L.b, L.a, bb, ba, h, n, &s.gates)
	s.gates = gateTask{}
	o := s.s.o[:n*vd]
	qScale := float32(1 / math.Sqrt(float64(dk)))
	for t := 0; t < n; t++ {
		row := qkv[t*cd : (t+1)*cd]
		q, k, v := row[:kd], row[kd:2*kd], row[2*kd:]
		for hk := 0; hk < nk; hk++ {
			qh := q[hk*dk : (hk+1)*dk]
			nn.L2Normalize(qh, 1e-6)
			for i := range qh {
				qh[i] *= qScale
			}
			nn.L2Normalize(k[hk*dk:(hk+1)*dk], 1e-6)
		}
		beta, g := bb[t*nv:(t+1)*nv], ba[t*nv:(t+1)*nv]
		if verify {
			copy(s.pK[li][t*kd:(t+1)*kd], k)
			copy(s.pV[li][t*vd:(t+1)*vd], v)
			copy(s.pBeta[li][t*nv:(t+1)*nv], beta)
			copy(s.pG[li][t*nv:(t+1)*nv], g)
		}
		s.delta = deltaTask{s: s, S: s.rec[li], k: k, v: v, beta: beta, g: g,
			q: q, o: o[t*vd : (t+1)*vd], z: z[t*vd : (t+1)*vd], gNorm: L.gNorm}
		s.deltaStep()
	}
	if L.mixOut != nil {
		rotateRows(L.mixOut, o, n, vd)
	}
	s.run.Apply(L.out, y, o, n)
}

// convPush pushes a raw row into the conv history without computing output.
func (s *Session) convPush(li int, raw []float32) {
	c := &s.m.cfg
	K, cd := c.ConvKernel, c.convDim()
	if K < 2 {
		return
	}
	st := s.conv[li]
	copy(st, st[cd:(K-1)*cd])
	copy(st[(K-2)*cd:], raw)
}

// minParallelWork is the multiply-add count below which attention and the
// delta rule stay on the calling goroutine (a variable so tests can force
// the split on tiny models).
var minParallelWork = 1 << 15

// deltaStep applies one row of the gated delta rule (s.delta) to every
// value head: S ← S·e^g; S ← S + k ⊗ β(v − Sᵀk); o = Sᵀq, then the gated
// norm o ← rmsnorm(o)·w·silu(z) (when q is not nil). Key head hv/(nv/nk)
// serves value head hv (repeat_interleave). Heads are split across the
// session's workers when the state is large enough to pay.
func (s *Session) deltaStep() {
	c := &s.m.cfg
	parts := s.run.Pool().Workers()
	if c.LinValueHeads*c.LinKeyDim*c.LinValueDim < minParallelWork {
		parts = 1
	}
	s.run.Pool().Run(&s.delta, c.LinValueHeads, 1, parts)
	s.delta = deltaTask{}
}

type deltaTask struct {
	s                      *Session
	S, k, v, beta, g, q, o []float32
	z, gNorm               []float32 // the output gate and norm weight (with q)
}

func (d *deltaTask) RunRange(w, lo, hi int) {
	c := &d.s.m.cfg
	nv, dk, dv := c.LinValueHeads, c.LinKeyDim, c.LinValueDim
	ratio := nv / c.LinKeyHeads
	mem := d.s.s.kvmem[w*dv : (w+1)*dv]
	for hv := lo; hv < hi; hv++ {
		kh := hv / ratio
		kk := d.k[kh*dk : (kh+1)*dk]
		St := d.S[hv*dk*dv : (hv+1)*dk*dv]
		decay := float32(math.Exp(float64(d.g[hv])))
		clear(mem)
		kernels.ScaleAxpyRows(St, decay, mem, kk)
		vh, b := d.v[hv*dv:(hv+1)*dv], d.beta[hv]
		for j := range mem {
			mem[j] = (vh[j] - mem[j]) * b
		}
		if d.q == nil {
			for i, ki := range kk {
				kernels.Axpy(St[i*dv:(i+1)*dv], ki, mem)
			}
			continue
		}
		qq, oh := d.q[kh*dk:(kh+1)*dk], d.o[hv*dv:(hv+1)*dv]
		clear(oh)
		kernels.AxpyThenAxpyRows(St, kk, mem, oh, qq)
		r := nn.RMSScale(oh, c.Eps)
		d.s.m.fn.siluTo(mem, d.z[hv*dv:(hv+1)*dv]) // mem is free again
		for j := range oh {
			oh[j] = oh[j] * r * d.gNorm[j] * mem[j]
		}
	}
}

// attention is gated full attention with partial NeoX RoPE and GQA for n
// rows at positions pos…pos+n−1.
func (s *Session) attention(li int, L *layer, h, y []float32, n int) {
	c := &s.m.cfg
	nh, nkv, hd := c.Heads, c.KVHeads, c.HeadDim
	qw, kw := 2*nh*hd, nkv*hd
	in := s.mixerInput(L, h, n)
	qg, kk, vv := s.s.qg[:n*qw], s.s.kk[:n*kw], s.s.vv[:n*kw]
	s.run.Apply(L.q, qg, in, n)
	s.run.ApplyPair(L.k, L.v, kk, vv, in, n, nil)
	for t := 0; t < n; t++ {
		p := s.pos + t
		s.ropeTables(p)
		for g := 0; g < nkv; g++ {
			kr := kk[t*kw+g*hd : t*kw+(g+1)*hd]
			nn.RMSNormCentered(kr, kr, L.kNorm, c.Eps)
			s.rope(kr)
		}
		s.writeHistory(li, p, kk[t*kw:(t+1)*kw], vv[t*kw:(t+1)*kw])
	}
	// Queries: norm and RoPE per row (serial: the RoPE tables are shared).
	for t := 0; t < n; t++ {
		s.ropeTables(s.pos + t)
		for hh := 0; hh < nh; hh++ {
			q := qg[t*qw+hh*2*hd : t*qw+hh*2*hd+hd]
			nn.RMSNormCentered(q, q, L.qNorm, c.Eps)
			s.rope(q)
		}
	}
	att := s.s.att[:n*nh*hd]
	s.attn = attnTask{s: s, li: li, qg: qg, att: att, rows: n}
	parts := s.run.Pool().Workers()
	if n*nh*(s.pos+n)*hd < minParallelWork {
		parts = 1
	}
	s.run.Pool().Run(&s.attn, n*nh, 1, parts)
	s.attn = attnTask{}
	if L.mixOut != nil {
		rotateRows(L.mixOut, att, n, nh*hd)
	}
	s.run.Apply(L.o, y, att, n)
}

// attnTask computes the attention output of (row, head) pairs [lo, hi),
// each worker with its own score and value-row scratch.
type attnTask struct {
	s       *Session
	li      int
	qg, att []float32
	rows    int
}

// Uneven (kernels.UnevenTask): over a prompt's rows, a later row attends
// to more positions.
func (a *attnTask) Uneven() bool { return a.rows > 1 }

func (a *attnTask) RunRange(w, lo, hi int) {
	s, c := a.s, &a.s.m.cfg
	nh, nkv, hd := c.Heads, c.KVHeads, c.HeadDim
	qw, rep := 2*nh*hd, nh/nkv
	scale := float32(1 / math.Sqrt(float64(hd)))
	kc := s.kc[a.li]
	for pr := lo; pr < hi; pr++ {
		t, hh := pr/nh, pr%nh
		p := s.pos + t
		q := a.qg[t*qw+hh*2*hd : t*qw+hh*2*hd+hd]
		gate := a.qg[t*qw+hh*2*hd+hd : t*qw+(hh+1)*2*hd]
		g := hh / rep
		sc := s.s.scores[w*s.ctx : w*s.ctx+p+1]
		mx := float32(math.Inf(-1))
		for j := range sc {
			sc[j] = kernels.DotF16(kc[(j*nkv+g)*hd:(j*nkv+g+1)*hd], q) * scale
			mx = max(mx, sc[j])
		}
		for j := range sc {
			sc[j] -= mx
		}
		s.m.fn.expTo(sc, sc)
		var sum float64
		for _, e := range sc {
			sum += float64(e)
		}
		inv := float32(1 / sum)
		out := a.att[(t*nh+hh)*hd : (t*nh+hh+1)*hd]
		clear(out)
		for j, wt := range sc {
			s.addValue(a.li, j, g, wt*inv, out)
		}
		s.m.fn.sigmoidTo(gate, gate) // qg is scratch: each gate is read once
		for d := range out {
			out[d] *= gate[d]
		}
	}
}

// ropeTables fills cos/sin for position p (angles in float64).
func (s *Session) ropeTables(p int) {
	for i, f := range s.m.inv {
		sn, cs := math.Sincos(float64(p) * f)
		s.s.cos[i], s.s.sin[i] = float32(cs), float32(sn)
	}
}

// rope rotates the first RotaryDim dims of x NeoX-style (halves paired).
func (s *Session) rope(x []float32) {
	half := len(s.m.inv)
	for i := 0; i < half; i++ {
		x1, x2 := x[i], x[i+half]
		cs, sn := s.s.cos[i], s.s.sin[i]
		x[i] = x1*cs - x2*sn
		x[i+half] = x2*cs + x1*sn
	}
}
