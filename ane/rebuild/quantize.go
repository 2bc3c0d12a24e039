// Package rebuild is the offline rebuild path: true-sequential GPTQ from a
// BF16 checkpoint to the quantized export (Quantize), low-rank residual
// factors (LowRank), the FP16 embedding table (Embeddings) and the bundle
// inventory (ReleaseManifest). Plans, the export writer, calibration sets
// and KL evaluation live in the sub-packages plan, export, calib and kl;
// the math (rounders, GPTQ, k-means, randomized SVD) in ane/rebuild/quantize.
package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/hadamard"
	"github.com/forgedaemon/forged/ane/rebuild/calib"
	"github.com/forgedaemon/forged/ane/rebuild/export"
	"github.com/forgedaemon/forged/ane/rebuild/plan"
	"github.com/forgedaemon/forged/ane/rebuild/quantize"
	"github.com/forgedaemon/forged/ane/ref"
)

// Methods choose how codes are picked once the rounder is fitted.
const (
	MethodGPTQ = "gptq"
	MethodRTN  = "rtn"
)

// Options configure Quantize.
type Options struct {
	Model string // BF16 checkpoint directory
	Out   string // export directory
	Plan  *plan.Plan
	// Defaults are the formats of matrices the plan does not name; zero
	// means plan.PublishedDefaults.
	Defaults *plan.Defaults
	Calib    *calib.Set
	Method   string // MethodGPTQ (default) or MethodRTN
	AW       bool   // weight codebook fitting by diag(H)
	Seed     uint64 // k-means sampling and initialisation
	// HoldOut is how many trailing calibration rows are kept out of every
	// Hessian and used for per-matrix SNR: −1 for none, 0 for the default
	// (the last batch of 4 when there are at least 8 rows).
	HoldOut int
	Resume  bool
	Threads int
	// Progress, if set, receives an event per quantized matrix and layer.
	Progress func(Event)
	// AfterLayer, if set, runs once a layer's files and checkpoint are on
	// disk; an error stops the run there (as an interruption would).
	AfterLayer func(layer int) error
}

// Event is one progress report.
type Event struct {
	Step    string  `json:"step"` // "matrix", "layer", "head", "done"
	Layer   int     `json:"layer"`
	Layers  int     `json:"layers"`
	Matrix  string  `json:"matrix,omitempty"`
	Format  string  `json:"format,omitempty"`
	Done    int     `json:"done"`  // matrices finished (this run and resumed)
	Total   int     `json:"total"` // matrices in the plan
	Elapsed float64 `json:"elapsed_s"`
	ETA     float64 `json:"eta_s"`
}

// MatrixReport is what quantizing one matrix did.
type MatrixReport struct {
	Name    string  `json:"name"`
	Format  string  `json:"format"`
	Method  string  `json:"method"`
	Damp    float64 `json:"damp,omitempty"`
	Retries int     `json:"damp_retries,omitempty"`
	Dead    int     `json:"dead_inputs,omitempty"`
	// SNRdB is the held-out output SNR 10·log10(‖XWᵀ‖²/‖X(W−Q)ᵀ‖²); NaN
	// (omitted) without held-out rows.
	SNRdB   *float64 `json:"snr_db,omitempty"`
	Seconds float64  `json:"seconds"`
}

// Report is a finished Quantize run.
type Report struct {
	Out           string         `json:"out"`
	Method        string         `json:"method"`
	CalibRows     int            `json:"calib_rows"`
	CalibSeq      int            `json:"calib_seq"`
	CalibHash     string         `json:"calib_hash"`
	HeldOut       int            `json:"held_out_rows"`
	ResumedLayers int            `json:"resumed_layers"`
	Predicted     export.Size    `json:"predicted"`
	Written       int64          `json:"written_tensor_bytes"`
	Matrices      []MatrixReport `json:"matrices"`
	Seconds       float64        `json:"seconds"`
}

// Prepare checks everything Quantize needs before any long work: the
// checkpoint's tensor table, the plan against the model, the calibration
// ids against the vocabulary, the method. It returns the config and the
// resolved plan (for printing).
func Prepare(o *Options) (*hfconfig.Model, *plan.Resolved, error) {
	switch o.Method {
	case "":
		o.Method = MethodGPTQ
	case MethodGPTQ, MethodRTN:
	default:
		return nil, nil, fmt.Errorf("method %q is not %q or %q", o.Method, MethodGPTQ, MethodRTN)
	}
	cfg, err := ref.CheckCheckpoint(o.Model)
	if err != nil {
		return nil, nil, err
	}
	d := plan.PublishedDefaults(cfg)
	if o.Defaults != nil {
		d = *o.Defaults
	}
	r, err := plan.Resolve(cfg, o.Plan, d)
	if err != nil {
		return nil, nil, err
	}
	if o.Calib == nil || len(o.Calib.Rows) == 0 {
		return nil, nil, errors.New("no calibration rows")
	}
	for i, row := range o.Calib.Rows {
		for j, id := range row {
			if id < 0 || id >= cfg.VocabSize {
				return nil, nil, fmt.Errorf("calibration row %d, position %d: token id %d is out of range [0, %d)", i, j, id, cfg.VocabSize)
			}
		}
	}
	return cfg, r, nil
}

// pipeline is one Quantize run.
type pipeline struct {
	o       *Options
	cfg     *hfconfig.Model
	plan    *plan.Resolved
	rows    [][]int
	train   int // rows that feed the Hessians; the rest are held out
	x       [][]float32
	rep     *Report
	start   time.Time
	done    int
	started int // matrices done when this run began (resumed ones)
}

// Quantize runs the true-sequential quantization of Anemll/anemll-forge
// scripts/qwen38_gptq_27b.py and writes the
// export. Per layer: the mixer's reader projections on the captured mixer
// input (DeltaNet in_proj_qkv and in_proj_z share one Hessian; attention
// q/k/v, k/v in the KV format), then out_proj/o_proj on inputs recaptured
// through the quantized readers; then gate/up in the rotated basis (online
// block Hadamard, seeds 1000+i) and down on activations computed with the
// quantized gate/up (rotated, seeds 2000+i); the quantized layer's output
// feeds the next layer. The head is quantized last on norm(h). After every
// layer a checkpoint (the residual stream) lets Resume continue with the
// same bytes. The export's tensor bytes must equal the plan's prediction.
func Quantize(ctx context.Context, o Options) (*Report, error) {
	cfg, resolved, err := Prepare(&o)
	if err != nil {
		return nil, err
	}
	hold := o.HoldOut
	n := len(o.Calib.Rows)
	switch {
	case hold < 0:
		hold = 0
	case hold == 0 && n >= 8:
		hold = 4
	}
	if hold >= n {
		return nil, fmt.Errorf("holding out %d of %d calibration rows leaves none for the Hessians", hold, n)
	}
	p := &pipeline{o: &o, cfg: cfg, plan: resolved, rows: o.Calib.Rows, train: n - hold, start: time.Now(),
		rep: &Report{Out: o.Out, Method: o.Method, CalibRows: n, CalibSeq: o.Calib.Seq, CalibHash: o.Calib.Hash,
			HeldOut: hold, Predicted: resolved.Total}}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	first, err := p.begin()
	if err != nil {
		return nil, err
	}
	p.rep.ResumedLayers = first
	for li := first; li < cfg.NumHiddenLayers; li++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := p.layer(ctx, li); err != nil {
			return nil, err
		}
		if err := p.saveState(li + 1); err != nil {
			return nil, err
		}
		p.event(Event{Step: "layer", Layer: li})
		if o.AfterLayer != nil {
			if err := o.AfterLayer(li); err != nil {
				return nil, err
			}
		}
	}
	if err := p.head(); err != nil {
		return nil, err
	}
	written, err := exportTensorBytes(o.Out, cfg.NumHiddenLayers)
	if err != nil {
		return nil, err
	}
	p.rep.Written = written
	if written != resolved.Total.ExportBytes {
		return nil, fmt.Errorf("export %s holds %d tensor bytes, the plan predicted %d", o.Out, written, resolved.Total.ExportBytes)
	}
	if err := os.RemoveAll(filepath.Join(o.Out, stateDir)); err != nil {
		return nil, err
	}
	p.rep.Seconds = time.Since(p.start).Seconds()
	p.event(Event{Step: "done", Layer: cfg.NumHiddenLayers})
	return p.rep, nil
}

func (p *pipeline) event(e Event) {
	if p.o.Progress == nil {
		return
	}
	e.Layers, e.Done, e.Total = p.cfg.NumHiddenLayers, p.done, len(p.plan.Matrices)
	e.Elapsed = time.Since(p.start).Seconds()
	if run := p.done - p.started; run > 0 {
		e.ETA = e.Elapsed / float64(run) * float64(e.Total-p.done)
	}
	p.o.Progress(e)
}

// capture runs the layer over every calibration row on a copy of the
// residual stream, feeding rows captured at point into a Hessian (training
// rows, rotated first if rot is set) and collecting held-out rows. The
// MLPIn capture comes after the mixer is final, so it replaces each row of
// p.x by the residual after the mixer (no capture needs the layer's input
// again); DownIn and the layer's output then run only the MLP from there.
func (p *pipeline) capture(lm *ref.LayerModel, point ref.Point, width int, rot *hadamard.BlockRotation) (*quantize.Hessian, []float32, error) {
	h := quantize.NewHessian(width)
	var held []float32
	seq := p.o.Calib.Seq
	tmp := make([]float32, len(p.x[0]))
	var err error
	for r := range p.rows {
		training := r < p.train
		copy(tmp, p.x[r])
		run := lm.RunUntil
		if point == ref.DownIn {
			run = lm.RunMLP
		}
		runErr := run(tmp, seq, func(pt ref.Point, rows []float32, n int) {
			if pt != point || err != nil {
				return
			}
			if rot != nil {
				rows = append([]float32(nil), rows[:n*width]...)
				rot.RotateRows(rows)
			}
			if training {
				err = h.Add(rows[:n*width], n)
			} else {
				held = append(held, rows[:n*width]...)
			}
		}, point)
		if runErr != nil {
			return nil, nil, runErr
		}
		if err != nil {
			return nil, nil, fmt.Errorf("layer %d: %w", lm.Layer, err)
		}
		if point == ref.MLPIn {
			copy(p.x[r], tmp)
		}
	}
	return h, held, nil
}

// layer quantizes decoder layer li and advances the residual stream.
func (p *pipeline) layer(ctx context.Context, li int) error {
	lm, err := ref.OpenLayer(p.o.Model, li, p.o.Calib.Seq, p.o.Threads, ane.Numerics{})
	if err != nil {
		return err
	}
	defer lm.Close()
	L := p.plan.Layers[li]
	H, I := p.cfg.HiddenSize, p.cfg.IntermediateSize
	readers := []string{"linear_attn.in_proj_qkv", "linear_attn.in_proj_z"}
	writer := "linear_attn.out_proj"
	outWidth := p.cfg.LinearNumValueHeads * p.cfg.LinearValueHeadDim
	if lm.FullAttention() {
		readers = []string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}
		writer = "self_attn.o_proj"
		outWidth = p.cfg.NumAttentionHeads * p.cfg.HeadDim
	}
	// Mixer: readers share the captured input's Hessian; the writer's
	// input is recaptured through the quantized readers.
	var mixer []*export.Matrix
	hIn, heldIn, err := p.capture(lm, ref.MixerIn, H, nil)
	if err != nil {
		return err
	}
	hInF := hIn.Finalize()
	for _, mod := range readers {
		em, err := p.matrix(ctx, lm, li, mod, hInF, heldIn, nil)
		if err != nil {
			return err
		}
		mixer = append(mixer, em)
	}
	hOut, heldOut, err := p.capture(lm, ref.MixerOut, outWidth, nil)
	if err != nil {
		return err
	}
	em, err := p.matrix(ctx, lm, li, writer, hOut.Finalize(), heldOut, nil)
	if err != nil {
		return err
	}
	mixer = append(mixer, em)
	kind := export.LinearAttention
	if lm.FullAttention() {
		kind = export.FullAttention
	}
	if err := export.WriteMixer(p.o.Out, li, kind, L.MixerFormat, L.KVFormat, mixer); err != nil {
		return err
	}
	// MLP in the rotated basis: gate/up on R_in·x, down on R_mid·a with a
	// computed through the quantized gate/up.
	var rIn, rMid *hadamard.BlockRotation
	if L.Online {
		if rIn, err = hadamard.NewBlockRotation(H, p.plan.Block, uint64(export.SeedIn(li))); err != nil {
			return err
		}
		if rMid, err = hadamard.NewBlockRotation(I, p.plan.Block, uint64(export.SeedMid(li))); err != nil {
			return err
		}
	}
	hMLP, heldMLP, err := p.capture(lm, ref.MLPIn, H, rIn)
	if err != nil {
		return err
	}
	hMLPF := hMLP.Finalize()
	gate, err := p.matrix(ctx, lm, li, "mlp.gate_proj", hMLPF, heldMLP, rIn)
	if err != nil {
		return err
	}
	up, err := p.matrix(ctx, lm, li, "mlp.up_proj", hMLPF, heldMLP, rIn)
	if err != nil {
		return err
	}
	hDown, heldDown, err := p.capture(lm, ref.DownIn, I, rMid)
	if err != nil {
		return err
	}
	down, err := p.matrix(ctx, lm, li, "mlp.down_proj", hDown.Finalize(), heldDown, rMid)
	if err != nil {
		return err
	}
	if err := export.WriteMLP(p.o.Out, li, export.Basis{Online: L.Online, Block: p.plan.Block}, gate, up, down); err != nil {
		return err
	}
	// The quantized layer's output feeds the next layer: its MLP, from the
	// residual after the (final) mixer that the MLPIn capture left in p.x.
	for r := range p.x {
		if err := lm.RunMLP(p.x[r], p.o.Calib.Seq, nil, ref.DownIn+1); err != nil {
			return err
		}
	}
	return nil
}

// matrix quantizes one projection of the layer with Hessian h (in the
// rotated basis when rot is set), installs the dequantized result in the
// layer (folded back to the original basis) and returns it for the export.
func (p *pipeline) matrix(ctx context.Context, lm *ref.LayerModel, li int, module string, h []float64, held []float32,
	rot *hadamard.BlockRotation) (*export.Matrix, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pm, ok := p.plan.Find(li, module)
	if !ok {
		return nil, fmt.Errorf("layer %d %s is not in the plan", li, module)
	}
	w, rows, cols, err := lm.Weight(module)
	if err != nil {
		return nil, err
	}
	if rows != pm.Rows || cols != pm.Cols {
		return nil, fmt.Errorf("%s is %d×%d, the plan expected %d×%d", pm.Name, rows, cols, pm.Rows, pm.Cols)
	}
	if rot != nil {
		rot.RotateRows(w)
	}
	em, q, mr, err := p.quantizeMatrix(pm, w, h, held)
	if err != nil {
		return nil, err
	}
	p.rep.Matrices = append(p.rep.Matrices, mr)
	if rot != nil {
		for r := 0; r < rows; r++ {
			rot.ApplyInverse(q[r*cols : (r+1)*cols])
		}
	}
	if err := lm.SetWeight(module, q); err != nil {
		return nil, err
	}
	p.done++
	p.event(Event{Step: "matrix", Layer: li, Matrix: pm.Name, Format: pm.Format})
	return em, nil
}

// quantizeMatrix fits the rounder, picks codes (GPTQ or RTN) and encodes;
// q is the dequantized matrix exactly as the export stores it.
func (p *pipeline) quantizeMatrix(pm *plan.Matrix, w []float32, h []float64, held []float32) (*export.Matrix, []float32, MatrixReport, error) {
	t0 := time.Now()
	mr := MatrixReport{Name: pm.Name, Format: pm.Format, Method: p.o.Method}
	if pm.Format == export.BF16 {
		bf := make([]uint16, len(w))
		half.F32ToBF16(bf, w)
		q := make([]float32, len(w))
		half.BF16ToF32(q, bf)
		mr.Method = "none"
		mr.Seconds = time.Since(t0).Seconds()
		return &export.Matrix{Key: pm.Key, Format: pm.Format, Rows: pm.Rows, Cols: pm.Cols, Weight: bf}, q, mr, nil
	}
	fo := quantize.FitOptions{Seed: p.o.Seed}
	if p.o.AW {
		fo.ColumnWeights = make([]float64, pm.Cols)
		for j := range fo.ColumnWeights {
			fo.ColumnWeights[j] = h[j*pm.Cols+j]
		}
	}
	r, err := quantize.Fit(pm.Name, w, pm.Rows, pm.Cols, pm.Format, fo)
	if err != nil {
		return nil, nil, mr, err
	}
	var q []float32
	if p.o.Method == MethodRTN {
		q, err = quantize.RTN(w, pm.Rows, pm.Cols, r)
	} else {
		var info quantize.GPTQInfo
		q, info, err = quantize.GPTQ(w, pm.Rows, pm.Cols, h, r, quantize.GPTQOptions{})
		mr.Damp, mr.Retries, mr.Dead = info.Damp, info.Retries, info.Dead
	}
	if err != nil {
		return nil, nil, mr, err
	}
	e, err := r.Encode(q)
	if err != nil {
		return nil, nil, mr, err
	}
	em, err := fromEncoded(pm.Key, e)
	if err != nil {
		return nil, nil, mr, fmt.Errorf("%s: %w", pm.Name, err)
	}
	dq, err := quantize.Dequantize(e)
	if err != nil {
		return nil, nil, mr, err
	}
	if len(held) > 0 {
		s := quantize.OutputSNR(w, dq, held, pm.Rows, pm.Cols)
		mr.SNRdB = &s
	}
	mr.Seconds = time.Since(t0).Seconds()
	return em, dq, mr, nil
}

// fromEncoded converts the quantizer's encoding to an export matrix.
func fromEncoded(key string, e *quantize.Encoded) (*export.Matrix, error) {
	m := &export.Matrix{Key: key, Format: e.Format, Rows: e.Rows, Cols: e.Cols, Idx: e.Idx, LUT: e.LUT, Int8: e.Int8, Scale: e.Scale}
	if e.Weight != nil {
		if e.WeightDType != "BF16" {
			return nil, fmt.Errorf("passthrough weights in %s; the export stores BF16", e.WeightDType)
		}
		m.Weight = e.Weight
	}
	if e.LUT != nil {
		if len(e.LUTShape) != 2 {
			return nil, fmt.Errorf("codebook shape %v", e.LUTShape)
		}
		m.LUTShape = [2]int{e.LUTShape[0], e.LUTShape[1]}
	}
	return m, m.Check()
}

// head quantizes the LM head on norm(h) of the final residual stream.
func (p *pipeline) head() error {
	in, err := ref.OpenInputs(p.o.Model)
	if err != nil {
		return err
	}
	defer in.Close()
	pm, _ := p.plan.Find(-1, "lm_head")
	H, seq := p.cfg.HiddenSize, p.o.Calib.Seq
	h := quantize.NewHessian(H)
	var held []float32
	tmp := make([]float32, seq*H)
	for r := range p.x {
		copy(tmp, p.x[r])
		in.FinalNorm(tmp, seq)
		if r < p.train {
			if err := h.Add(tmp, seq); err != nil {
				return fmt.Errorf("lm_head: %w", err)
			}
		} else {
			held = append(held, tmp...)
		}
	}
	w, _, _, err := in.Head()
	if err != nil {
		return err
	}
	em, _, mr, err := p.quantizeMatrix(pm, w, h.Finalize(), held)
	if err != nil {
		return err
	}
	p.rep.Matrices = append(p.rep.Matrices, mr)
	p.done++
	p.event(Event{Step: "head", Layer: p.cfg.NumHiddenLayers, Matrix: pm.Name, Format: pm.Format})
	return export.WriteHead(p.o.Out, em)
}

// exportTensorBytes sums the tensor data of every export file.
func exportTensorBytes(dir string, layers int) (int64, error) {
	names := []string{export.HeadFile}
	for i := 0; i < layers; i++ {
		names = append(names, export.MLPFile(i), export.MixerFile(i))
	}
	var total int64
	for _, name := range names {
		f, err := tensor.OpenSafetensors(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		for _, t := range f.Tensors() {
			total += t.Size
		}
		f.Close()
	}
	return total, nil
}
