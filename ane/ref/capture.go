package ref

import (
	"errors"
	"fmt"
	"strings"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/kernels"
	"github.com/forgedaemon/forged/ane/nn"
)

// Calibration hooks for the rebuild path (ane/rebuild): one decoder layer of
// a BF16 checkpoint loaded on its own, run over whole calibration sequences
// with the inputs of its projections handed to a callback, and its
// projections replaceable by quantized (dequantized) weights. The layer is
// executed by the same code as every Session (attention, deltaNet, mlp), so
// calibration sees exactly the reference forward pass.

// Point names where a layer's projection inputs are captured.
type Point int

const (
	// MixerIn is the normed input of the mixer's reader projections
	// (in_proj_qkv and in_proj_z, or q/k/v_proj).
	MixerIn Point = iota
	// MixerOut is the input of out_proj / o_proj.
	MixerOut
	// MLPIn is the normed input of gate_proj and up_proj.
	MLPIn
	// DownIn is silu(gate)·up, the input of down_proj.
	DownIn
)

// CaptureFunc receives n rows of one capture point; rows are valid only
// during the call.
type CaptureFunc func(p Point, rows []float32, n int)

// LayerModel is decoder layer Layer of a checkpoint as a one-layer model.
type LayerModel struct {
	Layer int
	full  bool
	m     *Model
	s     *Session
	files *DirFiles
}

// layerSource presents layer li of a checkpoint as layer 0 of a one-layer
// model with a one-token vocabulary (zero embedding and head rows: the
// layer never needs them).
type layerSource struct {
	src    Source
	li     int
	hidden int
}

func (l layerSource) Tensor(name string) (Tensor, bool) {
	switch {
	case strings.HasPrefix(name, layerPrefix(0)):
		return l.src.Tensor(layerPrefix(l.li) + strings.TrimPrefix(name, layerPrefix(0)))
	case name == embedName || name == headName:
		return Tensor{DType: "BF16", Shape: []int{1, l.hidden}, Data: make([]byte, 2*l.hidden)}, true
	}
	return l.src.Tensor(name)
}

// OpenLayer maps the checkpoint in dir and loads decoder layer li for
// sequences of up to maxLen tokens. Only that layer's pages are touched;
// Close unmaps the checkpoint, so a layer-by-layer pass holds one layer.
func OpenLayer(dir string, li, maxLen, threads int, numerics ane.Numerics) (*LayerModel, error) {
	cm, err := hfconfig.LoadModel(dir)
	if err != nil {
		return nil, err
	}
	files := &DirFiles{Dir: dir}
	src, err := openCheckpoint(dir, files)
	var lm *LayerModel
	if err == nil {
		lm, err = NewLayerModel(ConfigFromModel(cm), src, li, maxLen, threads, numerics)
	}
	if err != nil {
		files.Close()
		return nil, err
	}
	lm.files = files
	return lm, nil
}

// NewLayerModel loads decoder layer li of the checkpoint src (config cfg).
func NewLayerModel(cfg Config, src Source, li, maxLen, threads int, numerics ane.Numerics) (*LayerModel, error) {
	if li < 0 || li >= cfg.Layers {
		return nil, fmt.Errorf("layer %d is outside 0..%d", li, cfg.Layers-1)
	}
	if maxLen <= 0 {
		return nil, fmt.Errorf("calibration length %d must be positive", maxLen)
	}
	one := cfg
	one.Layers, one.Vocab = 1, 1
	one.FullAttention = []bool{cfg.FullAttention[li]}
	w, err := LoadCheckpoint(one, layerSource{src, li, cfg.Hidden})
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), layerPrefix(0), layerPrefix(li)))
	}
	m, err := NewModel(one, w, Options{Numerics: numerics, Ladder: ane.Ladder{maxLen}, Threads: threads})
	if err != nil {
		return nil, err
	}
	return &LayerModel{Layer: li, full: cfg.FullAttention[li], m: m, s: m.NewSession()}, nil
}

// Close stops the layer's workers and unmaps the checkpoint.
func (lm *LayerModel) Close() error {
	lm.s.Close()
	if lm.files != nil {
		return lm.files.Close()
	}
	return nil
}

// FullAttention reports whether the layer is a full-attention layer.
func (lm *LayerModel) FullAttention() bool { return lm.full }

// linear returns the layer's projection called module.
func (lm *LayerModel) linear(module string) (**kernels.Linear, error) {
	L := &lm.m.w.layers[0]
	var p **kernels.Linear
	switch module {
	case "mlp.gate_proj":
		p = &L.gate
	case "mlp.up_proj":
		p = &L.up
	case "mlp.down_proj":
		p = &L.down
	case "linear_attn.in_proj_qkv":
		p = &L.qkv
	case "linear_attn.in_proj_z":
		p = &L.z
	case "linear_attn.out_proj":
		p = &L.out
	case "self_attn.q_proj":
		p = &L.q
	case "self_attn.k_proj":
		p = &L.k
	case "self_attn.v_proj":
		p = &L.v
	case "self_attn.o_proj":
		p = &L.o
	}
	if p == nil || *p == nil {
		return nil, fmt.Errorf("layer %d has no projection %q", lm.Layer, module)
	}
	return p, nil
}

// Weight returns a float32 copy of module's current weights and its shape.
func (lm *LayerModel) Weight(module string) (w []float32, rows, cols int, err error) {
	p, err := lm.linear(module)
	if err != nil {
		return nil, 0, 0, err
	}
	return (*p).Dense(), (*p).Rows(), (*p).Cols(), nil
}

// SetWeight replaces module by the dense rows×cols matrix w (kept, not
// copied), so later runs compute with it.
func (lm *LayerModel) SetWeight(module string, w []float32) error {
	p, err := lm.linear(module)
	if err != nil {
		return err
	}
	rows, cols := (*p).Rows(), (*p).Cols()
	if len(w) != rows*cols {
		return fmt.Errorf("layer %d %s: %d weights for a %d×%d matrix", lm.Layer, module, len(w), rows, cols)
	}
	m, err := kernels.NewF32(rows, cols, w)
	if err != nil {
		return err
	}
	*p, err = kernels.NewLinear(module, m, nil, nil)
	return err
}

// Run runs the layer over one sequence: x holds n residual rows at
// positions 0…n−1 and is replaced by the layer's output. capture, if not
// nil, receives every projection input, block by block in position order.
func (lm *LayerModel) Run(x []float32, n int, capture CaptureFunc) error {
	return lm.RunUntil(x, n, capture, DownIn+1)
}

// RunUntil is Run that stops each block once point until has been
// captured, skipping work no later capture needs (x is then left
// part-way and must be a scratch copy). until = DownIn+1 runs it all.
// Stopped at MLPIn, x holds the residual stream after the mixer, which
// RunMLP continues from.
func (lm *LayerModel) RunUntil(x []float32, n int, capture CaptureFunc, until Point) error {
	s := lm.s
	if err := lm.check(x, n); err != nil {
		return err
	}
	s.Reset()
	if err := s.Fit(n); err != nil {
		return err
	}
	lm.blocks(x, n, func(xb []float32, b int) {
		s.gen++
		lm.block(xb, b, orNop(capture), until)
		s.pos += b
		s.hi = max(s.hi, s.pos)
	})
	return nil
}

// RunMLP runs the MLP half of the layer (post-attention norm, MLP,
// residual add) over n rows of x, the residual stream after the mixer as
// RunUntil(…, MLPIn) leaves it, capturing MLPIn and DownIn up to until.
// The MLP keeps no sequence state, so once the mixer is final the rebuild
// runs it once per row instead of again for every later capture.
func (lm *LayerModel) RunMLP(x []float32, n int, capture CaptureFunc, until Point) error {
	if err := lm.check(x, n); err != nil {
		return err
	}
	lm.blocks(x, n, func(xb []float32, b int) { lm.mlpBlock(xb, b, orNop(capture), until) })
	return nil
}

func (lm *LayerModel) check(x []float32, n int) error {
	H := lm.m.cfg.Hidden
	if len(x) < n*H || n <= 0 {
		return fmt.Errorf("layer %d: %d values for %d rows of %d", lm.Layer, len(x), n, H)
	}
	if n > lm.m.opts.Ladder.Largest() {
		return fmt.Errorf("layer %d: sequence of %d tokens, longer than the %d it was opened for", lm.Layer, n, lm.m.opts.Ladder.Largest())
	}
	return nil
}

// blocks calls f on x in blocks of up to PrefillRows rows, in order.
func (lm *LayerModel) blocks(x []float32, n int, f func(xb []float32, b int)) {
	H := lm.m.cfg.Hidden
	for start := 0; start < n; start += ane.PrefillRows {
		b := min(ane.PrefillRows, n-start)
		f(x[start*H:(start+b)*H], b)
	}
}

func orNop(capture CaptureFunc) CaptureFunc {
	if capture == nil {
		return func(Point, []float32, int) {}
	}
	return capture
}

// block runs one block of b rows at s.pos, stopping after point until.
func (lm *LayerModel) block(xb []float32, b int, capture CaptureFunc, until Point) {
	s, c := lm.s, &lm.m.cfg
	H := c.Hidden
	L := &s.m.w.layers[0]
	h, y := s.s.h[:b*H], s.s.y[:b*H]
	for t := 0; t < b; t++ {
		nn.RMSNormCentered(h[t*H:(t+1)*H], xb[t*H:(t+1)*H], L.inNorm, c.Eps)
	}
	capture(MixerIn, h, b)
	if until == MixerIn {
		return
	}
	if L.full {
		s.attention(0, L, h, y, b)
		capture(MixerOut, s.s.att[:b*c.Heads*c.HeadDim], b)
	} else {
		s.deltaNet(0, L, h, y, b, false)
		capture(MixerOut, s.s.o[:b*c.valueDim()], b)
	}
	if until == MixerOut {
		return
	}
	addTo(xb, y)
	lm.mlpBlock(xb, b, capture, until)
}

// mlpBlock is the MLP half of block, from the residual after the mixer.
func (lm *LayerModel) mlpBlock(xb []float32, b int, capture CaptureFunc, until Point) {
	s, c := lm.s, &lm.m.cfg
	H := c.Hidden
	L := &s.m.w.layers[0]
	h, y := s.s.h[:b*H], s.s.y[:b*H]
	for t := 0; t < b; t++ {
		nn.RMSNormCentered(h[t*H:(t+1)*H], xb[t*H:(t+1)*H], L.postNorm, c.Eps)
	}
	capture(MLPIn, h, b)
	if until == MLPIn {
		return
	}
	s.mlp(L, h, y, b)
	capture(DownIn, s.s.gate[:b*c.Intermediate], b)
	addTo(xb, y)
}

// CheckpointInputs reads what the rebuild needs outside the decoder layers
// from a checkpoint: embedding rows and the final norm.
type CheckpointInputs struct {
	cfg   Config
	src   Source
	embed *bf16Embedding
	norm  []float32
	files *DirFiles
}

// OpenInputs maps the checkpoint in dir for embedding lookups and the
// final norm.
func OpenInputs(dir string) (*CheckpointInputs, error) {
	cm, err := hfconfig.LoadModel(dir)
	if err != nil {
		return nil, err
	}
	files := &DirFiles{Dir: dir}
	src, err := openCheckpoint(dir, files)
	if err != nil {
		files.Close()
		return nil, err
	}
	cfg := ConfigFromModel(cm)
	r := &reader{src: src, where: "checkpoint " + dir}
	in := &CheckpointInputs{cfg: cfg, src: src, files: files}
	t, err := r.get(embedName, cfg.Vocab, cfg.Hidden)
	if err == nil && t.DType != "BF16" {
		err = fmt.Errorf("checkpoint %s: %s has dtype %s, want BF16", dir, embedName, t.DType)
	}
	if err == nil {
		in.embed = &bf16Embedding{cfg.Vocab, cfg.Hidden, half.View(t.Data)}
		in.norm, err = r.vector(normName, cfg.Hidden)
	}
	if err != nil {
		files.Close()
		return nil, err
	}
	return in, nil
}

// Close unmaps the checkpoint.
func (in *CheckpointInputs) Close() error { return in.files.Close() }

// Embed writes the embedding rows of ids into x (len(ids)×hidden).
func (in *CheckpointInputs) Embed(ids []int, x []float32) error {
	H := in.cfg.Hidden
	if len(x) < len(ids)*H {
		return errors.New("embed: destination too small")
	}
	for t, id := range ids {
		if id < 0 || id >= in.cfg.Vocab {
			return fmt.Errorf("token id %d at index %d is out of range [0, %d)", id, t, in.cfg.Vocab)
		}
		in.embed.Row(id, x[t*H:(t+1)*H])
	}
	return nil
}

// FinalNorm replaces the n residual rows of x by norm(x), the LM head's input.
func (in *CheckpointInputs) FinalNorm(x []float32, n int) {
	H := in.cfg.Hidden
	for t := 0; t < n; t++ {
		row := x[t*H : (t+1)*H]
		nn.RMSNormCentered(row, row, in.norm, in.cfg.Eps)
	}
}

// Head returns the checkpoint's LM head as float32 (vocab×hidden).
func (in *CheckpointInputs) Head() ([]float32, int, int, error) {
	r := &reader{src: in.src, where: "checkpoint"}
	m, err := r.dense(headName, in.cfg.Vocab, in.cfg.Hidden)
	if err != nil {
		return nil, 0, 0, err
	}
	return kernels.Densify(m), in.cfg.Vocab, in.cfg.Hidden, nil
}

// CheckCheckpoint verifies that every tensor of the checkpoint table
// (ane/format/layout) is present in dir with its shape, without loading weights,
// so a missing tensor is reported before any long work starts.
func CheckCheckpoint(dir string) (*hfconfig.Model, error) {
	cm, err := hfconfig.LoadModel(dir)
	if err != nil {
		return nil, err
	}
	files := &DirFiles{Dir: dir}
	defer files.Close()
	src, err := openCheckpoint(dir, files)
	if err != nil {
		return nil, err
	}
	if err := checkTable(dir, cm, src); err != nil {
		return nil, err
	}
	return cm, nil
}
