package rebuild

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/rebuild/export"
	"github.com/forgedaemon/forged/ane/rebuild/plan"
	"github.com/forgedaemon/forged/ane/rebuild/quantize"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/internal/atomicfile"
)

// LowRankOptions configure LowRank.
type LowRankOptions struct {
	Model, Export, Out string
	Rank               int      // default 64
	Parts              []string // "gdn" (in_proj_qkv, in_proj_z, out_proj), "attn" (q/k/v/o); default both
	Seed               uint64
	Progress           func(Event)
}

// LowRankReport lists the factored matrices.
type LowRankReport struct {
	Out      string   `json:"out"`
	Rank     int      `json:"rank"`
	Seed     uint64   `json:"seed"`
	Matrices []string `json:"matrices"`
	Skipped  []string `json:"skipped_bf16,omitempty"` // unquantized: no residual to factor
	Bytes    int64    `json:"factor_bytes"`
}

var lowRankParts = map[string][]string{
	"gdn":  {"linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.out_proj"},
	"attn": {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"},
}

// matrixSeed is the recorded seed of one matrix's randomized SVD: the run
// seed mixed with the layer and the matrix (the published script sets no
// seed; ours makes the factors reproducible).
func matrixSeed(seed uint64, layer int, key string) uint64 {
	h := seed ^ 0x9e3779b97f4a7c15
	for _, c := range strconv.Itoa(layer) + "." + key {
		h = (h ^ uint64(c)) * 0x100000001b3
	}
	return h
}

// LowRank writes a copy of the export with rank-r FP16 factors (lr_a = U·S,
// lr_b = Vᵀ of the residual E = W_bf16 − dequant(Q)) added to the selected
// mixer matrices (Anemll/anemll-forge scripts/qwen38_lowrank_export.py). Other
// files are copied unchanged (a bundle may not hold symlinks); the mixer files
// record lr_rank and lr_seed in their metadata.
func LowRank(o LowRankOptions) (*LowRankReport, error) {
	if o.Rank == 0 {
		o.Rank = 64
	}
	if len(o.Parts) == 0 {
		o.Parts = []string{"gdn", "attn"}
	}
	var modules []string
	for _, p := range o.Parts {
		m, ok := lowRankParts[p]
		if !ok {
			return nil, fmt.Errorf("--parts: %q is not gdn or attn", p)
		}
		modules = append(modules, m...)
	}
	if o.Rank < 0 {
		return nil, fmt.Errorf("--rank %d must be positive", o.Rank)
	}
	if filepath.Clean(o.Out) == filepath.Clean(o.Export) {
		return nil, fmt.Errorf("--out must differ from --export")
	}
	cfg, err := ref.CheckCheckpoint(o.Model)
	if err != nil {
		return nil, err
	}
	// Check every input before writing anything.
	ms, _ := plan.Quantizable(cfg, plan.PublishedDefaults(cfg))
	for _, m := range ms {
		if slices.Contains(modules, m.Module) && o.Rank > min(m.Rows, m.Cols) {
			return nil, fmt.Errorf("%s: rank %d exceeds the %d×%d matrix", m.Name, o.Rank, m.Rows, m.Cols)
		}
	}
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		for _, name := range []string{export.MLPFile(i), export.MixerFile(i)} {
			if _, err := os.Stat(filepath.Join(o.Export, name)); err != nil {
				return nil, fmt.Errorf("export %s: %w", o.Export, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(o.Export, export.HeadFile)); err != nil {
		return nil, fmt.Errorf("export %s: %w", o.Export, err)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	rep := &LowRankReport{Out: o.Out, Rank: o.Rank, Seed: o.Seed}
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		if err := copyFile(filepath.Join(o.Export, export.MLPFile(i)), filepath.Join(o.Out, export.MLPFile(i))); err != nil {
			return nil, err
		}
		if err := lowRankMixer(o, cfg, i, modules, rep); err != nil {
			return nil, err
		}
		if o.Progress != nil {
			o.Progress(Event{Step: "layer", Layer: i, Layers: cfg.NumHiddenLayers, Done: i + 1, Total: cfg.NumHiddenLayers})
		}
	}
	for _, name := range []string{export.HeadFile, tensor.EmbeddingNPY} {
		src := filepath.Join(o.Export, name)
		if _, err := os.Stat(src); err == nil || name == export.HeadFile {
			if err := copyFile(src, filepath.Join(o.Out, name)); err != nil {
				return nil, err
			}
		}
	}
	return rep, nil
}

func lowRankMixer(o LowRankOptions, cfg *hfconfig.Model, li int, modules []string, rep *LowRankReport) error {
	path := filepath.Join(o.Export, export.MixerFile(li))
	f, err := tensor.OpenSafetensors(path)
	if err != nil {
		return err
	}
	defer f.Close()
	md := f.Metadata()
	kind := md["kind"]
	keys := lowRankParts["gdn"]
	if kind == export.FullAttention {
		keys = lowRankParts["attn"]
	}
	lm, err := ref.OpenLayer(o.Model, li, 1, 1, ane.Numerics{})
	if err != nil {
		return err
	}
	defer lm.Close()
	var mats []*export.Matrix
	for _, key := range keys {
		format := md["format"]
		if key == "self_attn.k_proj" || key == "self_attn.v_proj" {
			format = md["kv_format"]
		}
		m, err := export.ReadMatrix(f, key, format)
		if err != nil {
			return err
		}
		m.LrA, m.LrB, m.Rank = nil, nil, 0 // replace any earlier factors
		name := fmt.Sprintf("layers.%d.%s", li, key)
		if slices.Contains(modules, key) && m.Format == export.BF16 {
			rep.Skipped = append(rep.Skipped, name)
		} else if slices.Contains(modules, key) {
			if o.Rank > min(m.Rows, m.Cols) {
				return fmt.Errorf("%s: rank %d exceeds the %d×%d matrix", name, o.Rank, m.Rows, m.Cols)
			}
			w, _, _, err := lm.Weight(key)
			if err != nil {
				return err
			}
			q, err := quantize.Dequantize(toEncoded(m))
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			for j := range w {
				w[j] -= q[j]
			}
			if m.LrA, m.LrB, err = quantize.LowRank(w, m.Rows, m.Cols, o.Rank, matrixSeed(o.Seed, li, key)); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			m.Rank = o.Rank
			rep.Matrices = append(rep.Matrices, name)
			rep.Bytes += 2 * int64(len(m.LrA)+len(m.LrB))
		}
		mats = append(mats, m)
	}
	md["lr_rank"] = strconv.Itoa(o.Rank)
	md["lr_seed"] = strconv.FormatUint(o.Seed, 10)
	var ts []tensor.Tensor
	for _, m := range mats {
		if err := m.Check(); err != nil {
			return err
		}
		ts = append(ts, m.Tensors()...)
	}
	return tensor.WriteSafetensors(filepath.Join(o.Out, export.MixerFile(li)), md, ts)
}

// toEncoded presents an export matrix to quantize.Dequantize.
func toEncoded(m *export.Matrix) *quantize.Encoded {
	e := &quantize.Encoded{Format: m.Format, Rows: m.Rows, Cols: m.Cols, Idx: m.Idx, LUT: m.LUT, Int8: m.Int8, Scale: m.Scale}
	if m.Weight != nil {
		e.Weight, e.WeightDType = m.Weight, "BF16"
	}
	if m.LUT != nil {
		e.LUTShape = []int{m.LUTShape[0], m.LUTShape[1]}
		e.IdxShape = []int{m.Rows / m.LUTShape[1], m.Cols}
	}
	return e
}

// Dense returns the effective weights of an export matrix (dequantized,
// plus low-rank factors), for tests and tools.
func Dense(m *export.Matrix) ([]float32, error) {
	w, err := quantize.Dequantize(toEncoded(m))
	if err != nil || m.LrA == nil {
		return w, err
	}
	a, b := make([]float32, len(m.LrA)), make([]float32, len(m.LrB))
	half.F16ToF32(a, m.LrA)
	half.F16ToF32(b, m.LrB)
	for i := 0; i < m.Rows; i++ {
		for k := 0; k < m.Rank; k++ {
			av := a[i*m.Rank+k]
			for j := 0; j < m.Cols; j++ {
				w[i*m.Cols+j] += av * b[k*m.Cols+j]
			}
		}
	}
	return w, nil
}

// copyFile copies src to dst atomically (owner-only, as the rebuild's
// copies always were).
func copyFile(src, dst string) error { return atomicfile.Copy(dst, src, 0o600) }
