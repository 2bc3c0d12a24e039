package kl

import (
	"fmt"
	"math"

	"github.com/forgedaemon/forged/ane"
)

// DefaultTopK is the published reference cache width (TOPK=256).
const DefaultTopK = 256

// Reference is the BF16 teacher cache (ref.npz): per scored position the
// top-K token ids and log-probabilities and the NLL of the actual next
// token. The trace it was made from travels with it (arrays trace_lengths,
// trace_plens, trace_ids — a project addition, so eval needs one file).
type Reference struct {
	K     int
	IDs   []int     // Npos×K
	LP    []float32 // Npos×K, descending per row
	NLL   []float32 // Npos
	Trace *Trace
}

// teacherForce runs every sequence through a fresh session of the engine
// and calls score with the log-softmax (float64) of the logits predicting
// position t+1, for t = 0 … len−2.
func teacherForce(open EngineFactory, tr *Trace, score func(seq []int, t int, logp []float64) error) error {
	for si, seq := range tr.Sequences() {
		e, done, err := open()
		if err != nil {
			return err
		}
		err = func() error {
			defer done()
			for start := 0; start < len(seq)-1; start += ane.VerifyRows {
				chunk := seq[start:min(start+ane.VerifyRows, len(seq)-1)]
				lg, err := e.Verify(chunk)
				if err != nil {
					return fmt.Errorf("sequence %d at %d: %w", si, start, err)
				}
				for r := 0; r < len(chunk); r++ {
					if err := score(seq, start+r, logSoftmax(lg.Data[r*lg.Vocab:(r+1)*lg.Vocab])); err != nil {
						return err
					}
				}
				if err := e.Accept(len(chunk)); err != nil {
					return err
				}
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

func logSoftmax(logits []float32) []float64 {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(sum)
	out := make([]float64, len(logits))
	for i, v := range logits {
		out[i] = float64(v) - lse
	}
	return out
}

// BuildReference runs the BF16 engine teacher-forced over the trace and
// keeps the top-k log-probabilities and the NLL per position.
func BuildReference(open EngineFactory, tr *Trace, k int) (*Reference, error) {
	if k <= 0 {
		return nil, fmt.Errorf("top-k %d must be positive", k)
	}
	r := &Reference{K: k, Trace: tr}
	err := teacherForce(open, tr, func(seq []int, t int, logp []float64) error {
		if k > len(logp) {
			return fmt.Errorf("top-k %d exceeds the vocabulary %d", k, len(logp))
		}
		lg := make([]float32, len(logp))
		for i, v := range logp {
			lg[i] = float32(v)
		}
		for _, s := range ane.TopK(lg, k) {
			r.IDs = append(r.IDs, s.ID)
			r.LP = append(r.LP, float32(logp[s.ID]))
		}
		r.NLL = append(r.NLL, float32(-logp[seq[t+1]]))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Write stores ref.npz: ids (Npos, K) int32, lp (Npos, K) float32, nll
// (Npos,) float32, plus the trace.
func (r *Reference) Write(path string) error {
	n := len(r.NLL)
	arrays := []Array{i32Array("ids", r.IDs, n, r.K), f32Array("lp", r.LP, n, r.K), f32Array("nll", r.NLL, n)}
	for _, a := range r.Trace.arrays() {
		a.Name = "trace_" + a.Name
		arrays = append(arrays, a)
	}
	return WriteNPZ(path, arrays)
}

// ReadReference reads and checks ref.npz.
func ReadReference(path string) (*Reference, error) {
	arrays, err := ReadNPZ(path)
	if err != nil {
		return nil, err
	}
	get := func(name string) (Array, error) {
		a, ok := arrays[name]
		if !ok {
			return a, fmt.Errorf("%s: array %q is missing (ref.npz holds ids, lp, nll and the trace)", path, name)
		}
		return a, nil
	}
	r := &Reference{Trace: &Trace{}}
	a, err := get("ids")
	if err != nil {
		return nil, err
	}
	if len(a.Shape) != 2 || a.Shape[1] <= 0 {
		return nil, fmt.Errorf("%s: ids has shape %v, want (positions, K)", path, a.Shape)
	}
	npos := a.Shape[0]
	r.K = a.Shape[1]
	if r.IDs, err = a.Ints(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if a, err = get("lp"); err != nil {
		return nil, err
	}
	if len(a.Shape) != 2 || a.Shape[0] != npos || a.Shape[1] != r.K {
		return nil, fmt.Errorf("%s: lp has shape %v, ids %v", path, a.Shape, []int{npos, r.K})
	}
	if r.LP, err = a.Floats(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if a, err = get("nll"); err != nil {
		return nil, err
	}
	if len(a.Shape) != 1 || a.Shape[0] != npos {
		return nil, fmt.Errorf("%s: nll has shape %v, want (%d,)", path, a.Shape, npos)
	}
	if r.NLL, err = a.Floats(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, name := range []string{"lengths", "plens", "ids"} {
		a, err := get("trace_" + name)
		if err != nil {
			return nil, err
		}
		v, err := a.Ints()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		switch name {
		case "lengths":
			r.Trace.Lengths = v
		case "plens":
			r.Trace.Plens = v
		case "ids":
			r.Trace.IDs = v
		}
	}
	if err := r.Trace.validate(path, 0); err != nil {
		return nil, err
	}
	if r.Trace.Positions() != npos {
		return nil, fmt.Errorf("%s: %d scored positions, the trace has %d", path, npos, r.Trace.Positions())
	}
	for i, v := range r.LP {
		if !(v <= 0) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%s: lp[%d] = %v is not a finite log-probability", path, i, v)
		}
	}
	return r, nil
}
