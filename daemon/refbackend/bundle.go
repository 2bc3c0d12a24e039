package refbackend

import (
	"path/filepath"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/ref"
)

// OpenBundle serves a bundle directory (a store snapshot) with the pure-Go
// engine: the tokenizer and chat template from model/, the weights from
// export/ and model/embed_tokens_fp16.npy through ref.OpenBundle. The Core
// AI packages of the bundle are not used. opts.TokenizerOnly is honoured.
func OpenBundle(dir string, opts Options) (*Backend, error) {
	text := opts
	text.TokenizerOnly = true
	if text.Repo == "" {
		text.Repo = "local/" + filepath.Base(dir)
	}
	b, err := Open(filepath.Join(dir, "model"), text)
	if err != nil {
		return nil, err
	}
	if opts.TokenizerOnly {
		return b, nil
	}
	if opts.Ladder == nil {
		opts.Ladder = ane.DefaultLadder
	}
	if b.model, err = ref.OpenBundle(dir, ref.Options{Ladder: opts.Ladder}); err != nil {
		return nil, err
	}
	b.info.ContextEntries = append([]int(nil), opts.Ladder...)
	return b, nil
}
