package standin

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/forgedaemon/forged/ane/coreai/internal/refchunk"
	"github.com/forgedaemon/forged/ane/coreai/internal/refdraft"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/layout"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/kernels"
	"github.com/forgedaemon/forged/bundle"
)

// WriteDrafterPackage writes the stand-in drafter package
// (bundle.DrafterModel) into drafterDir, a DFlash2 drafter directory
// (config.json, model.safetensors, selector.safetensors and the
// dflash2_lut4_gptq.json sidecar; see dflash.GenerateSynthetic). Its draft
// and ctx64 functions are laid out by refdraft from the config and the
// sidecar and computed by ane/speculative/dflash's Net over the drafter's weights and
// what it borrows from the target: target's embedding and LM head
// (checkpoint names; a missing lm_head.weight means a tied head), which
// the package's weights.safetensors holds. It returns the package path.
func WriteDrafterPackage(drafterDir string, target map[string][]float32) (string, error) {
	cfg, meta, fns, err := drafterLayout(drafterDir)
	if err != nil {
		return "", err
	}
	src := headTensors(target, true, layout.EmbedName)
	shape := []int{cfg.VocabSize, cfg.HiddenSize}
	p := &Program{Kind: KindDrafter, Drafter: &DrafterSpec{W: meta.W, T: meta.T, R: meta.R, RP: meta.RP, FeatScale: meta.FeatScale}}
	pkg := filepath.Join(drafterDir, bundle.DrafterModel)
	if _, err := writePackage(pkg, fns, p, src, []weightTensor{{layout.EmbedName, shape}, {layout.HeadName, shape}}); err != nil {
		return "", err
	}
	return pkg, nil
}

// DrafterFunctions are the functions of the stand-in drafter package of
// drafterDir (draft and ctx64, laid out by refdraft from the directory's
// config and sidecar), as WriteDrafterPackage describes them. With
// WriteFunctions they make a package a Handle handler computes.
func DrafterFunctions(drafterDir string) (map[string][]refchunk.Spec, error) {
	_, _, fns, err := drafterLayout(drafterDir)
	return fns, err
}

func drafterLayout(drafterDir string) (*hfconfig.Drafter, *drafter.Metadata, map[string][]refchunk.Spec, error) {
	cfg, err := hfconfig.LoadDrafter(drafterDir)
	if err != nil {
		return nil, nil, nil, err
	}
	meta, err := drafter.ReadMetadata(drafterDir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("drafter %s: %w", drafterDir, err)
	}
	lay, err := refdraft.NewLayout(cfg, cfg.FeatureSize(cfg.HiddenSize), meta)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("drafter %s: %w", drafterDir, err)
	}
	fns := map[string][]refchunk.Spec{}
	for _, e := range []string{refdraft.Draft, refdraft.Ctx64} {
		if fns[e], err = lay.Tensors(e); err != nil {
			return nil, nil, nil, err
		}
	}
	return cfg, meta, fns, nil
}

// targetWeights is what a drafter borrows from its target, read from a
// drafter package's weights.safetensors (dflash.TargetWeights).
type targetWeights struct {
	embed []float32
	cols  int
	head  *kernels.Linear
}

func (t *targetWeights) EmbedRow(id int, dst []float32) { copy(dst, t.embed[id*t.cols:(id+1)*t.cols]) }
func (t *targetWeights) LMHead() *kernels.Linear        { return t.head }

func readTarget(weights string, vocab, hidden int) (*targetWeights, error) {
	f, err := tensor.OpenSafetensors(weights)
	if err != nil {
		return nil, fmt.Errorf("stand-in drafter package: %w", err)
	}
	defer f.Close()
	get := func(name string) ([]float32, error) {
		info, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("stand-in drafter package %s: tensor %s is missing", weights, name)
		}
		if !slices.Equal(info.Shape, []int{vocab, hidden}) {
			return nil, fmt.Errorf("stand-in drafter package %s: tensor %s has shape %v, the drafter needs [%d %d]", weights, name, info.Shape, vocab, hidden)
		}
		v, err := f.Float32(name)
		if err != nil {
			return nil, fmt.Errorf("stand-in drafter package %s: %w", weights, err)
		}
		return v, nil
	}
	embed, err := get(layout.EmbedName)
	if err != nil {
		return nil, err
	}
	hw, err := get(layout.HeadName)
	if err != nil {
		return nil, err
	}
	m, err := kernels.NewF32(vocab, hidden, hw)
	if err != nil {
		return nil, err
	}
	head, err := kernels.NewLinear(layout.HeadName, m, nil, nil)
	if err != nil {
		return nil, err
	}
	return &targetWeights{embed: embed, cols: hidden, head: head}, nil
}
