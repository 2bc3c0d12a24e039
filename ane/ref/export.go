package ref

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/ane/format/qformat"
	"github.com/forgedaemon/forged/ane/hadamard"
	"github.com/forgedaemon/forged/ane/kernels"
)

// Export file names (Anemll/anemll-forge scripts/qwen3_lut_common.py, scripts/qwen38_gptq_27b.py).
func mlpFile(i int) string   { return fmt.Sprintf("layer_%02d.safetensors", i) }
func mixerFile(i int) string { return fmt.Sprintf("layer_%02d_mixer.safetensors", i) }

const headFile = "lm_head.safetensors"

// mlpKeys are the MLP export's short tensor keys.
var mlpKeys = map[string]string{"mlp.gate_proj": "gate", "mlp.up_proj": "up", "mlp.down_proj": "down"}

// exportMatrices executes projections in the export's stored formats.
type exportMatrices struct {
	files  Files
	cfg    Config
	open   map[string]File
	nbytes int64
}

func (e *exportMatrices) file(name string) (File, error) {
	if f, ok := e.open[name]; ok {
		return f, nil
	}
	f, err := e.files.Open(name)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	e.open[name] = f
	return f, nil
}

func (e *exportMatrices) linear(i int, module string, rows, cols int) (*kernels.Linear, error) {
	if short, ok := mlpKeys[module]; ok {
		f, err := e.file(mlpFile(i))
		if err != nil {
			return nil, err
		}
		return e.load(mlpFile(i), f, short, f.Metadata()[short+".format"], rows, cols)
	}
	f, err := e.file(mixerFile(i))
	if err != nil {
		return nil, err
	}
	md := f.Metadata()
	format := md["format"]
	if module == "self_attn.k_proj" || module == "self_attn.v_proj" {
		format = md["kv_format"]
	}
	return e.load(mixerFile(i), f, module, format, rows, cols)
}

func (e *exportMatrices) head(rows, cols int) (*kernels.Linear, error) {
	f, err := e.file(headFile)
	if err != nil {
		return nil, err
	}
	return e.load(headFile, f, "lm_head", f.Metadata()["format"], rows, cols)
}

// load builds key's matrix from its stored tensors (key.weight | key.int8 +
// key.scale | key.idx + key.lut [+ key.scale], plus optional key.lr_a/lr_b),
// checking them against the format the metadata names, when it names one.
func (e *exportMatrices) load(file string, f File, key, formatName string, rows, cols int) (*kernels.Linear, error) {
	r := &reader{src: f, where: file}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", file, key, fmt.Sprintf(format, args...))
	}
	var want *qformat.Format
	if formatName != "" {
		ft, err := qformat.Lookup(formatName)
		if err != nil {
			return nil, fail("%v", err)
		}
		want = &ft
	}
	_, hasWeight := f.Tensor(key + ".weight")
	_, hasInt8 := f.Tensor(key + ".int8")
	_, hasIdx := f.Tensor(key + ".idx")
	_, hasScale := f.Tensor(key + ".scale")
	var m kernels.Matrix
	var err error
	switch {
	case hasWeight:
		if want != nil && want.Kind != qformat.KindDense {
			return nil, fail("stored as .weight but the metadata names format %q", want.Name)
		}
		m, err = r.dense(key+".weight", rows, cols)
	case hasInt8:
		if want != nil && want.Kind != qformat.KindInt8 {
			return nil, fail("stored as .int8 but the metadata names format %q", want.Name)
		}
		var q, sc Tensor
		if q, err = r.get(key+".int8", rows, cols); err == nil && q.DType != "I8" {
			err = fail(".int8 has dtype %s, want I8", q.DType)
		}
		var scale []float32
		if err == nil {
			if sc, err = r.get(key+".scale", rows); err == nil {
				scale, err = r.floats(key+".scale", sc)
			}
		}
		if err == nil {
			e.nbytes += int64(len(q.Data))
			m, err = kernels.NewInt8(rows, cols, i8(q.Data), scale)
		}
	case hasIdx:
		m, err = e.loadLUT(r, f, key, want, hasScale, rows, cols, fail)
	default:
		if want != nil {
			return nil, fail("no .weight, .int8 or .idx tensor for format %q", want.Name)
		}
		return nil, fail("tensor is missing (no .weight, .int8 or .idx)")
	}
	if err != nil {
		return nil, err
	}
	var a, b *kernels.F32
	if _, ok := f.Tensor(key + ".lr_a"); ok {
		ta, _ := f.Tensor(key + ".lr_a")
		if len(ta.Shape) != 2 {
			return nil, fail(".lr_a has shape %v, want [%d, rank]", ta.Shape, rows)
		}
		rank := ta.Shape[1]
		av, err := r.vector(key+".lr_a", rows, rank)
		if err != nil {
			return nil, err
		}
		bv, err := r.vector(key+".lr_b", rank, cols)
		if err != nil {
			return nil, err
		}
		a, _ = kernels.NewF32(rows, rank, av)
		b, _ = kernels.NewF32(rank, cols, bv)
	}
	e.nbytes += r.bytes
	return kernels.NewLinear(file+": "+key, m, a, b)
}

func (e *exportMatrices) loadLUT(r *reader, f File, key string, want *qformat.Format, hasScale bool, rows, cols int,
	fail func(string, ...any) error) (kernels.Matrix, error) {
	lt, ok := f.Tensor(key + ".lut")
	if !ok {
		return nil, fail(".idx without .lut")
	}
	if len(lt.Shape) != 2 {
		return nil, fail(".lut has shape %v, want [entries, vector length]", lt.Shape)
	}
	entries, cd := lt.Shape[0], lt.Shape[1]
	if want != nil {
		if want.Kind != qformat.KindLUT || want.CD != cd || want.Entries != entries || want.Scaled != hasScale {
			return nil, fail("stored as a %d-entry codebook of %d-vectors (scale: %v), which is not format %q",
				entries, cd, hasScale, want.Name)
		}
	}
	if cd <= 0 || rows%cd != 0 {
		return nil, fail("vector length %d does not divide %d output rows", cd, rows)
	}
	lut, err := r.vector(key+".lut", entries, cd)
	if err != nil {
		return nil, err
	}
	idx, err := r.get(key+".idx", rows/cd, cols)
	if err != nil {
		return nil, err
	}
	if idx.DType != "U8" {
		return nil, fail(".idx has dtype %s, want U8", idx.DType)
	}
	var scale []float32
	if hasScale {
		if scale, err = r.vector(key+".scale", rows); err != nil {
			return nil, err
		}
	}
	name := "LUT"
	if want != nil {
		name = want.Name
	}
	m, err := kernels.NewLUT(name, rows, cols, cd, lut, idx.Data, scale)
	if err != nil {
		return nil, fail("%v", err)
	}
	e.nbytes += m.IndexBytes() // packed to half the file's bytes for ≤ 16 entries
	return m, nil
}

func (e *exportMatrices) rotations(i int, L *layer) error {
	c := &e.cfg
	mlp, err := e.file(mlpFile(i))
	if err != nil {
		return err
	}
	if L.rotIn, L.rotMid, err = basis(mlpFile(i), mlp.Metadata(), c.Hidden, c.Intermediate, "seed_mid"); err != nil {
		return err
	}
	mix, err := e.file(mixerFile(i))
	if err != nil {
		return err
	}
	out := c.valueDim()
	if L.full {
		out = c.Heads * c.HeadDim
	}
	L.mixIn, L.mixOut, err = basis(mixerFile(i), mix.Metadata(), c.Hidden, out, "seed_out")
	return err
}

// basis reads a file's online-basis metadata ("basis", "block", "seed_in",
// and secondKey) into the two block rotations, or nils for a plain basis.
func basis(file string, md map[string]string, nIn, nSecond int, secondKey string) (in, second *hadamard.BlockRotation, err error) {
	switch md["basis"] {
	case "", "plain":
		return nil, nil, nil
	case "online":
	default:
		return nil, nil, fmt.Errorf("%s: metadata basis %q is not \"online\" or \"plain\"", file, md["basis"])
	}
	num := func(key string) (uint64, error) {
		v, ok := md[key]
		if !ok {
			return 0, fmt.Errorf("%s: basis \"online\" but metadata %q is missing", file, key)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 63)
		if err != nil {
			return 0, fmt.Errorf("%s: metadata %q = %q is not a non-negative integer", file, key, v)
		}
		return n, nil
	}
	block, err := num("block")
	if err != nil {
		return nil, nil, err
	}
	seedIn, err := num("seed_in")
	if err != nil {
		return nil, nil, err
	}
	seed2, err := num(secondKey)
	if err != nil {
		return nil, nil, err
	}
	if block > 1<<20 {
		return nil, nil, fmt.Errorf("%s: metadata block %d is implausibly large", file, block)
	}
	if in, err = hadamard.NewBlockRotation(nIn, int(block), seedIn); err != nil {
		return nil, nil, fmt.Errorf("%s: seed_in rotation: %w", file, err)
	}
	if second, err = hadamard.NewBlockRotation(nSecond, int(block), seed2); err != nil {
		return nil, nil, fmt.Errorf("%s: %s rotation: %w", file, secondKey, err)
	}
	return in, second, nil
}

func (e *exportMatrices) bytes() int64 { return e.nbytes }

// LoadExport builds weights that execute the quantized export in files,
// with norms, DeltaNet parameters, in_proj_a/b and (unless embed is given)
// the embedding from the checkpoint source.
func LoadExport(cfg Config, checkpoint Source, files Files, embed Embedding) (*Weights, error) {
	base := &reader{src: checkpoint, where: "checkpoint"}
	e := &exportMatrices{files: files, cfg: cfg, open: map[string]File{}}
	w, err := loadWeights(cfg, base, e, embed)
	if err != nil {
		return nil, err
	}
	return w, nil
}
