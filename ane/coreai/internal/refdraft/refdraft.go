// Package refdraft computes the DFlash2 drafter package's two Core AI entries
// (Anemll/anemll-forge coreai/dflash2_coreai_build.py) on the CPU, published
// inputs to published outputs:
//
//	ctx64: feat (1,F,1,RP), ctx_cos/ctx_sin (RP,hd) → k_new{i}/v_new{i} (nkv,RP,hd)
//	draft: feat (1,F,1,R), ctx_cos/ctx_sin (R,hd), anchor (1,H,1,1), q_cos/q_sin (T,hd),
//	       mask (T, W+R+T), kc{i}/vc{i} (nkv,W,hd)
//	       → k_new{i}/v_new{i} (nkv,R,hd), logits (T−1,V), hp (1,rank,1,T), hidden (1,H,1,T)
//
// with the shapes generalised by the drafter config. The math is
// ane/speculative/dflash's Net, so the Core AI driver run over these entries through
// the test bridge must propose what the CPU drafter proposes. It exists so
// the drafter driver can be tested on Linux; the compiled graph's own
// tricks (residual /256, LUT refolds, MASK_SCALE) are not modelled.
package refdraft

import (
	"fmt"
	"strconv"

	"github.com/forgedaemon/forged/ane/coreai/internal/refchunk"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
)

// Entry names of the drafter package.
const (
	Draft = "draft"
	Ctx64 = "ctx64"
)

// Program computes the entries of one drafter package.
type Program struct {
	net                 *dflash.Net
	W, R, RP, T         int
	featScale           float64
	H, F, hd, nkv, rank int
	vocab, layers       int
}

// New lays out the entries for net with the sidecar's W, R and RP and
// feature scale (the host multiplies features by it; the graph divides
// them back out — the RMSNorm after fc makes that immaterial up to eps).
func New(net *dflash.Net, meta *drafter.Metadata) (*Program, error) {
	p, err := NewLayout(net.Config(), net.Features(), meta)
	if err != nil {
		return nil, err
	}
	p.net = net
	return p, nil
}

// NewLayout describes the entries of a drafter with cfg and features
// values per context row without weights: Tensors works (for laying out
// functions at any scale), Run does not.
func NewLayout(cfg *hfconfig.Drafter, features int, meta *drafter.Metadata) (*Program, error) {
	if meta.W != cfg.SlidingWindow || meta.R < 1 || meta.RP < 1 {
		return nil, fmt.Errorf("refdraft: sidecar W=%d R=%d RP=%d against sliding_window %d", meta.W, meta.R, meta.RP, cfg.SlidingWindow)
	}
	fs := meta.FeatScale
	if fs == 0 {
		fs = 1
	}
	return &Program{W: meta.W, R: meta.R, RP: meta.RP, T: cfg.DFlash.BlockSize, featScale: fs,
		H: cfg.HiddenSize, F: features, hd: cfg.HeadDim, nkv: cfg.NumKeyValueHeads,
		rank: cfg.DFlash.SelectorRank, vocab: cfg.VocabSize, layers: cfg.NumHiddenLayers}, nil
}

// Tensors lists an entry's inputs then outputs, in the published order.
func (p *Program) Tensors(entry string) ([]refchunk.Spec, error) {
	in := func(name string, shape ...int) refchunk.Spec {
		return refchunk.Spec{Role: refchunk.Input, Name: name, DType: "f16", Shape: shape}
	}
	out := func(name string, shape ...int) refchunk.Spec {
		return refchunk.Spec{Role: refchunk.Output, Name: name, DType: "f16", Shape: shape}
	}
	var s []refchunk.Spec
	rows := p.RP
	switch entry {
	case Ctx64:
		s = append(s, in("feat", 1, p.F, 1, p.RP), in("ctx_cos", p.RP, p.hd), in("ctx_sin", p.RP, p.hd))
	case Draft:
		rows = p.R
		s = append(s, in("feat", 1, p.F, 1, p.R), in("ctx_cos", p.R, p.hd), in("ctx_sin", p.R, p.hd),
			in("anchor", 1, p.H, 1, 1), in("q_cos", p.T, p.hd), in("q_sin", p.T, p.hd), in("mask", p.T, p.W+p.R+p.T))
		for i := 0; i < p.layers; i++ {
			s = append(s, in("kc"+strconv.Itoa(i), p.nkv, p.W, p.hd), in("vc"+strconv.Itoa(i), p.nkv, p.W, p.hd))
		}
	default:
		return nil, fmt.Errorf("refdraft: no entry %q (the package has %s and %s)", entry, Draft, Ctx64)
	}
	for i := 0; i < p.layers; i++ {
		s = append(s, out("k_new"+strconv.Itoa(i), p.nkv, rows, p.hd), out("v_new"+strconv.Itoa(i), p.nkv, rows, p.hd))
	}
	if entry == Draft {
		s = append(s, out("logits", p.T-1, p.vocab), out("hp", 1, p.rank, 1, p.T), out("hidden", 1, p.H, 1, p.T))
	}
	return s, nil
}

// Run computes entry over the bound tensors (name → packed memory).
func (p *Program) Run(entry string, tensors map[string][]byte) error {
	if p.net == nil {
		return fmt.Errorf("refdraft: %s: a layout without weights cannot run", entry)
	}
	specs, err := p.Tensors(entry)
	if err != nil {
		return err
	}
	if err := refchunk.CheckSizes(entry, specs, tensors); err != nil {
		return err
	}
	b := refchunk.Bufs(tensors)
	rows := p.RP
	if entry == Draft {
		rows = p.R
	}
	feat, err := b.Floats("feat")
	if err != nil {
		return err
	}
	f := refchunk.FromBC1S(feat, p.F, rows)
	for i := range f {
		f[i] = float32(float64(f[i]) / p.featScale)
	}
	ctxRope, err := p.rope(b, "ctx_cos", "ctx_sin", rows)
	if err != nil {
		return err
	}
	k, v := p.net.ContextKV(f, rows, ctxRope)
	for l := range k {
		if err := p.storeHeads(b, "k_new"+strconv.Itoa(l), k[l], rows); err != nil {
			return err
		}
		if err := p.storeHeads(b, "v_new"+strconv.Itoa(l), v[l], rows); err != nil {
			return err
		}
	}
	if entry == Ctx64 {
		return nil
	}
	return p.block(b, k, v)
}

// block runs the draft entry's block over [ring | new rows] with the
// host's additive mask.
func (p *Program) block(b refchunk.Bufs, newK, newV [][]float32) error {
	mask, err := b.Floats("mask")
	if err != nil {
		return err
	}
	cols := p.W + p.R + p.T
	// Only columns some row can see take part: a −1e4 bias contributes
	// exp(−1e4) = 0 anyway, and skipping saves decoding hidden slots.
	var keep []int
	for j := 0; j < p.W+p.R; j++ {
		for t := 0; t < p.T; t++ {
			if mask[t*cols+j] > refchunk.MaskOff/2 {
				keep = append(keep, j)
				break
			}
		}
	}
	for t := 0; t < p.T; t++ {
		for j := p.W + p.R; j < cols; j++ {
			if mask[t*cols+j] != 0 {
				return fmt.Errorf("draft: mask row %d hides block column %d (the block is non-causal: its columns must be 0)", t, j-p.W-p.R)
			}
		}
	}
	kv := p.nkv * p.hd
	keys := dflash.Keys{N: len(keep), K: make([][]float32, p.layers), V: make([][]float32, p.layers),
		Bias: func(t, s int) float64 { return float64(mask[t*cols+keep[s]]) }}
	for l := 0; l < p.layers; l++ {
		kc, err := b.F16("kc" + strconv.Itoa(l))
		if err != nil {
			return err
		}
		vc, err := b.F16("vc" + strconv.Itoa(l))
		if err != nil {
			return err
		}
		K, V := make([]float32, len(keep)*kv), make([]float32, len(keep)*kv)
		for s, j := range keep {
			for g := 0; g < p.nkv; g++ {
				dst := s*kv + g*p.hd
				if j < p.W { // ring slot j, stored (nkv, W, hd)
					src := (g*p.W + j) * p.hd
					half.F16ToF32(K[dst:dst+p.hd], kc[src:src+p.hd])
					half.F16ToF32(V[dst:dst+p.hd], vc[src:src+p.hd])
				} else { // this call's new row j − W, computed above
					copy(K[dst:dst+p.hd], newK[l][(j-p.W)*kv+g*p.hd:])
					copy(V[dst:dst+p.hd], newV[l][(j-p.W)*kv+g*p.hd:])
				}
			}
		}
		keys.K[l], keys.V[l] = K, V
	}
	anchor, err := b.Floats("anchor")
	if err != nil {
		return err
	}
	// The mask rows' embedding is a constant of the graph; row 0 is the
	// host's anchor embedding.
	x := p.net.BlockInput(p.net.Config().DFlash.MaskTokenID)
	copy(x[:p.H], anchor)
	qRope, err := p.rope(b, "q_cos", "q_sin", p.T)
	if err != nil {
		return err
	}
	h := p.net.Block(x, qRope, keys)
	if err := b.Store("logits", p.net.Logits(h)); err != nil {
		return err
	}
	if err := b.Store("hp", refchunk.ToBC1S(p.net.Project(h, p.T), p.rank, p.T)); err != nil {
		return err
	}
	return b.Store("hidden", refchunk.ToBC1S(h, p.H, p.T))
}

// rope reads a (rows, hd) cos/sin table pair; the NeoX tables repeat
// their first half, which is all the rotation reads.
func (p *Program) rope(b refchunk.Bufs, cosName, sinName string, rows int) (dflash.Rope, error) {
	cs, err := b.Floats(cosName)
	if err != nil {
		return dflash.Rope{}, err
	}
	sn, err := b.Floats(sinName)
	if err != nil {
		return dflash.Rope{}, err
	}
	h := p.hd / 2
	r := dflash.Rope{Cos: make([]float64, rows*h), Sin: make([]float64, rows*h)}
	for t := 0; t < rows; t++ {
		for i := 0; i < h; i++ {
			r.Cos[t*h+i], r.Sin[t*h+i] = float64(cs[t*p.hd+i]), float64(sn[t*p.hd+i])
		}
	}
	return r, nil
}

// storeHeads writes rows of kv heads × head_dim as (nkv, rows, hd).
func (p *Program) storeHeads(b refchunk.Bufs, name string, x []float32, rows int) error {
	out := make([]float32, len(x))
	for t := 0; t < rows; t++ {
		for g := 0; g < p.nkv; g++ {
			copy(out[(g*rows+t)*p.hd:(g*rows+t+1)*p.hd], x[(t*p.nkv+g)*p.hd:])
		}
	}
	return b.Store(name, out)
}
