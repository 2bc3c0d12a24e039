package dflash

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/internal/synth"
)

// A synthetic tiny target (internal/synth) and its synthetic drafter, generated
// once per test process.
var pair struct {
	once                sync.Once
	root, target, draft string
	err                 error
}

func tinyPair(tb testing.TB) (targetDir, drafterDir string) {
	tb.Helper()
	pair.once.Do(func() {
		if pair.root, pair.err = os.MkdirTemp("", "dflash-"); pair.err != nil {
			return
		}
		pair.target, pair.draft = filepath.Join(pair.root, "tiny"), filepath.Join(pair.root, "drafter")
		if pair.err = synth.Generate(pair.target, synth.Options{Preset: "tiny", Seed: 7}); pair.err != nil {
			return
		}
		_, pair.err = GenerateSynthetic(pair.target, "", pair.draft, 3)
	})
	if pair.err != nil {
		tb.Fatal(pair.err)
	}
	return pair.target, pair.draft
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pair.root != "" {
		os.RemoveAll(pair.root)
	}
	os.Exit(code)
}

func openTarget(tb testing.TB, dir string, taps []int) *ref.Model {
	tb.Helper()
	m, err := ref.Open(dir, ref.Options{Taps: taps, Threads: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

// ---- independent float64 implementation of the drafter (Anemll/anemll-forge
// scripts/dflash2_drafter_ref.py) ----

type naive struct {
	w     *Weights
	embed func(id int) []float64
	head  []float32 // vocab × hidden, dense
}

func (r *naive) t(name string) []float32 { return r.w.T[name] }

func matvec(w []float32, rows int, x []float64) []float64 {
	cols := len(x)
	y := make([]float64, rows)
	for i := range y {
		var s float64
		for j, v := range x {
			s += float64(w[i*cols+j]) * v
		}
		y[i] = s
	}
	return y
}

func rms(x []float64, gain []float32, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	r := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * r * float64(gain[i])
	}
	return out
}

// headsNormRope: per-head RMSNorm then RoPE over all dims, half split.
func (r *naive) headsNormRope(x []float64, gain []float32, pos int) []float64 {
	cfg := r.w.Config
	hd := cfg.HeadDim
	out := make([]float64, 0, len(x))
	for h := 0; h < len(x)/hd; h++ {
		v := rms(x[h*hd:(h+1)*hd], gain, cfg.RMSNormEps)
		for i := 0; i < hd/2; i++ {
			ang := float64(pos) * math.Pow(cfg.RopeTheta, -float64(2*i)/float64(hd))
			a, b := v[i], v[i+hd/2]
			v[i], v[i+hd/2] = a*math.Cos(ang)-b*math.Sin(ang), b*math.Cos(ang)+a*math.Sin(ang)
		}
		out = append(out, v...)
	}
	return out
}

// conv: y[t][c] = Σ_j (base[side][j][g] + dyn[t][side][j][g]) · x[t−j][c].
func (r *naive) conv(x, dyn [][]float64, base []float32, side int) [][]float64 {
	cfg := r.w.Config
	K, gs := cfg.DFlash.ConvKernelSize, cfg.DFlash.ConvGroupSize
	G := cfg.HiddenSize / gs
	out := make([][]float64, len(x))
	for t := range x {
		out[t] = make([]float64, cfg.HiddenSize)
		for j := 0; j < K; j++ {
			if t-j < 0 {
				continue
			}
			for c := range out[t] {
				g := c / gs
				w := float64(base[(side*K+j)*G+g]) + dyn[t][(side*K+j)*G+g]
				out[t][c] += w * x[t-j][c]
			}
		}
	}
	return out
}

func softmaxAttend(q []float64, keys, vals [][]float64) []float64 {
	scores := make([]float64, len(keys))
	mx := math.Inf(-1)
	for i, k := range keys {
		var s float64
		for d := range q {
			s += q[d] * k[d]
		}
		scores[i] = s / math.Sqrt(float64(len(q)))
		mx = math.Max(mx, scores[i])
	}
	out := make([]float64, len(q))
	var sum float64
	for i := range scores {
		p := math.Exp(scores[i] - mx)
		sum += p
		for d := range out {
			out[d] += p * vals[i][d]
		}
	}
	for d := range out {
		out[d] /= sum
	}
	return out
}

// propose returns the final hidden rows, the 7 logits rows and the drafts.
func (r *naive) propose(feats [][]float32, fpos []int, anchor, pos int) (hid, logits [][]float64, drafts []int) {
	cfg := r.w.Config
	H, hd, nh, nkv, B := cfg.HiddenSize, cfg.HeadDim, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.DFlash.BlockSize
	ctx := make([][]float64, len(feats))
	for i, f := range feats {
		fx := make([]float64, len(f))
		for j, v := range f {
			fx[j] = float64(v)
		}
		ctx[i] = rms(matvec(r.t("fc.weight"), H, fx), r.t("hidden_norm.weight"), cfg.RMSNormEps)
	}
	x := make([][]float64, B)
	for t := range x {
		id := cfg.DFlash.MaskTokenID
		if t == 0 {
			id = anchor
		}
		x[t] = r.embed(id)
	}
	kpRows := 2 * cfg.DFlash.ConvKernelSize * H / cfg.DFlash.ConvGroupSize
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := "layers." + itoa(l) + "."
		var ks, vs [][]float64
		var kpos []int
		for i, c := range ctx {
			ks = append(ks, r.headsNormRope(matvec(r.t(p+"self_attn.k_proj.weight"), nkv*hd, c), r.t(p+"self_attn.k_norm.weight"), fpos[i]))
			vs = append(vs, matvec(r.t(p+"self_attn.v_proj.weight"), nkv*hd, c))
			kpos = append(kpos, fpos[i])
		}
		n, dyn := make([][]float64, B), make([][]float64, B)
		for t := range x {
			n[t] = rms(x[t], r.t(p+"input_layernorm.weight"), cfg.RMSNormEps)
			dyn[t] = matvec(r.t(p+"attention_conv.kernel_projection.weight"), kpRows, n[t])
		}
		a := r.conv(n, dyn, r.t(p+"attention_conv.base_kernel"), 0)
		qs := make([][]float64, B)
		for t := range a {
			qs[t] = r.headsNormRope(matvec(r.t(p+"self_attn.q_proj.weight"), nh*hd, a[t]), r.t(p+"self_attn.q_norm.weight"), pos+t)
			ks = append(ks, r.headsNormRope(matvec(r.t(p+"self_attn.k_proj.weight"), nkv*hd, a[t]), r.t(p+"self_attn.k_norm.weight"), pos+t))
			vs = append(vs, matvec(r.t(p+"self_attn.v_proj.weight"), nkv*hd, a[t]))
			kpos = append(kpos, pos+t)
		}
		att := make([][]float64, B)
		for t := range qs {
			for h := 0; h < nh; h++ {
				g := h / (nh / nkv)
				var kk, vv [][]float64
				for i := range ks {
					if d := pos + t - kpos[i]; d < cfg.SlidingWindow && -d < cfg.SlidingWindow {
						kk = append(kk, ks[i][g*hd:(g+1)*hd])
						vv = append(vv, vs[i][g*hd:(g+1)*hd])
					}
				}
				att[t] = append(att[t], softmaxAttend(qs[t][h*hd:(h+1)*hd], kk, vv)...)
			}
			att[t] = matvec(r.t(p+"self_attn.o_proj.weight"), H, att[t])
		}
		y := r.conv(att, dyn, r.t(p+"attention_conv.base_kernel"), 1)
		for t := range x {
			for c := range x[t] {
				x[t][c] += y[t][c]
			}
			n[t] = rms(x[t], r.t(p+"post_attention_layernorm.weight"), cfg.RMSNormEps)
			dyn[t] = matvec(r.t(p+"mlp_conv.kernel_projection.weight"), kpRows, n[t])
		}
		a = r.conv(n, dyn, r.t(p+"mlp_conv.base_kernel"), 0)
		m := make([][]float64, B)
		for t := range a {
			g := matvec(r.t(p+"mlp.gate_proj.weight"), cfg.IntermediateSize, a[t])
			u := matvec(r.t(p+"mlp.up_proj.weight"), cfg.IntermediateSize, a[t])
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			m[t] = matvec(r.t(p+"mlp.down_proj.weight"), H, g)
		}
		y = r.conv(m, dyn, r.t(p+"mlp_conv.base_kernel"), 1)
		for t := range x {
			for c := range x[t] {
				x[t][c] += y[t][c]
			}
		}
	}
	for t := range x {
		hid = append(hid, rms(x[t], r.t("norm.weight"), cfg.RMSNormEps))
	}
	V, R := cfg.VocabSize, cfg.DFlash.SelectorRank
	prev := anchor
	for i := 1; i < B; i++ {
		lg := matvec(r.head, V, hid[i])
		logits = append(logits, lg)
		hp := matvec(r.t("candidate_selector.hidden_projection.weight"), R, hid[i])
		// top-k by sorting every id (independent of the heap/insertion code).
		ids := make([]int, V)
		for j := range ids {
			ids[j] = j
		}
		sortByDesc(ids, lg)
		best, bestS := -1, math.Inf(-1)
		for _, c := range ids[:cfg.DFlash.SelectorTopK] {
			s := lg[c]
			for k := 0; k < R; k++ {
				s += float64(r.t(drafter.SuccessorCodebook)[c*R+k]) * float64(r.t(drafter.PredecessorCodebook)[prev*R+k]) * hp[k]
			}
			if best < 0 || s > bestS {
				best, bestS = c, s
			}
		}
		drafts = append(drafts, best)
		prev = best
	}
	return hid, logits, drafts
}

func sortByDesc(ids []int, v []float64) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && (v[ids[j]] > v[ids[j-1]] || (v[ids[j]] == v[ids[j-1]] && ids[j] < ids[j-1])); j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

// TestMatchesFloat64 compares the drafter's hidden rows and logits with the
// float64 implementation to 1e-4, and the drafts exactly, after context
// that spans a 64-row flush plus pending rows — with the published window
// and with a window of 16 so the ring wraps and old slots fall out.
func TestMatchesFloat64(t *testing.T) {
	targetDir, drafterDir := tinyPair(t)
	w, err := LoadWeights(drafterDir)
	if err != nil {
		t.Fatal(err)
	}
	model := openTarget(t, targetDir, w.Config.DFlash.TargetLayerIDs)
	H := w.Config.HiddenSize
	r := &naive{w: w, head: model.LMHead().Dense(), embed: func(id int) []float64 {
		row := make([]float32, H)
		model.EmbedRow(id, row)
		out := make([]float64, H)
		for i, v := range row {
			out[i] = float64(v)
		}
		return out
	}}
	for _, window := range []int{2048, 16} {
		cfg := *w.Config
		cfg.SlidingWindow = window
		wc := *w
		wc.Config = &cfg
		r.w = &wc
		d, err := New(&wc, model, 2)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, uint64(window)))
		var feats [][]float32
		var fpos []int
		const rows = 75 // one 64-row flush, then pending rows
		for p := 0; p < rows; {
			n := min(1+rng.IntN(9), rows-p) // committed rows arrive 1..9 at a time, like cycles
			var f []float32
			var ps []int
			for i := 0; i < n; i++ {
				row := make([]float32, w.Features)
				for j := range row {
					row[j] = float32(rng.NormFloat64() * 3)
				}
				feats, fpos = append(feats, row), append(fpos, p+i)
				f, ps = append(f, row...), append(ps, p+i)
			}
			if err := d.AddContext(f, ps); err != nil {
				t.Fatal(err)
			}
			p += n
		}
		anchor := 42
		wantH, wantL, wantDrafts := r.propose(feats, fpos, anchor, rows)
		prop, err := d.Propose(anchor, rows)
		if err != nil {
			t.Fatal(err)
		}
		// forward again to read the hidden rows (Propose is deterministic).
		h := d.forward(anchor, rows)
		var worst float64
		for t2, row := range wantH {
			for i, v := range row {
				worst = math.Max(worst, math.Abs(v-float64(h[t2*H+i])))
			}
		}
		logits := d.Logits(h)
		for t2, row := range wantL {
			for i, v := range row {
				worst = math.Max(worst, math.Abs(v-float64(logits[t2*w.Config.VocabSize+i]))/math.Max(1, math.Abs(v)))
			}
		}
		if worst > 1e-4 {
			t.Errorf("window %d: max deviation from float64 %.3g > 1e-4", window, worst)
		}
		if len(prop.Tokens) != 7 {
			t.Fatalf("window %d: %d drafts, want 7", window, len(prop.Tokens))
		}
		for i := range wantDrafts {
			if prop.Tokens[i] != wantDrafts[i] {
				t.Errorf("window %d: drafts %v, float64 reference %v", window, prop.Tokens, wantDrafts)
				break
			}
		}
		t.Logf("window %d: max deviation %.3g, drafts %v", window, worst, prop.Tokens)
		d.Close()
	}
}

// The memory accessors count what is really held: every tensor of the
// weights, and ring rows that grow as context is added.
func TestMemoryAccounting(t *testing.T) {
	targetDir, drafterDir := tinyPair(t)
	w, err := LoadWeights(drafterDir)
	if err != nil {
		t.Fatal(err)
	}
	target := openTarget(t, targetDir, w.Config.DFlash.TargetLayerIDs)
	var want int64
	for _, v := range w.T {
		want += int64(len(v)) * 4
	}
	if got := w.Bytes(); got != want || got == 0 {
		t.Fatalf("Weights.Bytes() = %d, want %d", got, want)
	}
	d, err := New(w, target, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before := d.StateBytes()
	feats := make([]float32, 80*w.Features)
	pos := make([]int, 80)
	for i := range pos {
		pos[i] = i
	}
	if err := d.AddContext(feats, pos); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Propose(1, 80); err != nil {
		t.Fatal(err)
	}
	after := d.StateBytes()
	// 80 rows of K and V for every layer must now be held.
	cfg := w.Config
	minimum := int64(80 * cfg.NumHiddenLayers * 2 * cfg.NumKeyValueHeads * cfg.HeadDim * 4)
	if after-before < minimum {
		t.Fatalf("StateBytes grew by %d after 80 context rows, want at least %d", after-before, minimum)
	}
}
