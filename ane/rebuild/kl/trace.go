// Package kl measures how far a quantized export's next-token
// distributions are from the BF16 reference's (Anemll/anemll-forge scripts/qwen38_kl.py): a trace
// of token sequences (generated with the reference engine or supplied), a
// reference cache with the BF16 model's top-K log-probabilities and NLL per
// position (the published ref.npz layout), and the evaluation of an export
// with the top-K + tail formula, in nats.
package kl

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/sample"
)

// Trace is a set of token sequences: prompt then generation, concatenated
// in IDs (the published trace.npz: lengths, plens, ids).
type Trace struct {
	Lengths []int
	Plens   []int
	IDs     []int
}

// Sequences splits IDs by Lengths.
func (t *Trace) Sequences() [][]int {
	var out [][]int
	off := 0
	for _, n := range t.Lengths {
		out = append(out, t.IDs[off:off+n])
		off += n
	}
	return out
}

// Positions is how many next-token predictions the trace scores: len−1
// per sequence, prompt positions included (as the published evaluator).
func (t *Trace) Positions() int {
	n := 0
	for _, l := range t.Lengths {
		n += l - 1
	}
	return n
}

// Hash identifies the trace: SHA-256 over its three arrays as stored.
func (t *Trace) Hash() string {
	h := sha256.New()
	for _, a := range t.arrays() {
		h.Write([]byte(a.Name))
		h.Write(a.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (t *Trace) arrays() []Array {
	return []Array{i64Array("lengths", t.Lengths), i64Array("plens", t.Plens), i32Array("ids", t.IDs, len(t.IDs))}
}

func (t *Trace) validate(where string, vocab int) error {
	if len(t.Lengths) == 0 || len(t.Lengths) != len(t.Plens) {
		return fmt.Errorf("%s: %d lengths and %d prompt lengths (want the same, at least one)", where, len(t.Lengths), len(t.Plens))
	}
	total := 0
	for i, n := range t.Lengths {
		if n < 2 {
			return fmt.Errorf("%s: sequence %d has %d tokens; at least 2 are needed to score one position", where, i, n)
		}
		if t.Plens[i] < 0 || t.Plens[i] > n {
			return fmt.Errorf("%s: sequence %d has prompt length %d of %d tokens", where, i, t.Plens[i], n)
		}
		total += n
	}
	if total != len(t.IDs) {
		return fmt.Errorf("%s: lengths sum to %d, ids hold %d", where, total, len(t.IDs))
	}
	if vocab > 0 {
		for i, id := range t.IDs {
			if id < 0 || id >= vocab {
				return fmt.Errorf("%s: token id %d at index %d is out of range [0, %d)", where, id, i, vocab)
			}
		}
	}
	return nil
}

// WriteTrace writes trace.npz.
func WriteTrace(path string, t *Trace) error {
	if err := t.validate(path, 0); err != nil {
		return err
	}
	return WriteNPZ(path, t.arrays())
}

// ReadTrace reads a trace: an .npz with lengths, plens and ids, or an .npy
// of token rows (rows, seq), each row a sequence without a prompt. Ids are
// checked against vocab (when > 0).
func ReadTrace(path string, vocab int) (*Trace, error) {
	var t Trace
	if strings.EqualFold(filepath.Ext(path), ".npy") {
		f, err := tensor.OpenNPY(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		h := f.Header()
		if len(h.Shape) != 2 {
			return nil, fmt.Errorf("%s: a .npy trace is (sequences, tokens), got shape %v", path, h.Shape)
		}
		ids, err := Array{Name: "ids", Descr: h.Descr, Shape: h.Shape, Data: f.Data()}.Ints()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for r := 0; r < h.Shape[0]; r++ {
			t.Lengths = append(t.Lengths, h.Shape[1])
			t.Plens = append(t.Plens, 0)
		}
		t.IDs = ids
	} else {
		arrays, err := ReadNPZ(path)
		if err != nil {
			return nil, err
		}
		for _, name := range []string{"lengths", "plens", "ids"} {
			a, ok := arrays[name]
			if !ok {
				return nil, fmt.Errorf("%s: array %q is missing (a trace holds lengths, plens, ids)", path, name)
			}
			v, err := a.Ints()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			switch name {
			case "lengths":
				t.Lengths = v
			case "plens":
				t.Plens = v
			case "ids":
				t.IDs = v
			}
		}
	}
	if err := t.validate(path, vocab); err != nil {
		return nil, err
	}
	return &t, nil
}

// GenerateOptions configure trace generation; zero values take the
// published settings (temperature 0.6, top-p 0.95, top-k 20, 768 new
// tokens).
type GenerateOptions struct {
	MaxNew      int
	Seed        uint64
	Temperature float64
	TopP        float64
	TopK        int
	EOS         []int
}

// EngineFactory opens a fresh engine session (one per sequence).
type EngineFactory func() (ane.Engine, func(), error)

// Generate samples a continuation of every prompt with the engine and
// returns the trace, each sequence cut after its first EOS token. Prompt i
// is sampled with seed Seed+i, so the trace is reproducible.
func Generate(open EngineFactory, prompts [][]int, o GenerateOptions) (*Trace, error) {
	if o.MaxNew == 0 {
		o.MaxNew = 768
	}
	if o.Temperature == 0 {
		o.Temperature = 0.6
	}
	if o.TopP == 0 {
		o.TopP = 0.95
	}
	if o.TopK == 0 {
		o.TopK = 20
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("trace: no prompts")
	}
	t := &Trace{}
	for i, prompt := range prompts {
		if len(prompt) == 0 {
			return nil, fmt.Errorf("trace: prompt %d is empty", i)
		}
		smp, err := sample.New(sample.Options{Temperature: o.Temperature, TopP: o.TopP, TopK: o.TopK, Seed: o.Seed + uint64(i)})
		if err != nil {
			return nil, err
		}
		e, done, err := open()
		if err != nil {
			return nil, err
		}
		seq := append([]int(nil), prompt...)
		_, err = decode(e, prompt, func(logits []float32) (int, bool, error) {
			id, err := smp.Sample(logits, seq[len(prompt):])
			if err != nil {
				return 0, true, err
			}
			seq = append(seq, id)
			stop := len(seq)-len(prompt) >= o.MaxNew
			for _, eos := range o.EOS {
				stop = stop || id == eos
			}
			return id, stop, nil
		})
		done()
		if err != nil {
			return nil, fmt.Errorf("trace: prompt %d: %w", i, err)
		}
		t.Lengths = append(t.Lengths, len(seq))
		t.Plens = append(t.Plens, len(prompt))
		t.IDs = append(t.IDs, seq...)
	}
	return t, t.validate("trace", 0)
}

// SessionOpener is what a loaded model offers: fresh sessions.
type SessionOpener[S ane.Engine] interface{ NewSession() S }

// SessionFactory opens a new session of m for every sequence.
func SessionFactory[S interface {
	ane.Engine
	Close() error
}](m SessionOpener[S]) EngineFactory {
	return func() (ane.Engine, func(), error) {
		s := m.NewSession()
		return s, func() { s.Close() }, nil
	}
}

// WithProgress wraps open so fn is called with the number of sequences
// finished each time one finishes (every step here opens one session per
// sequence), for progress reports.
func WithProgress(open EngineFactory, fn func(done int)) EngineFactory {
	if fn == nil {
		return open
	}
	n := 0
	return func() (ane.Engine, func(), error) {
		e, done, err := open()
		if err != nil {
			return nil, nil, err
		}
		return e, func() { done(); n++; fn(n) }, nil
	}
}
