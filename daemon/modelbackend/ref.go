package modelbackend

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/kernels"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/residency"
)

// CPUCycleCost is what a speculative cycle costs in plain steps on the
// reference engine: a verify of 8 rows costs about 4.6 single-row steps on
// the CPU (docs/SAMPLING.md §6), so auto mode drafts only while a drafter
// averages more than about 3.8 accepted drafts per cycle (break-even 3.7
// plus a margin).
const CPUCycleCost = 4.7

// refRuntime is the pure-Go reference engine.
type refRuntime struct {
	model *ref.Model
	// engines makes the sessions: model itself, or a view of it tapping
	// the drafter's layers.
	engines  *ref.Model
	drafter  *dflash.Weights // shared by every session's drafter; nil: none
	lookup   bool            // prompt lookup per request
	drafting string
	ladder   []int
}

// Open serves a Hugging Face qwen3_5 checkpoint directory with the
// reference engine: tokenizer.json, tokenizer_config.json (chat template)
// and, unless opts.TokenizerOnly, the BF16 checkpoint and opts.Drafter.
func Open(dir string, opts Options) (*Backend, error) {
	b, err := openText(dir, opts, filepath.Base(dir))
	if err != nil || opts.TokenizerOnly {
		return b, err
	}
	if opts.Ladder == nil {
		opts.Ladder = ane.DefaultLadder
	}
	m, err := ref.Open(dir, opts.refOptions())
	if err != nil {
		return nil, err
	}
	b.serve(newRefRuntime(m, opts, dir, ""), opts.Ladder, "a checkpoint directory (--model): the reference engine")
	return b, nil
}

// refOptions are the reference engine's options for what opts serve: the
// ladder, and the fast numeric mode unless opts ask for the exact one.
func (opts Options) refOptions() ref.Options {
	return ref.Options{Ladder: opts.Ladder, Fast: !opts.ExactNumerics}
}

func (b *Backend) openRefBundle(dir string, opts Options, why string) error {
	if opts.Ladder == nil {
		opts.Ladder = ane.DefaultLadder
	}
	m, err := ref.OpenBundle(dir, opts.refOptions())
	if err != nil {
		return err
	}
	if opts.Drafter == "" {
		if d := filepath.Join(dir, "drafter"); fileExists(filepath.Join(d, drafter.WeightsFile)) {
			opts.Drafter = d
		}
	}
	b.serve(newRefRuntime(m, opts, filepath.Join(dir, "model"), filepath.Join(dir, "export")), opts.Ladder, why)
	return nil
}

// newRefRuntime chooses the drafter: the DFlash2 directory in opts if it
// pairs with the target (modelDir, exportDir), otherwise no speculation;
// prompt lookup when none is given.
func newRefRuntime(m *ref.Model, opts Options, modelDir, exportDir string) *refRuntime {
	rt := &refRuntime{model: m, engines: m, ladder: append([]int(nil), opts.Ladder...)}
	log := opts.log()
	if opts.Drafter == "" {
		// The speculative cycle hands every drafter the committed rows'
		// features; prompt lookup uses only their positions, so one tap
		// layer keeps that cheap.
		tapped, err := m.WithTaps([]int{0})
		if err != nil {
			rt.drafting = "off: " + err.Error()
			return rt
		}
		rt.engines, rt.drafting, rt.lookup = tapped, "prompt lookup", true
		return rt
	}
	w, engines, err := loadRefDrafter(m, opts.Drafter, modelDir, exportDir)
	if err != nil {
		rt.drafting = "off: " + err.Error()
		log.Warn("serving without speculation: the drafter is refused", "drafter", opts.Drafter, "err", err)
		return rt
	}
	rt.drafter, rt.engines, rt.drafting = w, engines, "dflash2 "+opts.Drafter
	log.Info("speculating with the DFlash2 drafter", "drafter", opts.Drafter, "taps", w.Config.DFlash.TargetLayerIDs)
	return rt
}

// loadRefDrafter applies the pairing rules (a *drafter.PairError names
// each failed rule) and loads the drafter's weights, returning them with a
// view of m tapping the drafter's layers.
func loadRefDrafter(m *ref.Model, dir, modelDir, exportDir string) (*dflash.Weights, *ref.Model, error) {
	cfg, err := hfconfig.LoadDrafter(dir)
	if err != nil {
		return nil, nil, err
	}
	taps := cfg.DFlash.TargetLayerIDs
	if err := drafter.CheckDirs(dir, modelDir, exportDir, taps); err != nil {
		return nil, nil, err
	}
	w, err := dflash.LoadWeights(dir)
	if err != nil {
		return nil, nil, err
	}
	tapped, err := m.WithTaps(taps)
	if err != nil {
		return nil, nil, err
	}
	return w, tapped, nil
}

func (r *refRuntime) newSession() (sessionEngine, speculative.Drafter, error) {
	s := r.engines.NewSession()
	if r.drafter == nil {
		return s, nil, nil
	}
	d, err := dflash.New(r.drafter, r.engines, 0)
	if err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("drafter: %w", err)
	}
	return s, d, nil
}

func (r *refRuntime) requestDrafter() func(prompt []int) speculative.Drafter {
	if !r.lookup {
		return nil
	}
	return func(prompt []int) speculative.Drafter { return speculative.NewLookupDrafter(prompt) }
}

func (r *refRuntime) vocab() int          { return r.model.Config().Vocab }
func (r *refRuntime) stopTokens() []int   { return r.model.EOS }
func (r *refRuntime) cycleCost() float64  { return CPUCycleCost }
func (r *refRuntime) speculation() string { return r.drafting }
func (r *refRuntime) close() error        { return r.model.Close() }

func (r *refRuntime) weightBytes() int64 {
	n := r.model.WeightBytes() + r.model.EmbeddingBytes()
	if r.drafter != nil {
		n += r.drafter.Bytes()
	}
	return n
}

func (r *refRuntime) describe() wire.BackendInfo {
	return wire.BackendInfo{Name: wire.BackendRef, Kernels: kernels.KernelLevel(), Numerics: r.model.NumericMode()}
}

// footprint is the memory model of the loaded checkpoint for the residency
// policy. Weights and the fixed per-session buffers are measured (the
// engine knows them exactly); KV per row and the DeltaNet state follow
// from config.json by the same formulas the Core AI bundle uses, with the
// reference engine's element sizes (fp16 KV plus a 4-byte row generation,
// fp32 recurrent state).
func (r *refRuntime) footprint() *residency.Footprint {
	c := r.model.Config()
	attn, deltaNet := 0, 0
	for _, full := range c.FullAttention {
		if full {
			attn++
		} else {
			deltaNet++
		}
	}
	kv, err := residency.KVBytesPerRow(residency.KVFP16, attn, c.KVHeads, c.HeadDim)
	if err != nil {
		kv = 0 // a model without attention layers keeps no history
	}
	convDim := 2*c.LinKeyHeads*c.LinKeyDim + c.LinValueHeads*c.LinValueDim
	state := int64(deltaNet) * 4 * int64((c.ConvKernel-1)*convDim+c.LinValueHeads*c.LinKeyDim*c.LinValueDim)
	perRow, fixed := r.measureScratch()
	var drafter int64
	if r.drafter != nil {
		drafter = r.drafter.Bytes()
	}
	return &residency.Footprint{
		Weights:        r.model.WeightBytes() + r.model.EmbeddingBytes(),
		Drafter:        drafter,
		KVPerRow:       kv + 4 + perRow, // + the row generation counter + the score buffer
		Recurrent:      state,
		SessionScratch: fixed,
		Ladder:         append([]int(nil), r.ladder...),
	}
}

// measureScratch splits a session's scratch into a per-row part (attention
// scores, sized by the context entry) and a fixed part, by measuring a
// fresh session at the two smallest entries.
func (r *refRuntime) measureScratch() (perRow, fixed int64) {
	probe := r.engines.NewSession() // as served: tapped when speculating
	defer probe.Close()
	small := probe.Memory().Scratch
	if len(r.ladder) < 2 || probe.Resize(r.ladder[1]) != nil {
		return 0, small
	}
	perRow = (probe.Memory().Scratch - small) / int64(r.ladder[1]-r.ladder[0])
	return perRow, small - perRow*int64(r.ladder[0])
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
