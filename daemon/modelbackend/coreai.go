package modelbackend

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/forgedaemon/forged/ane/coreai"
	"github.com/forgedaemon/forged/ane/coreai/draft"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/residency"
)

// CoreAICycleCost is what a speculative cycle costs in plain steps on Core
// AI: a verify entry runs 8 rows in about the time of one (the published
// v8 entries are the decode path), plus a draft call — docs/SAMPLING.md.
// Unmeasured on the ANE; auto mode adapts from the acceptance it sees.
const CoreAICycleCost = 1.3

// coreaiRuntime is the published Core AI packages through the cai_* bridge.
type coreaiRuntime struct {
	model    *coreai.Model
	emb      *tensor.F16Table // the embedding table, memory-mapped
	drafter  *draft.Model
	lookup   bool
	drafting string
	stops    []int
	bridge   string
	shape    modelShape
}

func (b *Backend) openCoreAI(dir string, opts Options, br Bridge, why string) error {
	modelDir := filepath.Join(dir, "model")
	cfg, err := hfconfig.LoadModel(modelDir)
	if err != nil {
		return err
	}
	// The chunk graphs take their input rows from the FP16 embedding table.
	emb, err := tensor.OpenF16Table(filepath.Join(modelDir, tensor.EmbeddingNPY))
	if err != nil {
		return fmt.Errorf("the Core AI backend reads the embedding from model/%s: %w", tensor.EmbeddingNPY, err)
	}
	m, err := coreai.Load(filepath.Join(dir, bundle.ComponentCoreAI), coreai.Options{Bridge: br.Path, Embedding: emb, Ladder: opts.Ladder})
	if err != nil {
		emb.Close()
		return err
	}
	m.SetRoPE(cfg.RopeTheta)
	rt := &coreaiRuntime{model: m, emb: emb, stops: slices.Clone(cfg.EOSTokenIDs), bridge: br.Path, shape: shapeOf(cfg)}
	rt.openDrafter(dir, modelDir, br.Path, emb, opts)
	b.serve(rt, m.Ladder(), why)
	return nil
}

// openDrafter loads the bundle's DFlash2 drafter package (release.json's
// drafter path, else drafter/) when it passes the pairing rules against
// the runtime (its taps and export identity); otherwise speculation uses
// prompt lookup and says why.
func (r *coreaiRuntime) openDrafter(dir, modelDir, bridge string, emb coreai.Embedding, opts Options) {
	r.lookup, r.drafting = true, "prompt lookup"
	ddir := filepath.Join(dir, "drafter")
	if rel, err := bundle.LoadRelease(dir); err == nil && rel.Drafter != nil {
		ddir = filepath.Join(dir, filepath.FromSlash(rel.Drafter.Path))
	}
	if _, err := os.Stat(filepath.Join(ddir, bundle.DrafterModel)); err != nil {
		return // a plain bundle: nothing to pair
	}
	refuse := func(err error) {
		r.drafting = "prompt lookup; dflash2 off: " + err.Error()
		opts.log().Warn("speculating with prompt lookup: the DFlash2 drafter is refused", "drafter", ddir, "err", err)
	}
	man := r.model.Manifest()
	if err := drafter.CheckPair(ddir, modelDir, man.Export, man.Taps); err != nil {
		refuse(err)
		return
	}
	d, err := draft.Load(ddir, draft.Options{Bridge: bridge, Embedding: emb})
	if err != nil {
		refuse(err)
		return
	}
	r.drafter, r.lookup, r.drafting = d, false, "dflash2 "+ddir
	opts.log().Info("speculating with the DFlash2 drafter on Core AI", "drafter", ddir)
}

func (r *coreaiRuntime) newSession() (sessionEngine, speculative.Drafter, error) {
	e, err := r.model.NewSession()
	if err != nil {
		return nil, nil, err
	}
	if r.drafter == nil {
		return e, nil, nil
	}
	d, err := r.drafter.NewSession()
	if err != nil {
		e.Close()
		return nil, nil, fmt.Errorf("drafter: %w", err)
	}
	return e, d, nil
}

func (r *coreaiRuntime) requestDrafter() func(prompt []int) speculative.Drafter {
	if !r.lookup {
		return nil
	}
	return func(prompt []int) speculative.Drafter { return speculative.NewLookupDrafter(prompt) }
}

func (r *coreaiRuntime) vocab() int          { return r.model.Vocab() }
func (r *coreaiRuntime) stopTokens() []int   { return r.stops }
func (r *coreaiRuntime) cycleCost() float64  { return CoreAICycleCost }
func (r *coreaiRuntime) speculation() string { return r.drafting }

func (r *coreaiRuntime) close() error {
	var errs []error
	if r.drafter != nil {
		errs = append(errs, r.drafter.Close())
	}
	errs = append(errs, r.model.Close(), r.emb.Close())
	return errors.Join(errs...)
}

func (r *coreaiRuntime) weightBytes() int64 {
	m := r.model.Memory()
	n := m.Weights + m.Embedding
	if r.drafter != nil {
		n += r.drafter.Memory().Weights
	}
	return n
}

func (r *coreaiRuntime) describe() wire.BackendInfo {
	i := r.model.Info()
	info := wire.BackendInfo{Name: wire.BackendCoreAI, ComputeUnits: i.Compute, BridgeRelease: i.BridgeRelease,
		BridgePath: r.bridge, OSMPSGraph: i.OSMPSGraph, Chip: i.Chip, KV: string(i.KV)}
	for _, p := range i.Packages {
		how := "source"
		if p.Compiled {
			how = "compiled"
		}
		v := p.MPSGraph
		if v == "" {
			v = "unknown"
		}
		info.PackageMPSGraph = append(info.PackageMPSGraph, fmt.Sprintf("%s=%s (%s)", p.File, v, how))
	}
	return info
}

// footprint is the memory model from the manifest: the package sizes
// (mb), the context ladder and kv_len, and the KV bytes per row of the
// cache layout in use (plus the host-owned mask's fp16 per row). What the
// manifest does not say — a session's DeltaNet state sets and its
// per-call buffers, the drafter — is measured from the loaded model and a
// probe session.
func (r *coreaiRuntime) footprint() *residency.Footprint {
	man := r.model.Manifest()
	probe, err := r.model.NewSession()
	if err != nil {
		return nil
	}
	mem := probe.Memory()
	probe.Close()
	var drafter, drafterSession int64
	if r.drafter != nil {
		drafter = r.drafter.Memory().Weights
		if d, err := r.drafter.NewSession(); err == nil {
			drafterSession = d.Memory().Session()
			d.Close()
		}
	}
	attn, kvHeads, headDim := r.shape.attnLayers, r.shape.kvHeads, r.shape.headDim
	f, err := residency.FromManifest(man, residency.ModelShape{AttnLayers: attn, KVHeads: kvHeads, HeadDim: headDim, Recurrent: mem.Recurrent}, 0, drafter)
	if err != nil {
		return nil
	}
	f.Weights += r.model.Memory().Embedding
	// KV per row follows the layout actually loaded (a selectable bundle
	// may serve another format than its default).
	if kv, err := residency.KVBytesPerRow(string(r.model.KV()), attn, kvHeads, headDim); err == nil {
		f.KVPerRow = kv
	}
	f.KVPerRow += 2 // the mask row
	f.SessionScratch = mem.Scratch + drafterSession
	f.Ladder = slices.Clone(r.model.Ladder())
	for c := range f.KVLen {
		if !slices.Contains(f.Ladder, c) {
			delete(f.KVLen, c)
		}
	}
	return f
}

// modelShape is what the memory model needs from config.json.
type modelShape struct{ attnLayers, kvHeads, headDim int }

func shapeOf(cfg *hfconfig.Model) modelShape {
	s := modelShape{kvHeads: cfg.NumKeyValueHeads, headDim: cfg.HeadDim}
	for i := range cfg.NumHiddenLayers {
		if cfg.IsFullAttention(i) {
			s.attnLayers++
		}
	}
	return s
}
