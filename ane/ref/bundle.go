package ref

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
)

// SmallFile holds, inside an export directory, the checkpoint tensors the
// export does not quantize (norms, conv1d, A_log, dt_bias, in_proj_a/b,
// q/k norms, the final norm) under their checkpoint names, as the
// release-0.2 quantized repository ships them. With it an export runs
// without the BF16 checkpoint.
const SmallFile = "small.safetensors"

// OpenCheckpointSource maps the shards of the BF16 checkpoint in dir and
// returns its tensors by checkpoint name; close the Closer when done.
func OpenCheckpointSource(dir string) (Source, io.Closer, error) {
	files := &DirFiles{Dir: dir}
	src, err := openCheckpoint(dir, files)
	if err != nil {
		files.Close()
		return nil, nil, err
	}
	return src, files, nil
}

// OpenBundle loads a bundle directory for the reference engine: model/
// (config.json, embed_tokens_fp16.npy) and export/ (the quantized layers,
// lm_head.safetensors and small.safetensors). No BF16 checkpoint is needed.
func OpenBundle(dir string, opts Options) (*Model, error) {
	modelDir, exportDir := filepath.Join(dir, "model"), filepath.Join(dir, "export")
	cm, err := hfconfig.LoadModel(modelDir)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	exports := &DirFiles{Dir: exportDir}
	closeAll := closers{exports}
	embedPath := filepath.Join(modelDir, tensor.EmbeddingNPY)
	var embed Embedding
	if _, err = os.Stat(embedPath); errors.Is(err, os.ErrNotExist) {
		err = fmt.Errorf("bundle %s: model/%s is missing (the reference engine reads the embedding from it)", dir, tensor.EmbeddingNPY)
	} else if err == nil {
		var npy io.Closer
		embed, npy, err = openNPYEmbedding(embedPath, cm)
		if npy != nil {
			closeAll = append(closeAll, npy)
		}
	}
	var small File
	if err == nil {
		if small, err = exports.Open(SmallFile); err != nil {
			err = fmt.Errorf("bundle %s: export/%s (the unquantized small tensors): %w", dir, SmallFile, err)
		}
	}
	var w *Weights
	if err == nil {
		base := &reader{src: small, where: filepath.Join(exportDir, SmallFile)}
		w, err = loadWeights(ConfigFromModel(cm), base, &exportMatrices{files: exports, cfg: ConfigFromModel(cm), open: map[string]File{}}, embed)
	}
	return finish(cm, w, opts, closeAll, err)
}
