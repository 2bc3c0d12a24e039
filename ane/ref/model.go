package ref

import (
	"fmt"
	"io"
	"math"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/hadamard"
	"github.com/forgedaemon/forged/ane/kernels"
)

// Embedding gives rows of the token embedding table.
type Embedding interface {
	Rows() int
	Cols() int
	// Row writes row id as float32 into dst (len Cols()).
	Row(id int, dst []float32)
	Bytes() int64
}

// layer holds one decoder layer's weights; which mixer fields are set
// depends on full.
type layer struct {
	full             bool
	inNorm, postNorm []float32
	// Gated DeltaNet.
	qkv, z, b, a, out *kernels.Linear
	convW             []float32 // convDim × kernel, row-major (conv1d.weight squeezed)
	aLog, dtBias      []float32
	gNorm             []float32
	// Full attention.
	q, k, v, o   *kernels.Linear
	qNorm, kNorm []float32
	// Mixer rotations (release 0.2 export, nil when plain): mixIn rotates the
	// input of every reader projection except in_proj_a/b; mixOut rotates the
	// input of out_proj / o_proj.
	mixIn, mixOut *hadamard.BlockRotation
	// SwiGLU MLP and its online basis (nil when plain).
	gate, up, down *kernels.Linear
	rotIn, rotMid  *hadamard.BlockRotation
}

// Weights is everything a Model reads, from the checkpoint or an export.
type Weights struct {
	layers    []layer
	finalNorm []float32
	head      *kernels.Linear
	embed     Embedding
	bytes     int64 // matrices + vectors, excluding the embedding
}

// Options configure a Model.
type Options struct {
	Numerics ane.Numerics
	// Fast selects the serving numeric mode: SiLU, sigmoid, softplus and the
	// softmax exp run as ane/kernels' vectorised functions (within 2 ulp of
	// the exact forms), not the scalar float64 math of the reference mode,
	// and INT8 products (single-row and matrix-matrix) and single-row
	// packed codebook products run in integers
	// (kernels.Runner.Integer).
	// The zero value is the exact reference mode (bit-identical, what the
	// tests and the numerical comparisons pin); Numerics' function forms
	// apply to the exact mode only.
	Fast bool
	// Ladder is the context ladder sessions move over (default ane.DefaultLadder).
	Ladder ane.Ladder
	// KV is the attention history format (default fp16).
	KV ane.KVFormat
	// Threads is the worker count per session (≤ 0: GOMAXPROCS).
	Threads int
	// Taps are the layers whose output residual Features returns.
	Taps []int
}

// fastFeedRows is the fast mode's prefill block. Each block reads every
// weight once and the integer panel path decodes each weight tile once per
// block, so a larger block spreads that over more tokens: on the Zen 4 VM
// of session 14 (medium preset, 2 threads) 256 rows prefilled 1.08-1.10x
// as fast as 64 and 512 no faster than 256 (BenchmarkFeedBlock). The
// exact mode keeps Core AI's 64-row blocks, so its bits stay the
// reference's.
const fastFeedRows = 256

// feedRows is the prefill block of m's sessions.
func (m *Model) feedRows() int {
	if m.fn.fast {
		return fastFeedRows
	}
	return ane.PrefillRows
}

// Model is a loaded model: weights shared by any number of sessions.
type Model struct {
	cfg  Config
	w    *Weights
	opts Options
	fn   funcs
	inv  []float64 // RoPE inverse frequencies

	files io.Closer // mapped files backing the weights (nil in memory)
	// EOS are the end-of-sequence token ids from config.json.
	EOS []int
}

// NewModel checks the options against cfg and wraps the weights.
func NewModel(cfg Config, w *Weights, opts Options) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Ladder == nil {
		opts.Ladder = ane.DefaultLadder
	}
	l, err := ane.NewLadder(opts.Ladder)
	if err != nil {
		return nil, err
	}
	opts.Ladder = l
	switch opts.KV {
	case "":
		opts.KV = ane.KVFP16
	case ane.KVFP16, ane.KVV8:
	default:
		return nil, fmt.Errorf("KV format %q is not %q or %q", opts.KV, ane.KVFP16, ane.KVV8)
	}
	for _, t := range opts.Taps {
		if t < 0 || t >= cfg.Layers {
			return nil, fmt.Errorf("tap layer %d is outside 0..%d", t, cfg.Layers-1)
		}
	}
	if len(w.layers) != cfg.Layers {
		return nil, fmt.Errorf("weights have %d layers, config %d", len(w.layers), cfg.Layers)
	}
	m := &Model{cfg: cfg, w: w, opts: opts, fn: newFuncs(opts.Numerics, opts.Fast)}
	half := cfg.RotaryDim / 2
	m.inv = make([]float64, half)
	for i := range m.inv {
		m.inv[i] = 1 / math.Pow(cfg.RopeTheta, float64(2*i)/float64(cfg.RotaryDim))
	}
	return m, nil
}

// Config is the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// WeightBytes is what one decode step reads from the weights (every matrix
// and vector once; the single embedding row is not counted).
func (m *Model) WeightBytes() int64 { return m.w.bytes }

// EmbeddingBytes is the size of the embedding table.
func (m *Model) EmbeddingBytes() int64 { return m.w.embed.Bytes() }
