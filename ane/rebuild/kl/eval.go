package kl

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/bits"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/bundle"
)

// tailFloor is where the published evaluator clamps tail masses.
const tailFloor = 1e-12

// PositionKL is the coarsened KL(p‖q) of one position in nats: the sum
// over the reference's top-K tokens of p(lp − lq) plus the tail bucket
// p_tail(log p_tail − log q_tail), tails clamped at 1e-12.
func PositionKL(ids []int, lp []float32, logq []float64) float64 {
	var kl, pTop, qTop float64
	for i, id := range ids {
		p := math.Exp(float64(lp[i]))
		kl += p * (float64(lp[i]) - logq[id])
		pTop += p
		qTop += math.Exp(logq[id])
	}
	pTail := math.Max(1-pTop, tailFloor)
	qTail := math.Max(1-qTop, tailFloor)
	return kl + pTail*(math.Log(pTail)-math.Log(qTail))
}

// Result is an evaluation report (kl_<tag>.json), plus what identifies the
// comparison: K, the trace hash and the export's identity.
type Result struct {
	Tag          string  `json:"tag"`
	Tokens       int     `json:"tokens"`
	MeanKL       float64 `json:"mean_kl"`
	MedianKL     float64 `json:"median_kl"`
	P99KL        float64 `json:"p99_kl"`
	Top1Agree    float64 `json:"top1_agree"`
	PPL          float64 `json:"ppl"`
	RefPPL       float64 `json:"ref_ppl"`
	SizeGiB      float64 `json:"size_gib"`
	TopK         int     `json:"top_k"`
	TraceSHA256  string  `json:"trace_sha256"`
	Export       string  `json:"export"`
	ExportSHA256 string  `json:"export_sha256"`
}

// Evaluate scores the engine against the reference: per position KL,
// top-1 agreement with the reference's argmax, perplexities.
func Evaluate(open EngineFactory, r *Reference) (*Result, []float32, error) {
	var perPos []float32
	var nll, refNLL float64
	agree, pos := 0, 0
	err := teacherForce(open, r.Trace, func(seq []int, t int, logq []float64) error {
		ids := r.IDs[pos*r.K : (pos+1)*r.K]
		for _, id := range ids {
			if id < 0 || id >= len(logq) {
				return fmt.Errorf("reference token id %d at position %d is outside the vocabulary %d", id, pos, len(logq))
			}
		}
		kl := PositionKL(ids, r.LP[pos*r.K:(pos+1)*r.K], logq)
		perPos = append(perPos, float32(kl))
		best := 0
		for i, v := range logq {
			if v > logq[best] {
				best = i
			}
		}
		if best == ids[0] {
			agree++
		}
		nll -= logq[seq[t+1]]
		refNLL += float64(r.NLL[pos])
		pos++
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	n := float64(pos)
	res := &Result{Tokens: pos, TopK: r.K, TraceSHA256: r.Trace.Hash(),
		Top1Agree: float64(agree) / n, PPL: math.Exp(nll / n), RefPPL: math.Exp(refNLL / n)}
	var sum float64
	for _, v := range perPos {
		sum += float64(v)
	}
	res.MeanKL = sum / n
	sorted := slices.Clone(perPos)
	slices.Sort(sorted)
	res.MedianKL = percentile(sorted, 50)
	res.P99KL = percentile(sorted, 99)
	return res, perPos, nil
}

// percentile interpolates linearly between order statistics, as
// numpy.percentile's default.
func percentile(sorted []float32, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	x := q / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(x))
	hi := min(lo+1, len(sorted)-1)
	f := x - float64(lo)
	return float64(sorted[lo])*(1-f) + float64(sorted[hi])*f
}

// WritePositions writes the per-position KL as a float32 .npy (klpos_<tag>.npy).
func WritePositions(path string, kl []float32) error {
	a := f32Array("klpos", kl, len(kl))
	return tensor.WriteNPY(path, a.Descr, a.Shape, a.Data)
}

// ExportSize is the quantized size the evaluator reports (size_gib, in
// bytes): every .safetensors tensor of the export directory with indices
// at ceil(log2 K) bits (K from the matching .lut), INT8 codes at one byte,
// FP16/BF16 values at two; the embedding table is not counted, the head
// is. identity is the SHA-256 over the files' names and contents, sorted.
func ExportSize(dir string) (size int64, identity string, err error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return 0, "", err
	}
	if len(names) == 0 {
		return 0, "", fmt.Errorf("export %s holds no .safetensors files", dir)
	}
	sort.Strings(names)
	id := sha256.New()
	var bitsTotal int64
	for _, name := range names {
		f, err := tensor.OpenSafetensors(name)
		if err != nil {
			return 0, "", err
		}
		for _, t := range f.Tensors() {
			switch {
			case strings.HasSuffix(t.Name, ".idx"):
				lut, ok := f.Tensor(strings.TrimSuffix(t.Name, ".idx") + ".lut")
				if !ok || len(lut.Shape) != 2 {
					f.Close()
					return 0, "", fmt.Errorf("%s: %s has no codebook", name, t.Name)
				}
				bitsTotal += t.Size * int64(bits.Len(uint(lut.Shape[0]-1)))
			default:
				bitsTotal += 8 * t.Size
			}
		}
		f.Close()
		sum, _, err := bundle.HashFile(name)
		if err != nil {
			return 0, "", err
		}
		fmt.Fprintf(id, "%s %s\n", filepath.Base(name), sum)
	}
	return (bitsTotal + 7) / 8, hex.EncodeToString(id.Sum(nil)), nil
}
