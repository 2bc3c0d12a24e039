// Package synth writes deterministic synthetic qwen3_5 checkpoints in the
// real Hugging Face layout: config.json, BF16 safetensors shards with
// model.safetensors.index.json, a small but real byte-level BPE
// tokenizer.json, tokenizer_config.json with a ChatML chat template, and
// generation_config.json. They stand in for the 27B checkpoint in tests and
// benchmarks of the engine and the rebuild path (docs/SYNTHETIC.md).
package synth

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/layout"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/internal/atomicfile"
	"github.com/forgedaemon/forged/internal/parallel"
)

// Options selects what Generate writes.
type Options struct {
	Preset string // tiny | small | medium
	Seed   uint64
}

// File is one file Generate wrote.
type File struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// Report describes a generated checkpoint.
type Report struct {
	Dir            string `json:"dir"`
	Preset         string `json:"preset"`
	Seed           uint64 `json:"seed"`
	Parameters     int64  `json:"parameters"`
	Tensors        int    `json:"tensors"`
	Shards         int    `json:"shards"`
	TokenizerVocab int    `json:"tokenizer_vocab"`
	HadamardBlock  int    `json:"hadamard_block"`
	Files          []File `json:"files"`
	TotalBytes     int64  `json:"total_bytes"`
}

// Generate writes the checkpoint of opts into dir (created if missing).
func Generate(dir string, opts Options) error {
	_, err := Write(dir, opts)
	return err
}

// Write is Generate returning a report of what it wrote. Files of the same
// names are replaced (each atomically), shard files of an earlier
// checkpoint that this one does not have are removed, and any other file
// in dir is left alone. On error every file it created is removed again,
// so dir never holds a partial model.
func Write(dir string, opts Options) (rep *Report, err error) {
	p, err := LookupPreset(opts.Preset)
	if err != nil {
		return nil, err
	}
	vocab, err := vocabularyFor(p.Vocab)
	if err != nil {
		return nil, err
	}
	cfg := p.config(vocab)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("synth: preset %s: %w", p.Name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}

	var written []string
	defer func() {
		if err != nil {
			for _, name := range written {
				os.Remove(filepath.Join(dir, name))
			}
		}
	}()
	writeFile := func(name string, data []byte) error {
		written = append(written, name)
		if err := atomicfile.Write(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("synth: writing %s: %w", filepath.Join(dir, name), err)
		}
		return nil
	}

	specs := layout.CheckpointTensors(cfg)
	shards := planShards(specs, p.MaxShardBytes)
	weightMap := map[string]string{}
	var total int64
	names := make([]string, len(shards))
	for i, shard := range shards {
		names[i] = fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		written = append(written, names[i])
		for _, s := range shard {
			weightMap[s.Name] = names[i]
			total += 2 * s.Elements()
		}
	}
	if err := writeShards(dir, names, shards, opts.Seed); err != nil {
		return nil, err
	}

	index, err := marshalIndent(orderedObject{
		{"metadata", orderedObject{{"total_size", total}}},
		{"weight_map", weightMap}, // encoding/json sorts the keys
	})
	if err != nil {
		return nil, err
	}
	cfgJSON, err := cfg.MarshalHF()
	if err != nil {
		return nil, fmt.Errorf("synth: config.json: %w", err)
	}
	tok, err := vocab.tokenizerJSON()
	if err != nil {
		return nil, err
	}
	tokCfg, err := vocab.tokenizerConfigJSON()
	if err != nil {
		return nil, err
	}
	gen, err := generationConfigJSON(vocab)
	if err != nil {
		return nil, err
	}
	prov, err := marshalIndent(orderedObject{
		{"generator", "forged synth"},
		{"format_version", 1},
		{"preset", p.Name},
		{"seed", opts.Seed},
		{"hadamard_block", p.HadamardBlock},
		{"tokenizer_vocab", vocab.Size()},
	})
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"model.safetensors.index.json", index},
		{"config.json", cfgJSON},
		{"tokenizer.json", tok},
		{"tokenizer_config.json", tokCfg},
		{"generation_config.json", gen},
		{"synth.json", prov},
	} {
		if err := writeFile(f.name, f.data); err != nil {
			return nil, err
		}
	}

	if err := removeStaleShards(dir, written); err != nil {
		return nil, err
	}

	rep = &Report{
		Dir: dir, Preset: p.Name, Seed: opts.Seed, Parameters: total / 2,
		Tensors: len(specs), Shards: len(shards), TokenizerVocab: vocab.Size(),
		HadamardBlock: p.HadamardBlock,
	}
	sort.Strings(written)
	for _, name := range written {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("synth: %w", err)
		}
		rep.Files = append(rep.Files, File{name, st.Size()})
		rep.TotalBytes += st.Size()
	}
	return rep, nil
}

// removeStaleShards deletes shard files of an earlier checkpoint in dir
// (for example one with more shards) that this run did not write, so the
// directory holds exactly one consistent model.
func removeStaleShards(dir string, written []string) error {
	old, err := filepath.Glob(filepath.Join(dir, "model-*-of-*.safetensors"))
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	for _, path := range old {
		if !slices.Contains(written, filepath.Base(path)) {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("synth: removing stale shard: %w", err)
			}
		}
	}
	return nil
}

// planShards packs tensors, in layout order, into shards of at most max
// bytes (a tensor larger than max gets a shard of its own).
func planShards(specs []layout.TensorSpec, max int64) [][]layout.TensorSpec {
	var shards [][]layout.TensorSpec
	var cur []layout.TensorSpec
	var size int64
	for _, s := range specs {
		b := 2 * s.Elements()
		if len(cur) > 0 && size+b > max {
			shards = append(shards, cur)
			cur, size = nil, 0
		}
		cur = append(cur, s)
		size += b
	}
	if len(cur) > 0 {
		shards = append(shards, cur)
	}
	return shards
}

// chunkElements bounds the memory used while a tensor is written.
const chunkElements = 1 << 18

// writeShard streams the shard's tensors through the safetensors Writer,
// a bounded chunk of rows at a time.
// writeShards writes shard i to dir/names[i], as many at once as there are
// CPUs: each tensor has its own generator (tensorRNG), so the bytes do not
// depend on the order. It returns the shards' errors, joined, after every
// writer has stopped.
func writeShards(dir string, names []string, shards [][]layout.TensorSpec, seed uint64) error {
	errs := make([]error, len(shards))
	parallel.Each(len(shards), func(i int) {
		errs[i] = writeShard(filepath.Join(dir, names[i]), shards[i], seed)
	})
	return errors.Join(errs...)
}

func writeShard(path string, specs []layout.TensorSpec, seed uint64) error {
	st := make([]tensor.Spec, len(specs))
	for i, s := range specs {
		st[i] = tensor.Spec{Name: s.Name, DType: tensor.BF16, Shape: s.Shape}
	}
	w, err := tensor.NewWriter(path, map[string]string{"format": "pt"}, st)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	var (
		vals []float32
		bf   []uint16
		raw  []byte
	)
	for _, s := range specs {
		fill := newFiller(seed, s)
		rowsPerChunk := max(1, chunkElements/fill.cols)
		for r := 0; r < s.Shape[0]; r += rowsPerChunk {
			n := min(rowsPerChunk, s.Shape[0]-r) * fill.cols
			if n > len(vals) { // first chunk, or a row wider than a chunk
				vals, bf, raw = make([]float32, n), make([]uint16, n), make([]byte, 2*n)
			}
			fill.next(vals[:n])
			half.F32ToBF16(bf[:n], vals[:n])
			for i, v := range bf[:n] {
				binary.LittleEndian.PutUint16(raw[2*i:], v)
			}
			if err := w.Write(s.Name, raw[:2*n]); err != nil {
				w.Abort()
				return fmt.Errorf("synth: %w", err)
			}
		}
	}
	if err := w.Commit(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// generationConfigJSON holds the sampling defaults of the published server
// (non-thinking: temperature 0.7, top_p 0.8, top_k 20) and the EOS ids.
func generationConfigJSON(v *Vocabulary) ([]byte, error) {
	return marshalIndent(orderedObject{
		{"bos_token_id", v.ID("<|endoftext|>")},
		{"do_sample", true},
		{"eos_token_id", []int{v.ID("<|im_end|>"), v.ID("<|endoftext|>")}},
		{"pad_token_id", v.ID("<|endoftext|>")},
		{"temperature", 0.7},
		{"top_k", 20},
		{"top_p", 0.8},
		{"repetition_penalty", 1.0},
	})
}
