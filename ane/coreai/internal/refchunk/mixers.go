package refchunk

import (
	"fmt"
	"math"
	"strconv"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/nn"
)

// call holds the inputs every layer of one chunk call shares.
type call struct {
	c                   *Chunk
	e                   Entry
	b                   Bufs
	d                   dims
	cos, sin, mask      []float32
	convSel, convSelOut []float32
	commit, commitLast  []float32
	valid               []float32 // 1 per real row (verify: all rows)
}

func (c *Chunk) newCall(e Entry, b Bufs) (*call, error) {
	k := &call{c: c, e: e, b: b, d: c.dims()}
	var err error
	for _, f := range []struct {
		dst  *[]float32
		name string
	}{{&k.cos, "cos"}, {&k.sin, "sin"}, {&k.mask, "mask"}, {&k.convSel, "conv_sel"},
		{&k.commit, "commit"}, {&k.commitLast, "commit_last"}} {
		if *f.dst, err = b.Floats(f.name); err != nil {
			return nil, err
		}
	}
	if e.Prefill {
		if k.convSelOut, err = b.Floats("conv_sel_out"); err != nil {
			return nil, err
		}
		if k.valid, err = b.Floats("valid"); err != nil {
			return nil, err
		}
	} else {
		k.valid = make([]float32, e.Rows)
		for i := range k.valid {
			k.valid[i] = 1
		}
	}
	return k, nil
}

// deltaNet is the Gated DeltaNet mixer of chunk layer j over the call's rows.
func (k *call) deltaNet(j int, L *layerW, h []float32) ([]float32, error) {
	d, T, P, R := k.d, k.e.Rows, k.c.Pend, k.d.R
	js := strconv.Itoa(j)
	conv, err := k.b.Floats("conv" + js)
	if err != nil {
		return nil, err
	}
	rec, err := k.b.Floats("rec" + js)
	if err != nil {
		return nil, err
	}
	pend, err := k.b.Floats("pend" + js)
	if err != nil {
		return nil, err
	}
	// 1. Lazy commit of the previous call's accepted rows into S (×64).
	S := rec
	k.commitPending(S, pend)

	// 2. Causal conv over [R selected history rows | T new rows].
	kd, vd := d.nk*d.dk, d.nv*d.dv
	raw := matmul(h, L.qkv, T, d.H, d.CD)
	rows := make([]float32, (R+T)*d.CD)
	for r := 0; r < R; r++ {
		for i := 0; i < P+R; i++ {
			if s := k.convSel[r*(P+R)+i]; s != 0 {
				for ch := 0; ch < d.CD; ch++ {
					rows[r*d.CD+ch] += s * conv[i*d.CD+ch]
				}
			}
		}
	}
	copy(rows[R*d.CD:], raw)
	K := R + 1
	act := make([]float32, T*d.CD)
	for t := 0; t < T; t++ {
		for ch := 0; ch < d.CD; ch++ {
			var acc float32
			for q := 0; q < K; q++ {
				acc += rows[(t+q)*d.CD+ch] * L.convW[ch*K+q]
			}
			act[t*d.CD+ch] = silu(acc)
		}
	}
	convOut := rows
	if k.e.Prefill { // the R rows ending at the last valid token, then zeros
		convOut = make([]float32, (P+R)*d.CD)
		for r := 0; r < R; r++ {
			for i := 0; i < T+R; i++ {
				if s := k.convSelOut[r*(T+R)+i]; s != 0 {
					for ch := 0; ch < d.CD; ch++ {
						convOut[r*d.CD+ch] += s * rows[i*d.CD+ch]
					}
				}
			}
		}
	}
	if err := k.b.Store("conv"+js+"_out", convOut); err != nil {
		return nil, err
	}

	// 3. Per-row q, k, v, beta, g.
	z := matmul(h, L.z, T, d.H, vd)
	bb := matmul(h, L.b, T, d.H, d.nv)
	ba := matmul(h, L.a, T, d.H, d.nv)
	qs := float32(GDNSQ / math.Sqrt(float64(d.dk)))
	for t := 0; t < T; t++ {
		row := act[t*d.CD : (t+1)*d.CD]
		for hk := 0; hk < d.nk; hk++ {
			q := row[hk*d.dk : (hk+1)*d.dk]
			nn.L2Normalize(q, 1e-6)
			for i := range q {
				q[i] *= qs
			}
			nn.L2Normalize(row[kd+hk*d.dk:kd+(hk+1)*d.dk], 1e-6)
		}
		for i := 2 * kd; i < d.CD; i++ {
			row[i] *= GDNSV
		}
		for hv := 0; hv < d.nv; hv++ {
			i := t*d.nv + hv
			bb[i] = nn.Sigmoid(bb[i]) * k.valid[t]
			ba[i] = float32(-math.Exp(float64(L.aLog[hv]))*nn.SoftplusStable(float64(ba[i])+float64(L.dtBias[hv]))) * k.valid[t]
		}
	}

	// 4. Chunkwise gated delta rule in sub-chunks; verify commits nothing.
	o := make([]float32, T*vd)
	pendOut := make([]float32, len(pend))
	sub := T
	if k.e.Prefill {
		sub = SubRows
	}
	for t0 := 0; t0 < T; t0 += sub {
		n := min(sub, T-t0)
		blk := k.block(act[t0*d.CD:(t0+n)*d.CD], bb[t0*d.nv:(t0+n)*d.nv], ba[t0*d.nv:(t0+n)*d.nv], n)
		blk.outputs(S, o[t0*vd:(t0+n)*vd])
		if k.e.Prefill {
			blk.commit(S, n)
		} else {
			blk.save(pendOut, P)
		}
	}
	if err := k.b.Store("rec"+js+"_out", S); err != nil {
		return nil, err
	}
	if err := k.b.Store("pend"+js+"_out", pendOut); err != nil {
		return nil, err
	}

	// 5. Gated RMSNorm (eps scaled by the graph's (16·64)²) · silu(z), out_proj.
	eps := k.c.w.Cfg.RMSNormEps * GDNSQ * GDNSQ * GDNSV * GDNSV
	for t := 0; t < T; t++ {
		for hv := 0; hv < d.nv; hv++ {
			oh := o[t*vd+hv*d.dv : t*vd+(hv+1)*d.dv]
			r := nn.RMSScale(oh, eps)
			for i := range oh {
				oh[i] = oh[i] * r * L.gNorm[i] * silu(z[t*vd+hv*d.dv+i])
			}
		}
	}
	return matmul(o, L.out, T, vd, d.H), nil
}

// commitPending applies S' = S·e^total + Σ_j commit_j·e^{min(total−cum_j,0)}·k_jᵀ(u_j − wk_j·S)
// per value head, total = cum at commit_last.
func (k *call) commitPending(S, pend []float32) {
	d, P := k.d, k.c.Pend
	rows := 3*P + 1
	for hv := 0; hv < d.nv; hv++ {
		ph := pend[hv*rows*d.W : (hv+1)*rows*d.W]
		cum := ph[3*P*d.W : 3*P*d.W+P]
		var total float32
		some := false
		for j := 0; j < P; j++ {
			total += k.commitLast[j] * cum[j]
			some = some || k.commit[j] != 0
		}
		if !some {
			continue
		}
		Sh := S[hv*d.dk*d.dv : (hv+1)*d.dk*d.dv]
		delta := make([]float32, P*d.dv) // u_j − wk_j·S, from the state before the commit
		for j := 0; j < P; j++ {
			if k.commit[j] == 0 {
				continue
			}
			u, wk := ph[(P+j)*d.W:(P+j)*d.W+d.dv], ph[(2*P+j)*d.W:(2*P+j)*d.W+d.dk]
			dj := delta[j*d.dv : (j+1)*d.dv]
			copy(dj, u)
			for i, w := range wk {
				for c := 0; c < d.dv; c++ {
					dj[c] -= w * Sh[i*d.dv+c]
				}
			}
		}
		decay := float32(math.Exp(float64(total)))
		for i := range Sh {
			Sh[i] *= decay
		}
		for j := 0; j < P; j++ {
			if k.commit[j] == 0 {
				continue
			}
			f := k.commit[j] * float32(math.Exp(math.Min(float64(total-cum[j]), 0)))
			kj, dj := ph[j*d.W:j*d.W+d.dk], delta[j*d.dv:(j+1)*d.dv]
			for i, kv := range kj {
				for c := 0; c < d.dv; c++ {
					Sh[i*d.dv+c] += f * kv * dj[c]
				}
			}
		}
	}
}

// block is one sub-chunk's WY quantities per value head: k rows, u rows
// (×64), wk rows (β·e^cum·k, triangularly solved) and cumulative gates.
type block struct {
	d           dims
	n           int
	q, k, u, wk [][]float32 // [hv][t*dim]
	cum         [][]float32 // [hv][t]
}

func (k *call) block(act, beta, g []float32, n int) *block {
	d := k.d
	kd := d.nk * d.dk
	ratio := d.nv / d.nk
	b := &block{d: d, n: n}
	for hv := 0; hv < d.nv; hv++ {
		kh := hv / ratio
		q, kk := make([]float32, n*d.dk), make([]float32, n*d.dk)
		u, wk := make([]float32, n*d.dv), make([]float32, n*d.dk)
		cum := make([]float32, n)
		var c float32
		for t := 0; t < n; t++ {
			row := act[t*d.CD : (t+1)*d.CD]
			copy(q[t*d.dk:], row[kh*d.dk:(kh+1)*d.dk])
			copy(kk[t*d.dk:], row[kd+kh*d.dk:kd+(kh+1)*d.dk])
			c += g[t*d.nv+hv]
			cum[t] = c
		}
		for t := 0; t < n; t++ {
			bt := beta[t*d.nv+hv]
			v := act[t*d.CD+2*kd+hv*d.dv : t*d.CD+2*kd+(hv+1)*d.dv]
			ut, wt := u[t*d.dv:(t+1)*d.dv], wk[t*d.dk:(t+1)*d.dk]
			e := float32(math.Exp(float64(cum[t])))
			kt := kk[t*d.dk : (t+1)*d.dk]
			for i := range ut {
				ut[i] = bt * v[i]
			}
			for i := range wt {
				wt[i] = bt * e * kt[i]
			}
			for s := 0; s < t; s++ {
				a := bt * float32(math.Exp(float64(cum[t]-cum[s]))) * dot(kt, kk[s*d.dk:(s+1)*d.dk])
				for i := range ut {
					ut[i] -= a * u[s*d.dv+i]
				}
				for i := range wt {
					wt[i] -= a * wk[s*d.dk+i]
				}
			}
		}
		b.q, b.k, b.u, b.wk, b.cum = append(b.q, q), append(b.k, kk), append(b.u, u), append(b.wk, wk), append(b.cum, cum)
	}
	return b
}

func dot(a, b []float32) float32 {
	var s float32
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// outputs writes o_t = q_t·S_t for every row, S_t the state after row t.
func (b *block) outputs(S, o []float32) {
	d := b.d
	vd := d.nv * d.dv
	for hv := 0; hv < d.nv; hv++ {
		Sh := S[hv*d.dk*d.dv : (hv+1)*d.dk*d.dv]
		delta := b.deltas(hv, Sh, b.n)
		for t := 0; t < b.n; t++ {
			qt := b.q[hv][t*d.dk : (t+1)*d.dk]
			ot := o[t*vd+hv*d.dv : t*vd+(hv+1)*d.dv]
			e := float32(math.Exp(float64(b.cum[hv][t])))
			for i, qi := range qt {
				for c := 0; c < d.dv; c++ {
					ot[c] += e * qi * Sh[i*d.dv+c]
				}
			}
			for s := 0; s <= t; s++ {
				a := float32(math.Exp(float64(b.cum[hv][t]-b.cum[hv][s]))) * dot(qt, b.k[hv][s*d.dk:(s+1)*d.dk])
				for c := 0; c < d.dv; c++ {
					ot[c] += a * delta[s*d.dv+c]
				}
			}
		}
	}
}

// deltas returns u_s − wk_s·S for the first n rows of value head hv.
func (b *block) deltas(hv int, Sh []float32, n int) []float32 {
	d := b.d
	delta := make([]float32, n*d.dv)
	for s := 0; s < n; s++ {
		ds := delta[s*d.dv : (s+1)*d.dv]
		copy(ds, b.u[hv][s*d.dv:(s+1)*d.dv])
		for i, w := range b.wk[hv][s*d.dk : (s+1)*d.dk] {
			for c := 0; c < d.dv; c++ {
				ds[c] -= w * Sh[i*d.dv+c]
			}
		}
	}
	return delta
}

// commit advances S past the first n rows.
func (b *block) commit(S []float32, n int) {
	d := b.d
	for hv := 0; hv < d.nv; hv++ {
		Sh := S[hv*d.dk*d.dv : (hv+1)*d.dk*d.dv]
		delta := b.deltas(hv, Sh, n)
		total := b.cum[hv][n-1]
		e := float32(math.Exp(float64(total)))
		for i := range Sh {
			Sh[i] *= e
		}
		for s := 0; s < n; s++ {
			f := float32(math.Exp(float64(total - b.cum[hv][s])))
			for i, kv := range b.k[hv][s*d.dk : (s+1)*d.dk] {
				for c := 0; c < d.dv; c++ {
					Sh[i*d.dv+c] += f * kv * delta[s*d.dv+c]
				}
			}
		}
	}
}

// save writes the rows as pending state: [0:P] k, [P:2P] u, [2P:3P] wk, row 3P cum.
func (b *block) save(pend []float32, P int) {
	d := b.d
	rows := 3*P + 1
	for hv := 0; hv < d.nv; hv++ {
		ph := pend[hv*rows*d.W : (hv+1)*rows*d.W]
		for t := 0; t < b.n && t < P; t++ {
			copy(ph[t*d.W:], b.k[hv][t*d.dk:(t+1)*d.dk])
			copy(ph[(P+t)*d.W:], b.u[hv][t*d.dv:(t+1)*d.dv])
			copy(ph[(2*P+t)*d.W:], b.wk[hv][t*d.dk:(t+1)*d.dk])
			ph[3*P*d.W+t] = b.cum[hv][t]
		}
	}
}

// attention is gated full attention of chunk layer j: the new rows attend
// to the masked history in the host-owned K/V buffers and causally to
// each other; their K/V rows are outputs for the host to append.
func (k *call) attention(j int, L *layerW, h []float32) ([]float32, error) {
	d, T, Lh := k.d, k.e.Rows, k.e.KVLen
	js := strconv.Itoa(j)
	cfg := k.c.w.Cfg
	qw, kw := 2*d.nh*d.hd, d.nkv*d.hd
	qg := matmul(h, L.q, T, d.H, qw)
	kk := matmul(h, L.k, T, d.H, kw)
	vv := matmul(h, L.v, T, d.H, kw)
	for t := 0; t < T; t++ {
		for g := 0; g < d.nkv; g++ {
			kr := kk[t*kw+g*d.hd : t*kw+(g+1)*d.hd]
			nn.RMSNormCentered(kr, kr, L.kNorm, cfg.RMSNormEps)
			k.rope(kr, t)
		}
		for hh := 0; hh < d.nh; hh++ {
			q := qg[t*qw+hh*2*d.hd : t*qw+hh*2*d.hd+d.hd]
			nn.RMSNormCentered(q, q, L.qNorm, cfg.RMSNormEps)
			k.rope(q, t)
		}
	}
	// New rows leave as fp16 (nkv, T, hd); the block attends to those values.
	kNew, vNew := make([]float32, d.nkv*T*d.hd), make([]float32, d.nkv*T*d.hd)
	for t := 0; t < T; t++ {
		for g := 0; g < d.nkv; g++ {
			copy(kNew[(g*T+t)*d.hd:], kk[t*kw+g*d.hd:t*kw+(g+1)*d.hd])
			copy(vNew[(g*T+t)*d.hd:], vv[t*kw+g*d.hd:t*kw+(g+1)*d.hd])
		}
	}
	if err := k.b.Store("k"+js+"_new", kNew); err != nil {
		return nil, err
	}
	if err := k.b.Store("v"+js+"_new", vNew); err != nil {
		return nil, err
	}
	half.F16ToF32(kNew, u16(k.b["k"+js+"_new"]))
	half.F16ToF32(vNew, u16(k.b["v"+js+"_new"]))
	hk, err := k.history("k"+js, "ks"+js, k.c.KV.K8, k.c.KV.KeysT)
	if err != nil {
		return nil, err
	}
	hv, err := k.history("v"+js, "vs"+js, k.c.KV.V8 || k.c.KV.K8, false)
	if err != nil {
		return nil, err
	}
	keyAt := func(g, p int) func(i int) float32 {
		if k.c.KV.KeysT {
			return func(i int) float32 { return hk[(g*d.hd+i)*Lh+p] }
		}
		return func(i int) float32 { return hk[(g*Lh+p)*d.hd+i] }
	}
	scale := float32(1 / math.Sqrt(float64(d.hd)))
	att := make([]float32, T*d.nh*d.hd)
	sc := make([]float32, Lh+T)
	for t := 0; t < T; t++ {
		for hh := 0; hh < d.nh; hh++ {
			g := hh / (d.nh / d.nkv)
			q := qg[t*qw+hh*2*d.hd : t*qw+hh*2*d.hd+d.hd]
			gate := qg[t*qw+hh*2*d.hd+d.hd : t*qw+(hh+1)*2*d.hd]
			mx := float32(math.Inf(-1))
			for p := 0; p < Lh; p++ {
				key := keyAt(g, p)
				var s float32
				for i, qi := range q {
					s += qi * key(i)
				}
				sc[p] = s*scale + k.mask[p]
				mx = max(mx, sc[p])
			}
			for s := 0; s <= t; s++ {
				sc[Lh+s] = dot(q, kNew[(g*T+s)*d.hd:(g*T+s+1)*d.hd]) * scale
				mx = max(mx, sc[Lh+s])
			}
			var sum float64
			out := att[(t*d.nh+hh)*d.hd : (t*d.nh+hh+1)*d.hd]
			for p := 0; p < Lh+t+1; p++ {
				e := float32(math.Exp(float64(sc[p] - mx)))
				sum += float64(e)
				var v []float32
				if p < Lh {
					v = hv[(g*Lh+p)*d.hd : (g*Lh+p+1)*d.hd]
				} else {
					v = vNew[(g*T+p-Lh)*d.hd : (g*T+p-Lh+1)*d.hd]
				}
				for i := range out {
					out[i] += e * v[i]
				}
			}
			inv := float32(1 / sum)
			for i := range out {
				out[i] *= inv * nn.Sigmoid(gate[i])
			}
		}
	}
	return matmul(att, L.o, T, d.nh*d.hd, d.H), nil
}

// history decodes a key or value history: fp16, or int8 codes × the fp16
// scale of their (kv head, token) — (nkv, L, hd), or (nkv, hd, L) for
// transposed keys.
func (k *call) history(name, scaleName string, quantized, transposed bool) ([]float32, error) {
	if !quantized {
		return k.b.Floats(name)
	}
	codes, ok := k.b[name]
	if !ok {
		return nil, fmt.Errorf("refchunk: tensor %s is not bound", name)
	}
	scales, err := k.b.Floats(scaleName)
	if err != nil {
		return nil, err
	}
	hd, L := k.d.hd, len(scales)/k.d.nkv
	v := make([]float32, len(codes))
	for i, c := range i8(codes) {
		tok := i / hd // (g, p) flattened
		if transposed {
			tok = i/(hd*L)*L + i%L
		}
		v[i] = float32(c) * scales[tok]
	}
	return v, nil
}

// rope rotates the first rot dims NeoX-style with row t of the tables.
func (k *call) rope(x []float32, t int) {
	rot := k.d.rot
	h := rot / 2
	cs, sn := k.cos[t*rot:(t+1)*rot], k.sin[t*rot:(t+1)*rot]
	for i := 0; i < h; i++ {
		x1, x2 := x[i], x[i+h]
		x[i] = x1*cs[i] - x2*sn[i]
		x[i+h] = x2*cs[i+h] + x1*sn[i+h]
	}
}
