package ref

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/forgedaemon/forged/ane/format/tensor"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/layout"
)

// ConfigFromModel takes the dimensions the forward pass needs from a
// parsed config.json.
func ConfigFromModel(m *hfconfig.Model) Config {
	c := Config{
		Vocab: m.VocabSize, Hidden: m.HiddenSize, Intermediate: m.IntermediateSize, Layers: m.NumHiddenLayers,
		Heads: m.NumAttentionHeads, KVHeads: m.NumKeyValueHeads, HeadDim: m.HeadDim, RotaryDim: m.RotaryDim(),
		RopeTheta:   m.RopeTheta,
		LinKeyHeads: m.LinearNumKeyHeads, LinValueHeads: m.LinearNumValueHeads,
		LinKeyDim: m.LinearKeyHeadDim, LinValueDim: m.LinearValueHeadDim, ConvKernel: m.LinearConvKernelDim,
		Eps: m.RMSNormEps,
	}
	for i := 0; i < m.NumHiddenLayers; i++ {
		c.FullAttention = append(c.FullAttention, m.IsFullAttention(i))
	}
	return c
}

// Open loads the BF16 checkpoint in dir (config.json, the shards listed by
// model.safetensors.index.json) for dense execution. Every tensor of the
// checkpoint table (ane/format/layout) must be present with its shape.
func Open(dir string, opts Options) (*Model, error) {
	cm, err := hfconfig.LoadModel(dir)
	if err != nil {
		return nil, err
	}
	files := &DirFiles{Dir: dir}
	src, err := openCheckpoint(dir, files)
	if err == nil {
		err = checkTable(dir, cm, src)
	}
	var w *Weights
	if err == nil {
		w, err = LoadCheckpoint(ConfigFromModel(cm), src)
	}
	return finish(cm, w, opts, files, err)
}

// OpenExport loads the quantized export in exportDir, taking what the export
// does not hold (norms, DeltaNet parameters, in_proj_a/b and the embedding)
// from the checkpoint in modelDir.
func OpenExport(modelDir, exportDir string, opts Options) (*Model, error) {
	cm, err := hfconfig.LoadModel(modelDir)
	if err != nil {
		return nil, err
	}
	files := &DirFiles{Dir: modelDir}
	exports := &DirFiles{Dir: exportDir}
	closeAll := closers{files, exports}
	src, err := openCheckpoint(modelDir, files)
	var embed Embedding
	if err == nil {
		var npy io.Closer
		embed, npy, err = openNPYEmbedding(filepath.Join(exportDir, tensor.EmbeddingNPY), cm)
		if npy != nil {
			closeAll = append(closeAll, npy)
		}
	}
	var w *Weights
	if err == nil {
		w, err = LoadExport(ConfigFromModel(cm), src, exports, embed)
	}
	return finish(cm, w, opts, closeAll, err)
}

// openNPYEmbedding maps path if it exists (nil, nil, nil if it does not).
func openNPYEmbedding(path string, cm *hfconfig.Model) (Embedding, io.Closer, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	t, err := tensor.OpenF16Table(path, cm.VocabSize, cm.HiddenSize)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (vocab × hidden)", err)
	}
	return t, t, nil
}

type closers []io.Closer

func (c closers) Close() error {
	var errs []error
	for _, x := range c {
		errs = append(errs, x.Close())
	}
	return errors.Join(errs...)
}

func finish(cm *hfconfig.Model, w *Weights, opts Options, files io.Closer, err error) (*Model, error) {
	var m *Model
	if err == nil {
		m, err = NewModel(ConfigFromModel(cm), w, opts)
	}
	if err != nil {
		files.Close()
		return nil, err
	}
	m.files, m.EOS = files, slices.Clone(cm.EOSTokenIDs)
	return m, nil
}

// checkTable verifies the checkpoint against the one tensor table.
func checkTable(dir string, cm *hfconfig.Model, src Source) error {
	for _, spec := range layout.CheckpointTensors(cm) {
		t, ok := src.Tensor(spec.Name)
		if !ok {
			return fmt.Errorf("checkpoint %s: tensor %q is missing", dir, spec.Name)
		}
		if !slices.Equal(t.Shape, spec.Shape) {
			return fmt.Errorf("checkpoint %s: tensor %q has shape %v, config.json needs %v", dir, spec.Name, t.Shape, spec.Shape)
		}
	}
	return nil
}

// Close releases the files the weights are mapped from; sessions must be
// closed first.
func (m *Model) Close() error {
	if m.files == nil {
		return nil
	}
	return m.files.Close()
}
