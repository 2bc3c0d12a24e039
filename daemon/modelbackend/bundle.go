package modelbackend

import (
	"os"
	"path/filepath"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/dflash"
	"github.com/forgedaemon/forged/ane/ref"
)

// OpenBundle serves a bundle directory (a store snapshot) with the pure-Go
// engine: the tokenizer and chat template from model/, the weights from
// export/ and model/embed_tokens_fp16.npy through ref.OpenBundle. The Core
// AI packages of the bundle are not used. The drafter is opts.Drafter, else
// the bundle's drafter/ when it carries CPU weights (model.safetensors
// beside the Core AI package), else prompt lookup. opts.TokenizerOnly is
// honoured.
func OpenBundle(dir string, opts Options) (*Backend, error) {
	if opts.Repo == "" {
		opts.Repo = "local/" + filepath.Base(dir)
	}
	b, err := openText(filepath.Join(dir, "model"), opts)
	if err != nil || opts.TokenizerOnly {
		return b, err
	}
	if opts.Ladder == nil {
		opts.Ladder = ane.DefaultLadder
	}
	m, err := ref.OpenBundle(dir, ref.Options{Ladder: opts.Ladder})
	if err != nil {
		return nil, err
	}
	if opts.Drafter == "" {
		if d := filepath.Join(dir, "drafter"); fileExists(filepath.Join(d, dflash.WeightsFile)) {
			opts.Drafter = d
		}
	}
	b.serve(m, opts, filepath.Join(dir, "model"), filepath.Join(dir, "export"))
	return b, nil
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
