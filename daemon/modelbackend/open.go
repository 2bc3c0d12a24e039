package modelbackend

import (
	"path/filepath"
	"runtime"

	"github.com/forgedaemon/forged/client/wire"
)

// OpenSnapshot serves a bundle snapshot with the backend opts.Backend asks
// for (Choose: Auto picks Core AI on a Mac with the bridge, else the
// reference engine over export/). A snapshot no backend can serve here is
// an *UnavailableError naming what is missing and the fix; the tokenizer
// alone (opts.TokenizerOnly) needs neither.
func OpenSnapshot(dir string, opts Options) (*Backend, error) {
	b, err := openText(filepath.Join(dir, "model"), opts, modelName(opts.Repo, dir))
	if err != nil || opts.TokenizerOnly {
		return b, err
	}
	have := SnapshotContents(dir)
	var br Bridge
	if have.CoreAI && (opts.Backend == wire.BackendCoreAI || runtime.GOOS == "darwin" && opts.Backend != wire.BackendRef) {
		br = ProbeBridge(opts.Bridge)
	}
	choice, err := Choose(opts.Backend, runtime.GOOS, br, have)
	if err != nil {
		return nil, err
	}
	if choice.Backend == wire.BackendCoreAI {
		err = b.openCoreAI(dir, opts, br, choice.Why)
	} else {
		err = b.openRefBundle(dir, opts, choice.Why)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// OpenRefBundle serves a snapshot with the reference engine (backend ref):
// the tokenizer and chat template from model/, the weights from export/
// and model/embed_tokens_fp16.npy through ref.OpenBundle, the drafter
// opts.Drafter, else the bundle's drafter/ when it carries CPU weights
// (model.safetensors beside the Core AI package), else prompt lookup.
func OpenRefBundle(dir string, opts Options) (*Backend, error) {
	opts.Backend = wire.BackendRef
	return OpenSnapshot(dir, opts)
}

// OpenCoreAIBundle serves a snapshot through Core AI (backend coreai): the
// tokenizer and chat template from model/, the embedding from
// model/embed_tokens_fp16.npy, the chunk and head packages of coreai/
// through the bridge at opts.Bridge (cai.FindBridge when ""), and the
// bundle's DFlash2 drafter package when it passes the pairing rules
// (prompt lookup otherwise, with the refused rule in Speculation).
func OpenCoreAIBundle(dir string, opts Options) (*Backend, error) {
	opts.Backend = wire.BackendCoreAI
	return OpenSnapshot(dir, opts)
}
