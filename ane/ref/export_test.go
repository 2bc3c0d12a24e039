package ref

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/qformat"
	"github.com/forgedaemon/forged/ane/nprand"
	"github.com/x448/float16"
)

func f16(x float64) float64 { return float64(float16.Fromfloat32(float32(x)).Float32()) }

func f16Tensor(v []float64, shape ...int) Tensor {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], float16.Fromfloat32(float32(x)).Bits())
	}
	return Tensor{DType: "F16", Shape: shape, Data: b}
}

// testRotation is the published block rotation written out independently:
// x → x·M with M[i][j] = s_i·H[i mod b][j mod b]/√b inside each block, H the
// Sylvester Hadamard matrix, s NumPy's default_rng(seed).choice([-1,1], n).
type testRotation struct {
	s     []float32
	block int
}

func (r testRotation) entry(i, j int) float64 {
	if i/r.block != j/r.block {
		return 0
	}
	sign := 1.0
	for x := (i % r.block) & (j % r.block); x != 0; x &= x - 1 {
		sign = -sign
	}
	return float64(r.s[i]) * sign / math.Sqrt(float64(r.block))
}

// rotateRows returns W·M (the export's stored basis) and unrotate W·Mᵀ.
func (r testRotation) rotate(w [][]float64, transpose bool) [][]float64 {
	n := len(r.s)
	out := make([][]float64, len(w))
	for k, row := range w {
		out[k] = make([]float64, n)
		for j := 0; j < n; j++ {
			var s float64
			for i := j / r.block * r.block; i < (j/r.block+1)*r.block; i++ {
				if transpose {
					s += row[i] * r.entry(j, i)
				} else {
					s += row[i] * r.entry(i, j)
				}
			}
			out[k][j] = s
		}
	}
	return out
}

// quantizeRTN stores w in format f under key (round to nearest, simple
// codebooks) and returns the dequantized matrix by the export's rule.
func quantizeRTN(t *testing.T, file *memFile, key string, f qformat.Format, w [][]float64) [][]float64 {
	t.Helper()
	rows, cols := len(w), len(w[0])
	scale := make([]float64, rows)
	for i := range scale {
		scale[i] = 1
	}
	norm := func(i, j int) float64 { return w[i][j] / scale[i] }
	deq := make([][]float64, rows)
	for i := range deq {
		deq[i] = make([]float64, cols)
	}
	switch f.Kind {
	case qformat.KindInt8:
		q := make([]byte, rows*cols)
		for i := range w {
			var mx float64
			for _, v := range w[i] {
				mx = math.Max(mx, math.Abs(v))
			}
			scale[i] = f16(mx / 127)
			for j := range w[i] {
				c := math.Max(-127, math.Min(127, math.Round(w[i][j]/scale[i])))
				q[i*cols+j] = byte(int8(c))
				deq[i][j] = c * scale[i]
			}
		}
		file.MapSource[key+".int8"] = Tensor{DType: "I8", Shape: []int{rows, cols}, Data: q}
		file.MapSource[key+".scale"] = f16Tensor(scale, rows)
		return deq
	case qformat.KindLUT:
	default:
		t.Fatalf("no RTN for %s", f.Name)
	}
	if f.Scaled {
		for i := range w {
			var s float64
			for _, v := range w[i] {
				s += v * v
			}
			scale[i] = f16(math.Sqrt(s / float64(cols)))
		}
	}
	cd, K := f.CD, f.Entries
	// Codebook: K vectors at evenly spaced quantiles of the first component.
	type vec struct{ v []float64 }
	var vs []vec
	for g := 0; g < rows/cd; g++ {
		for j := 0; j < cols; j++ {
			v := make([]float64, cd)
			for k := range v {
				v[k] = norm(g*cd+k, j)
			}
			vs = append(vs, vec{v})
		}
	}
	sorted := append([]vec(nil), vs...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].v[0] < sorted[b].v[0] })
	lut := make([]float64, K*cd)
	for e := 0; e < K; e++ {
		src := sorted[(2*e+1)*len(sorted)/(2*K)].v
		for k := range src {
			lut[e*cd+k] = f16(src[k])
		}
	}
	idx := make([]byte, rows/cd*cols)
	for n, v := range vs {
		best, bd := 0, math.Inf(1)
		for e := 0; e < K; e++ {
			var d float64
			for k := range v.v {
				d += (v.v[k] - lut[e*cd+k]) * (v.v[k] - lut[e*cd+k])
			}
			if d < bd {
				best, bd = e, d
			}
		}
		idx[n] = byte(best)
		g, j := n/cols, n%cols
		for k := 0; k < cd; k++ {
			deq[g*cd+k][j] = lut[best*cd+k] * scale[g*cd+k]
		}
	}
	file.MapSource[key+".idx"] = Tensor{DType: "U8", Shape: []int{rows / cd, cols}, Data: idx}
	file.MapSource[key+".lut"] = f16Tensor(lut, K, cd)
	if f.Scaled {
		file.MapSource[key+".scale"] = f16Tensor(scale, rows)
	}
	return deq
}

// addLowRank stores random rank-r factors for key and adds A·B to deq.
func addLowRank(r *rand.Rand, file *memFile, key string, deq [][]float64, rank int) {
	rows, cols := len(deq), len(deq[0])
	a, b := make([]float64, rows*rank), make([]float64, rank*cols)
	for i := range a {
		a[i] = f16(r.NormFloat64() * 0.05)
	}
	for i := range b {
		b[i] = f16(r.NormFloat64() * 0.05)
	}
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			for k := 0; k < rank; k++ {
				deq[i][j] += a[i*rank+k] * b[k*cols+j]
			}
		}
	}
	file.MapSource[key+".lr_a"] = f16Tensor(a, rows, rank)
	file.MapSource[key+".lr_b"] = f16Tensor(b, rank, cols)
}

const testBlock = 16

// buildExport quantizes the naive model into an in-memory export and
// returns it with a naive model whose weights are the export's dequantized
// and folded-back (W'·Mᵀ) matrices.
func buildExport(t *testing.T, nm *nModel) (memFiles, *nModel) {
	t.Helper()
	r := rand.New(rand.NewPCG(20, 20))
	c := nm.cfg
	files := memFiles{}
	out := *nm
	out.layers = append([]nLayer(nil), nm.layers...)
	mlpFormats := []string{"vector 2x16 + pcs", "LUT4 per-tensor + pcs", "vector 4x64 + pcs", "vector 2x64 + pcs"}
	rot := func(n int, seed uint64) testRotation {
		return testRotation{nprand.ChoiceSigns(seed, n), testBlock}
	}
	for i := range out.layers {
		L := &out.layers[i]
		mf := &memFile{MapSource{}, map[string]string{"basis": "online", "block": fmt.Sprint(testBlock),
			"seed_in": fmt.Sprint(1000 + i), "seed_mid": fmt.Sprint(2000 + i)}}
		files[mlpFile(i)] = mf
		rin, rmid := rot(c.Hidden, uint64(1000+i)), rot(c.Intermediate, uint64(2000+i))
		format, _ := qformat.Lookup(mlpFormats[i%len(mlpFormats)])
		for _, k := range []string{"gate", "up", "down"} {
			mf.md[k+".format"] = format.Name
		}
		L.gate = rin.rotate(quantizeRTN(t, mf, "gate", format, rin.rotate(L.gate, false)), true)
		L.up = rin.rotate(quantizeRTN(t, mf, "up", format, rin.rotate(L.up, false)), true)
		L.down = rmid.rotate(quantizeRTN(t, mf, "down", format, rmid.rotate(L.down, false)), true)

		mix := &memFile{MapSource{}, map[string]string{"format": "LUT4 per-tensor + pcs", "kv_format": "INT8 per-channel"}}
		files[mixerFile(i)] = mix
		lut, _ := qformat.Lookup("LUT4 per-tensor + pcs")
		int8f, _ := qformat.Lookup("INT8 per-channel")
		// Layer 1 uses the release-0.2 rotated mixer basis.
		online := i == 1
		in, outRot := rot(c.Hidden, uint64(3000+i)), rot(c.LinValueHeads*c.LinValueDim, uint64(4000+i))
		if L.full {
			outRot = rot(c.Heads*c.HeadDim, uint64(4000+i))
		}
		if online {
			mix.md["basis"], mix.md["block"] = "online", fmt.Sprint(testBlock)
			mix.md["seed_in"], mix.md["seed_out"] = fmt.Sprint(3000+i), fmt.Sprint(4000+i)
		}
		q := func(key string, f qformat.Format, w [][]float64, rr testRotation) [][]float64 {
			if online {
				w = rr.rotate(w, false)
			}
			d := quantizeRTN(t, mix, key, f, w)
			addLowRank(r, mix, key, d, 4)
			if online {
				d = rr.rotate(d, true)
			}
			return d
		}
		if L.full {
			L.q = q("self_attn.q_proj", lut, L.q, in)
			L.k = q("self_attn.k_proj", int8f, L.k, in)
			L.v = q("self_attn.v_proj", int8f, L.v, in)
			L.o = q("self_attn.o_proj", lut, L.o, outRot)
		} else {
			L.qkv = q("linear_attn.in_proj_qkv", lut, L.qkv, in)
			L.z = q("linear_attn.in_proj_z", lut, L.z, in)
			L.out = q("linear_attn.out_proj", lut, L.out, outRot)
		}
	}
	hf := &memFile{MapSource{}, map[string]string{"format": "LUT4 per-tensor + pcs"}}
	files[headFile] = hf
	lut, _ := qformat.Lookup("LUT4 per-tensor + pcs")
	out.head = quantizeRTN(t, hf, "lm_head", lut, nm.head)
	return files, &out
}

func loadTinyExport(t *testing.T) (*nModel, *Model, memFiles, MapSource) {
	t.Helper()
	cfg := tinyConfig()
	nm, src := newTinyModel(cfg, 1)
	files, folded := buildExport(t, nm)
	w, err := LoadExport(cfg, src, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(cfg, w, Options{Ladder: []int{64}})
	if err != nil {
		t.Fatal(err)
	}
	return folded, m, files, src
}

// The engine executing the export (stored formats, low-rank branches,
// online rotations) agrees with the float64 model on the dequantized,
// folded-back weights.
func TestExportMatchesFoldedDense(t *testing.T) {
	folded, m, _, _ := loadTinyExport(t)
	ids := randIDs(rand.New(rand.NewPCG(21, 21)), 24, folded.cfg.Vocab)
	st := folded.newState()
	var want []float64
	for _, id := range ids {
		want = folded.step(st, id)
	}
	s := openSession(t, m)
	got, err := s.Feed(ids)
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(got, want); e > 1e-4 {
		t.Fatalf("export logits differ from folded dense float64 by %.3g", e)
	}
}

// The MLP with stored rotated weights and online Hadamard equals the
// unrotated dense MLP to 1e-5.
func TestOnlineHadamardMLP(t *testing.T) {
	folded, m, _, _ := loadTinyExport(t)
	s := openSession(t, m)
	r := rand.New(rand.NewPCG(22, 22))
	for li := range folded.layers {
		if m.w.layers[li].rotIn == nil || m.w.layers[li].rotMid == nil {
			t.Fatalf("layer %d: online basis not applied", li)
		}
		h, h64 := randRow(r, folded.cfg.Hidden)
		y := make([]float32, folded.cfg.Hidden)
		s.mlp(&m.w.layers[li], h, y, 1)
		if e := relErr(y, folded.mlp(li, h64)); e > 1e-5 {
			t.Errorf("layer %d: online-rotated MLP differs from unrotated dense by %.3g", li, e)
		}
	}
}

func TestExportBadInput(t *testing.T) {
	cfg := tinyConfig()
	nm, src := newTinyModel(cfg, 1)
	cases := []struct {
		name   string
		mutate func(memFiles)
		want   string
	}{
		{"unknown format", func(f memFiles) { f[mlpFile(2)].md["up.format"] = "vector 3x7" },
			`layer_02.safetensors: up: unknown quantization format "vector 3x7"`},
		{"format disagrees with tensors", func(f memFiles) { f[mlpFile(0)].md["gate.format"] = "LUT4 per-tensor + pcs" },
			`layer_00.safetensors: gate: stored as a 16-entry codebook of 2-vectors (scale: true), which is not format "LUT4 per-tensor + pcs"`},
		{"missing matrix", func(f memFiles) { delete(f[mixerFile(3)].MapSource, "self_attn.o_proj.idx") },
			`layer_03_mixer.safetensors: self_attn.o_proj: no .weight, .int8 or .idx tensor`},
		{"idx shape", func(f memFiles) {
			t := f[mlpFile(1)].MapSource["down.idx"]
			t.Shape = []int{t.Shape[1], t.Shape[0]}
			f[mlpFile(1)].MapSource["down.idx"] = t
		}, `layer_01.safetensors: tensor "down.idx" has shape [128 64], the config needs [64 128]`},
		{"missing file", func(f memFiles) { delete(f, mixerFile(2)) }, "open layer_02_mixer.safetensors"},
		{"bad basis", func(f memFiles) { f[mlpFile(0)].md["basis"] = "diagonal" }, `metadata basis "diagonal"`},
		{"bad seed", func(f memFiles) { f[mlpFile(0)].md["seed_in"] = "-4" }, `metadata "seed_in" = "-4"`},
		{"block not dividing", func(f memFiles) { f[mlpFile(0)].md["block"] = "48" }, "seed_in rotation"},
	}
	for _, c := range cases {
		files, _ := buildExport(t, nm)
		c.mutate(files)
		_, err := LoadExport(cfg, src, files, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
