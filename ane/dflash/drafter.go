// Package dflash is the CPU reference of the DFlash2 block drafter
// (reference §2.2, §3.5): five layers that read the target's tap-layer
// features through a ring of keys and values by position, draft a block of
// anchor + 7 mask rows in one non-causal pass, score the 7 rows with the
// target's own LM head and pick the drafts with the candidate selector.
// It implements spec.Drafter. docs/DRAFTER.md records every convention.
package dflash

import (
	"fmt"
	"math"

	"github.com/forgedaemon/forged/ane/config"
	"github.com/forgedaemon/forged/ane/quant"
	"github.com/forgedaemon/forged/ane/spec"
)

// FlushRows is the block size of context flushes (the published ctx64
// entry); PendingRows is how many rows may wait for the next draft call.
const (
	FlushRows   = 64
	PendingRows = 8
)

// TargetWeights is what the drafter borrows from its target: the token
// embedding table and the LM head (ref.Model provides both).
type TargetWeights interface {
	EmbedRow(id int, dst []float32)
	LMHead() *quant.Linear
}

type layerWeights struct {
	inNorm, postNorm, qNorm, kNorm []float32
	q, k, v, o, gate, up, down     *quant.Linear
	attnKP, mlpKP                  *quant.Linear
	attnBase, mlpBase              []float32 // [side][tap][group]
}

// Drafter is one session's drafter: weights shared read-only, plus its own
// ring and pending context rows. It is not safe for concurrent use.
type Drafter struct {
	cfg     *config.Drafter
	feat    int // feature values per context row
	kvDim   int
	groups  int
	block   int
	fc      *quant.Linear
	ctxNorm []float32
	layers  []layerWeights
	norm    []float32
	hp      *quant.Linear
	pred    []float32 // predecessor codebook, vocab × rank
	succ    []float32 // successor codebook, vocab × rank
	head    *quant.Linear
	target  TargetWeights
	run     *quant.Runner
	inv     []float64 // RoPE inverse frequencies over all head dims

	// Ring: slot s holds the keys/values of position slotPos[s] (−1: empty),
	// slot = position mod W; grown on demand up to W slots.
	slotPos      []int
	ringK, ringV [][]float32 // per layer, slot-major
	pendingF     []float32
	pendingPos   []int
	lastPos      int // last context position added (−1: none)
}

// New builds a drafter from loaded weights over its target. threads is the
// matrix worker count (≤ 0: GOMAXPROCS). Drafters built from the same
// Weights share them (one LoadWeights, one New per session).
func New(w *Weights, target TargetWeights, threads int) (*Drafter, error) {
	cfg := w.Config
	head := target.LMHead()
	if head.Rows() != cfg.VocabSize || head.Cols() != cfg.HiddenSize {
		return nil, fmt.Errorf("drafter pairing: target LM head is %d×%d, drafter needs vocab_size %d × hidden_size %d",
			head.Rows(), head.Cols(), cfg.VocabSize, cfg.HiddenSize)
	}
	d := &Drafter{cfg: cfg, feat: w.Features, kvDim: cfg.NumKeyValueHeads * cfg.HeadDim,
		groups: cfg.HiddenSize / cfg.DFlash.ConvGroupSize, block: cfg.DFlash.BlockSize,
		head: head, target: target, lastPos: -1}
	shapes := map[string][]int{}
	for _, s := range CheckpointTensors(cfg, w.Features) {
		shapes[s.Name] = s.Shape
		if len(w.T[s.Name]) != shapeSize(s.Shape) {
			return nil, fmt.Errorf("drafter weights: %s has %d values, want shape %v", s.Name, len(w.T[s.Name]), s.Shape)
		}
	}
	for _, s := range SelectorTensors(cfg) {
		if len(w.T[s.Name]) != shapeSize(s.Shape) {
			return nil, fmt.Errorf("drafter selector: %s has %d values, want shape %v", s.Name, len(w.T[s.Name]), s.Shape)
		}
	}
	var linErr error
	lin := func(name string) *quant.Linear {
		m, err := quant.NewF32(shapes[name][0], shapes[name][1], w.T[name])
		var l *quant.Linear
		if err == nil {
			l, err = quant.NewLinear(name, m, nil, nil)
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
	d.pred, d.succ = w.T[PredecessorCodebook], w.T[SuccessorCodebook]
	half := cfg.HeadDim / 2
	d.inv = make([]float64, half)
	for i := range d.inv {
		d.inv[i] = 1 / math.Pow(cfg.RopeTheta, float64(2*i)/float64(cfg.HeadDim))
	}
	if linErr != nil {
		return nil, linErr
	}
	d.ringK = make([][]float32, cfg.NumHiddenLayers)
	d.ringV = make([][]float32, cfg.NumHiddenLayers)
	d.run = quant.NewRunner(threads)
	return d, nil
}

// Close stops the drafter's workers.
func (d *Drafter) Close() { d.run.Close() }

// Config is the drafter's configuration.
func (d *Drafter) Config() *config.Drafter { return d.cfg }

// Reset empties the ring and the pending rows (a new session, or a target
// restored to an earlier position).
func (d *Drafter) Reset() {
	d.slotPos = d.slotPos[:0]
	for l := range d.ringK {
		d.ringK[l], d.ringV[l] = d.ringK[l][:0], d.ringV[l][:0]
	}
	d.pendingF, d.pendingPos, d.lastPos = d.pendingF[:0], d.pendingPos[:0], -1
}

// AddContext queues the target's features of committed rows (positions
// strictly increasing, after every earlier row); while more than
// PendingRows wait, they are flushed into the ring in FlushRows blocks.
func (d *Drafter) AddContext(features []float32, positions []int) error {
	if len(features) != len(positions)*d.feat {
		return fmt.Errorf("drafter context: %d feature values for %d rows, want %d per row (taps × hidden)",
			len(features), len(positions), d.feat)
	}
	last := d.lastPos
	for i, p := range positions {
		if p <= last {
			return fmt.Errorf("drafter context: row %d is at position %d, not after position %d (Reset the drafter to rewind)", i, p, last)
		}
		last = p
	}
	for _, v := range features {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("drafter context: feature value %v is not finite", v)
		}
	}
	d.pendingF = append(d.pendingF, features...)
	d.pendingPos = append(d.pendingPos, positions...)
	d.lastPos = last
	for len(d.pendingPos) > PendingRows {
		d.flush(min(FlushRows, len(d.pendingPos)))
	}
	return nil
}

// flush projects the first n pending rows into every layer's ring.
func (d *Drafter) flush(n int) {
	if n == 0 {
		return
	}
	cfg := d.cfg
	h := cfg.HiddenSize
	c := make([]float32, n*h)
	d.run.Apply(d.fc, c, d.pendingF[:n*d.feat], n)
	for t := 0; t < n; t++ {
		rmsNorm(c[t*h:(t+1)*h], d.ctxNorm, cfg.RMSNormEps)
	}
	k := make([]float32, n*d.kvDim)
	v := make([]float32, n*d.kvDim)
	pos := d.pendingPos[:n]
	for l := range d.layers {
		L := &d.layers[l]
		d.run.Apply(L.k, k, c, n)
		d.run.Apply(L.v, v, c, n)
		d.normRope(k, L.kNorm, pos, cfg.NumKeyValueHeads)
		for t, p := range pos {
			s := d.slot(p)
			copy(d.ringK[l][s*d.kvDim:(s+1)*d.kvDim], k[t*d.kvDim:])
			copy(d.ringV[l][s*d.kvDim:(s+1)*d.kvDim], v[t*d.kvDim:])
		}
	}
	for _, p := range pos {
		d.slotPos[d.slot(p)] = p
	}
	d.pendingF = append(d.pendingF[:0], d.pendingF[n*d.feat:]...)
	d.pendingPos = append(d.pendingPos[:0], d.pendingPos[n:]...)
}

// slot returns position p's ring slot, growing the ring to hold it.
func (d *Drafter) slot(p int) int {
	s := p % d.cfg.SlidingWindow
	for len(d.slotPos) <= s {
		d.slotPos = append(d.slotPos, -1)
		for l := range d.ringK {
			d.ringK[l] = append(d.ringK[l], make([]float32, d.kvDim)...)
			d.ringV[l] = append(d.ringV[l], make([]float32, d.kvDim)...)
		}
	}
	return s
}

// normRope applies the per-head RMSNorm (plain gain) and RoPE over all
// head dims (NeoX half split) to rows of heads × head_dim at positions pos.
func (d *Drafter) normRope(x, gain []float32, pos []int, heads int) {
	hd := d.cfg.HeadDim
	half := hd / 2
	sin, cos := make([]float64, half), make([]float64, half)
	for t, p := range pos {
		for i := range sin {
			sin[i], cos[i] = math.Sincos(float64(p) * d.inv[i])
		}
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

// Propose drafts the tokens after anchor, which sits at position pos (not
// yet in the target): the pending context rows go into the ring, the block
// [anchor, mask × (block−1)] runs through the layers, the target's head
// scores rows 1.., and the selector walk picks one token per row.
func (d *Drafter) Propose(anchor, pos int) (spec.Proposal, error) {
	if anchor < 0 || anchor >= d.cfg.VocabSize {
		return spec.Proposal{}, fmt.Errorf("drafter: anchor token %d is outside the vocabulary [0, %d)", anchor, d.cfg.VocabSize)
	}
	if pos <= d.lastPos {
		return spec.Proposal{}, fmt.Errorf("drafter: anchor position %d is not after the last context position %d", pos, d.lastPos)
	}
	// The draft call projects the ≤ 8 pending rows alongside the block; a
	// softmax over a set does not depend on where its keys are stored, so
	// writing them to the ring first is the same computation.
	d.flush(len(d.pendingPos))
	h := d.forward(anchor, pos)
	return spec.Proposal{Tokens: d.selectDrafts(anchor, h)}, nil
}

// forward returns the final-normed hidden rows of the block at pos.
func (d *Drafter) forward(anchor, pos int) []float32 {
	cfg := d.cfg
	B, H := d.block, cfg.HiddenSize
	pos8 := make([]int, B)
	x := make([]float32, B*H)
	for t := range pos8 {
		pos8[t] = pos + t
		id := cfg.DFlash.MaskTokenID
		if t == 0 {
			id = anchor
		}
		d.target.EmbedRow(id, x[t*H:(t+1)*H])
	}
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
	for l := range d.layers {
		L := &d.layers[l]
		// Attention, between the two sides of the attention convolution.
		normRows(n, x, L.inNorm, B, H, cfg.RMSNormEps)
		d.run.Apply(L.attnKP, dk, n, B)
		d.gconv(a, n, dk, L.attnBase, 0)
		d.run.Apply(L.q, q, a, B)
		d.run.Apply(L.k, kb, a, B)
		d.run.Apply(L.v, vb, a, B)
		d.normRope(q, L.qNorm, pos8, cfg.NumAttentionHeads)
		d.normRope(kb, L.kNorm, pos8, cfg.NumKeyValueHeads)
		d.attend(o, q, kb, vb, l, pos8)
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

// gconv is one side of the dynamic two-tap grouped convolution:
// dst[t][c] = Σ_j (base[side][j][g] + dk[t][side][j][g]) · src[t−j][c],
// g = c / conv_group_size, src rows before the block are zero.
func (d *Drafter) gconv(dst, src, dk, base []float32, side int) {
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

// attend computes o for the block queries over the ring (slots whose
// position is within the window) and the whole block (non-causal).
func (d *Drafter) attend(o, q, kb, vb []float32, layer int, pos8 []int) {
	cfg := d.cfg
	hd, nh, nkv := cfg.HeadDim, cfg.NumAttentionHeads, cfg.NumKeyValueHeads
	W := cfg.SlidingWindow
	scale := 1 / math.Sqrt(float64(hd))
	ringK, ringV := d.ringK[layer], d.ringV[layer]
	scores := make([]float64, len(d.slotPos)+d.block)
	acc := make([]float64, hd)
	for t, qp := range pos8 {
		for h := 0; h < nh; h++ {
			g := h / (nh / nkv)
			qv := q[(t*nh+h)*hd : (t*nh+h+1)*hd]
			maxS := math.Inf(-1)
			for s, sp := range d.slotPos {
				scores[s] = math.Inf(-1)
				if sp >= 0 && abs(qp-sp) < W {
					scores[s] = float64(dotf(qv, ringK[s*d.kvDim+g*hd:s*d.kvDim+(g+1)*hd])) * scale
					maxS = math.Max(maxS, scores[s])
				}
			}
			for j := 0; j < d.block; j++ {
				sc := float64(dotf(qv, kb[j*d.kvDim+g*hd:j*d.kvDim+(g+1)*hd])) * scale
				scores[len(d.slotPos)+j] = sc
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
				if s < len(d.slotPos) {
					vrow = ringV[s*d.kvDim+g*hd : s*d.kvDim+(g+1)*hd]
				} else {
					j := s - len(d.slotPos)
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

// selectDrafts runs the target's head on rows 1.. of h and the selector
// walk: per row the top-k candidates by logit, rescored by the pairwise
// codebook term with the previous pick.
func (d *Drafter) selectDrafts(anchor int, h []float32) []int {
	cfg := d.cfg
	H, V, R := cfg.HiddenSize, cfg.VocabSize, cfg.DFlash.SelectorRank
	rows := d.block - 1
	logits := make([]float32, rows*V)
	d.run.Apply(d.head, logits, h[H:], rows)
	hp := make([]float32, rows*R)
	d.run.Apply(d.hp, hp, h[H:], rows)
	k := min(cfg.DFlash.SelectorTopK, V)
	drafts := make([]int, 0, rows)
	prev := anchor
	for i := 0; i < rows; i++ {
		cand := topK(logits[i*V:(i+1)*V], k)
		pc := d.pred[prev*R : (prev+1)*R]
		hpi := hp[i*R : (i+1)*R]
		best, bestS := -1, math.Inf(-1)
		for _, c := range cand {
			sc := d.succ[c*R : (c+1)*R]
			s := float64(logits[i*V+c])
			for r := 0; r < R; r++ {
				s += float64(sc[r]) * float64(pc[r]) * float64(hpi[r])
			}
			if s > bestS || best < 0 {
				best, bestS = c, s
			}
		}
		if best < 0 {
			break // no finite logit in this row: draft no further
		}
		drafts = append(drafts, best)
		prev = best
	}
	return drafts
}

// topK returns the indices of the k largest finite values, largest first,
// ties to the lower index.
func topK(row []float32, k int) []int {
	out := make([]int, 0, k)
	for i, v := range row {
		if v != v {
			continue
		}
		if len(out) == k && !(v > row[out[k-1]]) {
			continue
		}
		j := len(out)
		if j < k {
			out = append(out, i)
		} else {
			j = k - 1
		}
		for j > 0 && v > row[out[j-1]] {
			out[j] = out[j-1]
			j--
		}
		out[j] = i
	}
	return out
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

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Load reads the drafter in dir and builds it over target.
func Load(dir string, target TargetWeights, threads int) (*Drafter, error) {
	w, err := LoadWeights(dir)
	if err != nil {
		return nil, err
	}
	return New(w, target, threads)
}

// Rewind forgets the context at positions ≥ pos (the target was restored
// to pos). Ring slots that rows at those positions overwrote keep no trace
// of the older rows they replaced: the drafter then sees slightly less
// context, which can only cost acceptance, never correctness.
func (d *Drafter) Rewind(pos int) {
	for s, p := range d.slotPos {
		if p >= pos {
			d.slotPos[s] = -1
		}
	}
	keep := 0
	for keep < len(d.pendingPos) && d.pendingPos[keep] < pos {
		keep++
	}
	d.pendingPos, d.pendingF = d.pendingPos[:keep], d.pendingF[:keep*d.feat]
	d.lastPos = min(d.lastPos, pos-1)
}
