package ref

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"maps"
	"math"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/internal/parallel"
)

// A fast round-to-nearest export for benchmarks (the real quantizer is
// ane/rebuild's GPTQ): per-channel RMS scales ("+ pcs"), and fixed codebooks —
// the 16-level Lloyd–Max quantizer of N(0,1) for LUT4, its 4-level
// counterpart squared into a 16-entry 2-vector product codebook for
// vector 2x16 — so quantizing a billion weights takes seconds. Layout and
// formats are the published ones; only the codebook fitting is simplified.

var lloydMax16 = []float32{-2.7326, -2.0690, -1.6181, -1.2562, -0.9424, -0.6568, -0.3881, -0.1284,
	0.1284, 0.3881, 0.6568, 0.9424, 1.2562, 1.6181, 2.0690, 2.7326}
var lloydMax4 = []float32{-1.5104, -0.4528, 0.4528, 1.5104}

// QuickExport quantizes the BF16 checkpoint src in memory into the
// published recipe's formats (quickExport) and loads the result, taking
// the unquantized tensors and the embedding from src, which must stay
// open while the weights are used. For benchmarks (ane/ref's, bench/cpu):
// the bytes read per token and the kernels run are the recipe's, the
// codebooks are not fitted.
func QuickExport(cfg Config, src Source) (*Weights, error) {
	files, err := quickExport(cfg, src)
	if err != nil {
		return nil, err
	}
	return LoadExport(cfg, src, files, nil)
}

// memFile and memFiles are an in-memory export directory.
type memFile struct {
	MapSource
	md map[string]string
}

func (f *memFile) Metadata() map[string]string { return f.md }

type memFiles map[string]*memFile

func (m memFiles) Open(name string) (File, error) {
	f, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
	}
	return f, nil
}

// nearestLevel is the index of the entry of levels (ascending) nearest x,
// the lower one of a tie.
func nearestLevel(levels []float32, x float32) int {
	// The pairs whose upper level is the nearer are a prefix of the pairs
	// (levels ascending), so their count is the index; one comparison a
	// pair, without the branches a binary search mispredicts.
	n := 0
	for k := 0; k+1 < len(levels); k++ {
		if x-levels[k] > levels[k+1]-x {
			n++
		}
	}
	return n
}

func f16Bytes(v []float32) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], half.F16(x))
	}
	return b
}

// quickQuantize writes key's tensors for the rows×cols BF16 matrix w in
// format "LUT4 per-tensor + pcs", "vector 2x16 + pcs" or "INT8 per-channel".
func quickQuantize(dst MapSource, key, format string, w []uint16, rows, cols int) {
	row := make([]float32, cols)
	scale := make([]float32, rows)
	for r := 0; r < rows; r++ {
		half.BF16ToF32(row, w[r*cols:(r+1)*cols])
		var s float64
		mx := float32(0)
		for _, v := range row {
			s += float64(v) * float64(v)
			mx = max(mx, float32(math.Abs(float64(v))))
		}
		if format == "INT8 per-channel" {
			scale[r] = half.F16Float(half.F16(max(mx/127, 1e-12)))
		} else {
			scale[r] = half.F16Float(half.F16(float32(math.Sqrt(s / float64(cols)))))
			if scale[r] == 0 {
				scale[r] = 1
			}
		}
	}
	switch format {
	case "INT8 per-channel":
		q := make([]byte, rows*cols)
		for r := 0; r < rows; r++ {
			half.BF16ToF32(row, w[r*cols:(r+1)*cols])
			for j, v := range row {
				q[r*cols+j] = byte(int8(max(-127, min(127, math.Round(float64(v/scale[r]))))))
			}
		}
		dst[key+".int8"] = Tensor{DType: "I8", Shape: []int{rows, cols}, Data: q}
	case "LUT4 per-tensor + pcs":
		idx := make([]byte, rows*cols)
		for r := 0; r < rows; r++ {
			half.BF16ToF32(row, w[r*cols:(r+1)*cols])
			for j, v := range row {
				idx[r*cols+j] = byte(nearestLevel(lloydMax16, v/scale[r]))
			}
		}
		dst[key+".idx"] = Tensor{DType: "U8", Shape: []int{rows, cols}, Data: idx}
		dst[key+".lut"] = Tensor{DType: "F16", Shape: []int{16, 1}, Data: f16Bytes(lloydMax16)}
	case "vector 2x16 + pcs":
		idx := make([]byte, rows/2*cols)
		row2 := make([]float32, cols)
		for g := 0; g < rows/2; g++ {
			half.BF16ToF32(row, w[2*g*cols:(2*g+1)*cols])
			half.BF16ToF32(row2, w[(2*g+1)*cols:(2*g+2)*cols])
			for j := range row {
				a := nearestLevel(lloydMax4, row[j]/scale[2*g])
				b := nearestLevel(lloydMax4, row2[j]/scale[2*g+1])
				idx[g*cols+j] = byte(4*a + b)
			}
		}
		lut := make([]float32, 0, 32)
		for a := 0; a < 4; a++ {
			for b := 0; b < 4; b++ {
				lut = append(lut, lloydMax4[a], lloydMax4[b])
			}
		}
		dst[key+".idx"] = Tensor{DType: "U8", Shape: []int{rows / 2, cols}, Data: idx}
		dst[key+".lut"] = Tensor{DType: "F16", Shape: []int{16, 2}, Data: f16Bytes(lut)}
	default:
		panic("quickQuantize: format " + format)
	}
	dst[key+".scale"] = Tensor{DType: "F16", Shape: []int{rows}, Data: f16Bytes(scale)}
}

// quickExport quantizes a checkpoint into an in-memory export in the
// published layout: MLP "vector 2x16 + pcs" (plain basis), mixers "LUT4
// per-tensor + pcs" with INT8 k/v, LUT4 head.
func quickExport(cfg Config, src Source) (memFiles, error) {
	files := memFiles{}
	// mat only collects the matrices; they are quantized at the end, on
	// every CPU (each into its own map, merged afterwards).
	type job struct {
		dst, out    MapSource
		key, format string
		t           Tensor
	}
	var jobs []*job
	mat := func(dst MapSource, key, format, name string) error {
		t, ok := src.Tensor(name)
		if !ok || len(t.Shape) != 2 || t.DType != "BF16" {
			return fmt.Errorf("quick export: %s missing or not a BF16 matrix", name)
		}
		jobs = append(jobs, &job{dst: dst, out: MapSource{}, key: key, format: format, t: t})
		return nil
	}
	const mlpFmt, mixFmt, kvFmt = "vector 2x16 + pcs", "LUT4 per-tensor + pcs", "INT8 per-channel"
	for i := 0; i < cfg.Layers; i++ {
		p := layerPrefix(i)
		mf := &memFile{MapSource{}, map[string]string{"basis": "plain", "gate.format": mlpFmt, "up.format": mlpFmt, "down.format": mlpFmt}}
		for key, mod := range map[string]string{"gate": "gate_proj", "up": "up_proj", "down": "down_proj"} {
			if err := mat(mf.MapSource, key, mlpFmt, p+"mlp."+mod+".weight"); err != nil {
				return nil, err
			}
		}
		files[mlpFile(i)] = mf
		mix := &memFile{MapSource{}, map[string]string{"format": mixFmt, "kv_format": kvFmt}}
		mods := []string{"linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.out_proj"}
		if cfg.FullAttention[i] {
			mods = []string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"}
		}
		for _, mod := range mods {
			f := mixFmt
			if mod == "self_attn.k_proj" || mod == "self_attn.v_proj" {
				f = kvFmt
			}
			if err := mat(mix.MapSource, mod, f, p+mod+".weight"); err != nil {
				return nil, err
			}
		}
		files[mixerFile(i)] = mix
	}
	head := &memFile{MapSource{}, map[string]string{"format": mixFmt}}
	if err := mat(head.MapSource, "lm_head", mixFmt, headName); err != nil {
		return nil, err
	}
	files[headFile] = head
	parallel.Each(len(jobs), func(i int) {
		j := jobs[i]
		quickQuantize(j.out, j.key, j.format, half.View(j.t.Data), j.t.Shape[0], j.t.Shape[1])
	})
	for _, j := range jobs {
		maps.Copy(j.dst, j.out)
	}
	return files, nil
}
