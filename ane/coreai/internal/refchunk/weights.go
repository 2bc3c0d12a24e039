package refchunk

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
)

const prefix = "model.language_model."

// Weights are a checkpoint's tensors as float32, by Hugging Face name.
type Weights struct {
	Cfg     *hfconfig.Model
	tensors map[string][]float32
}

// LoadCheckpoint reads config.json and every tensor of the sharded (or
// single-file) safetensors checkpoint in dir.
func LoadCheckpoint(dir string) (*Weights, error) {
	cfg, err := hfconfig.LoadModel(dir)
	if err != nil {
		return nil, err
	}
	files := []string{"model.safetensors"}
	if data, err := os.ReadFile(filepath.Join(dir, "model.safetensors.index.json")); err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(data, &idx); err != nil {
			return nil, fmt.Errorf("model.safetensors.index.json: %w", err)
		}
		seen := map[string]bool{}
		files = files[:0]
		for _, f := range idx.WeightMap {
			if !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
	}
	for i, f := range files {
		files[i] = filepath.Join(dir, f)
	}
	return LoadSafetensors(cfg, files...)
}

// LoadSafetensors reads every tensor of the safetensors files as float32:
// the weights of a model of cfg, by Hugging Face name.
func LoadSafetensors(cfg *hfconfig.Model, files ...string) (*Weights, error) {
	tensors := map[string][]float32{}
	for _, path := range files {
		f, err := tensor.OpenSafetensors(path)
		if err != nil {
			return nil, err
		}
		for _, ti := range f.Tensors() {
			v, err := f.Float32(ti.Name)
			if err != nil {
				f.Close()
				return nil, err
			}
			tensors[ti.Name] = v
		}
		f.Close()
	}
	return FromTensors(cfg, tensors), nil
}

// FromTensors are the weights of a model of cfg held in tensors (float32,
// by Hugging Face name). The map is kept, not copied: it must not change
// while the weights are in use.
func FromTensors(cfg *hfconfig.Model, tensors map[string][]float32) *Weights {
	return &Weights{Cfg: cfg, tensors: tensors}
}

// get returns tensor name with n elements.
func (w *Weights) get(name string, n int) ([]float32, error) {
	v, ok := w.tensors[name]
	if !ok {
		return nil, fmt.Errorf("refchunk: checkpoint has no tensor %s", name)
	}
	if len(v) != n {
		return nil, fmt.Errorf("refchunk: tensor %s has %d elements, want %d", name, len(v), n)
	}
	return v, nil
}

// Embedding returns the embedding row of token id.
func (w *Weights) Embedding(id int) ([]float32, error) {
	H := w.Cfg.HiddenSize
	e, err := w.get(prefix+"embed_tokens.weight", w.Cfg.VocabSize*H)
	if err != nil {
		return nil, err
	}
	if id < 0 || id >= w.Cfg.VocabSize {
		return nil, fmt.Errorf("refchunk: token id %d outside [0, %d)", id, w.Cfg.VocabSize)
	}
	return e[id*H : (id+1)*H], nil
}
