package verify

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/forgedaemon/forged/ane/config"
	"github.com/forgedaemon/forged/ane/tensor"
	"github.com/forgedaemon/forged/bundle"
)

// local maps a bundle path to the file system.
func (c *checker) local(p string) string { return filepath.Join(c.dir, filepath.FromSlash(p)) }

// checkModel loads model/config.json and checks the embedding header
// against it. The published checker hard-codes the real model (64 layers,
// hidden 5120); here the bundle's own config is the reference, and the
// manifest must cover exactly its layers (checkManifest).
func (c *checker) checkModel() *config.Model {
	cfgPath := path.Join(c.rel.ModelPath, "config.json")
	model, err := config.LoadModel(c.local(cfgPath))
	if err != nil {
		c.fail("model.config", cfgPath, "%v", err)
		return nil
	}
	c.checkEmbedding(path.Join(c.rel.ModelPath, bundle.EmbeddingFile), model)
	return model
}

// checkEmbedding: a C-order little-endian float16 .npy of shape
// (vocab_size, hidden_size) whose size is exactly header + data.
func (c *checker) checkEmbedding(p string, model *config.Model) {
	f, err := os.Open(c.local(p))
	if err != nil {
		c.fail("model.embedding", p, "%v", err)
		return
	}
	defer f.Close()
	h, err := tensor.ReadNPYHeader(f)
	if err != nil {
		c.fail("model.embedding", p, "%v", err)
		return
	}
	st, err := f.Stat()
	if err != nil {
		c.fail("model.embedding", p, "%v", err)
		return
	}
	want := []int{model.VocabSize, model.HiddenSize}
	switch {
	case h.Descr != "<f2" && h.Descr != "=f2":
		c.fail("model.embedding", p, "dtype %q, want '<f2' (little-endian float16)", h.Descr)
	case h.FortranOrder:
		c.fail("model.embedding", p, "fortran_order is True, want C order")
	case !slices.Equal(h.Shape, want):
		c.fail("model.embedding", p, "shape %v, want (vocab_size, hidden_size) = %v from config.json", h.Shape, want)
	case st.Size() != h.DataOffset+int64(model.VocabSize)*int64(model.HiddenSize)*2:
		c.fail("model.embedding", p, "file is %d bytes, want header %d + %d×%d×2 data", st.Size(), h.DataOffset, model.VocabSize, model.HiddenSize)
	}
}

// checkManifest validates coreai/manifest.json against the release and
// the model: inventoried, contexts equal, chunks cover the model's layers,
// every package, head and compiled sibling inventoried.
func (c *checker) checkManifest(rt bundle.Runtime, model *config.Model) *bundle.Manifest {
	p := path.Join(rt.Path, bundle.ManifestFile)
	if !c.inventoried(p) {
		c.fail("manifest.inventoried", p, "the runtime manifest is not in release.json")
		return nil
	}
	data, err := os.ReadFile(c.local(p))
	if err != nil {
		c.fail("manifest.missing", p, "%v", err)
		return nil
	}
	man, err := bundle.ParseManifest(data)
	if err != nil {
		c.fail("manifest.schema", p, "%v", err)
		return nil
	}
	if !slices.Equal(man.Ctxs, rt.Contexts) {
		c.fail("manifest.ctxs", p, "ctxs %v differ from release.json runtimes.%s.contexts %v", man.Ctxs, c.opts.RuntimeName(), rt.Contexts)
	}
	if model != nil {
		if err := man.ValidateLayers(model.NumHiddenLayers); err != nil {
			c.fail("manifest.coverage", p, "%v", err)
		}
	}
	for _, ch := range man.Chunks {
		if !c.hasFilesUnder(path.Join(rt.Path, ch.File)) {
			c.fail("manifest.package", p, "chunk package %q has no inventoried files", ch.File)
		}
		if ch.Compiled != "" && !c.hasFilesUnder(path.Join(rt.Path, ch.Compiled)) {
			c.fail("manifest.compiled", p, "compiled package %q of %s is not inventoried", ch.Compiled, ch.File)
		}
	}
	if !c.hasFilesUnder(path.Join(rt.Path, man.Head.File)) {
		c.fail("manifest.head", p, "head package %q has no inventoried files", man.Head.File)
	}
	if man.Head.Compiled != "" && !c.hasFilesUnder(path.Join(rt.Path, man.Head.Compiled)) {
		c.fail("manifest.compiled", p, "compiled head package %q is not inventoried", man.Head.Compiled)
	}
	return man
}

// drafterMeta is the part of dflash2_lut4_gptq.json the pairing rules read.
type drafterMeta struct {
	W            int    `json:"W"`
	T            int    `json:"T"`
	R            int    `json:"R"`
	RP           int    `json:"RP"`
	TargetExport string `json:"target_export"`
	HeadExport   string `json:"head_export"`
	Entries      map[string]struct {
		Outputs []string `json:"outputs"`
	} `json:"entries"`
}

// DrafterSelectorRank is the rank of the selector codebooks the published
// drafter uses.
const DrafterSelectorRank = 256

// Selector codebook tensor names in selector.safetensors.
const (
	PredecessorCodebook = "candidate_selector.predecessor_codebook"
	SuccessorCodebook   = "candidate_selector.successor_codebook"
)

// checkDrafter applies check_drafter / check_drafter_pair. The drafter's
// own architecture (5 layers, 8 KV heads of 128, W 2048, T=R=8, RP=64) is
// fixed by the DFlash2 package; what depends on the target (layer count,
// hidden and vocab sizes, taps, export identity) is compared with the
// bundle's model and manifest instead of constants.
func (c *checker) checkDrafter(model *config.Model, man *bundle.Manifest) bool {
	d := c.rel.Drafter
	before := len(c.report.Failures)
	metaPath := path.Join(d.Path, d.Metadata)
	cfgPath := path.Join(d.Path, d.Config)
	selPath := path.Join(d.Path, d.Codebooks)

	var meta drafterMeta
	if data, err := os.ReadFile(c.local(metaPath)); err != nil {
		c.fail("drafter.meta", metaPath, "%v", err)
	} else if err := json.Unmarshal(data, &meta); err != nil {
		c.fail("drafter.meta", metaPath, "%v", err)
	}
	cfg, err := config.LoadDrafter(c.local(cfgPath))
	if err != nil {
		c.fail("drafter.config", cfgPath, "%v", err)
	}
	if meta.T != 8 || meta.R != 8 || meta.RP != 64 {
		c.fail("drafter.meta", metaPath, "T=%d R=%d RP=%d, want 8, 8, 64", meta.T, meta.R, meta.RP)
	}
	if meta.W != 2048 {
		c.fail("drafter.meta", metaPath, "W=%d, want 2048", meta.W)
	}
	if _, ok := meta.Entries["ctx64"]; !ok {
		c.fail("drafter.meta", metaPath, "entries has no \"ctx64\"")
	}
	if e, ok := meta.Entries["draft"]; !ok || !slices.Contains(e.Outputs, "logits") {
		c.fail("drafter.meta", metaPath, "entries.draft is missing or has no \"logits\" output")
	}
	if cfg != nil {
		type want struct {
			field     string
			got, want int
		}
		checks := []want{
			{"num_hidden_layers", cfg.NumHiddenLayers, 5}, {"head_dim", cfg.HeadDim, 128},
			{"num_key_value_heads", cfg.NumKeyValueHeads, 8}, {"dflash_config.block_size", cfg.DFlash.BlockSize, 8},
			{"dflash_config.selector_rank", cfg.DFlash.SelectorRank, DrafterSelectorRank},
			{"sliding_window (= metadata W)", cfg.SlidingWindow, meta.W},
		}
		if model != nil {
			checks = append(checks, want{"num_target_layers (= target num_hidden_layers)", cfg.NumTargetLayers, model.NumHiddenLayers},
				want{"hidden_size (= target)", cfg.HiddenSize, model.HiddenSize}, want{"vocab_size (= target)", cfg.VocabSize, model.VocabSize})
		}
		for _, w := range checks {
			if w.got != w.want {
				c.fail("drafter.config", cfgPath, "%s is %d, want %d", w.field, w.got, w.want)
			}
		}
		if man != nil && !slices.Equal(cfg.DFlash.TargetLayerIDs, man.Taps) {
			c.fail("drafter.pair", cfgPath, "dflash_config.target_layer_ids %v differ from the runtime manifest taps %v", cfg.DFlash.TargetLayerIDs, man.Taps)
		}
	}
	if man != nil {
		if !slices.Equal(d.Taps, man.Taps) {
			c.fail("drafter.pair", bundle.ReleaseFile, "drafter.taps %v differ from the runtime manifest taps %v", d.Taps, man.Taps)
		}
		target := path.Base(man.Export)
		if path.Base(meta.TargetExport) != target || path.Base(path.Dir(meta.HeadExport)) != target {
			c.fail("drafter.pair", metaPath, "target_export %q / head_export %q do not name the runtime's export %q", meta.TargetExport, meta.HeadExport, target)
		}
		if d.TargetExport != target || d.HeadExport != target {
			c.fail("drafter.pair", bundle.ReleaseFile, "drafter.target_export %q / head_export %q, want the runtime's export %q", d.TargetExport, d.HeadExport, target)
		}
	}
	if model != nil {
		c.checkSelector(selPath, model.VocabSize)
	}
	return len(c.report.Failures) == before
}

// checkSelector: exactly the two codebooks, each [vocab, 256] in BF16,
// F16 or F32 (OpenSafetensors checks offsets and the file size).
func (c *checker) checkSelector(p string, vocab int) {
	f, err := tensor.OpenSafetensors(c.local(p))
	if err != nil {
		c.fail("drafter.selector", p, "%v", err)
		return
	}
	defer f.Close()
	ts := f.Tensors()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{PredecessorCodebook, SuccessorCodebook}) {
		c.fail("drafter.selector", p, "tensors %v, want exactly %s and %s", names, PredecessorCodebook, SuccessorCodebook)
		return
	}
	for _, t := range ts {
		if t.DType != tensor.BF16 && t.DType != tensor.F16 && t.DType != tensor.F32 {
			c.fail("drafter.selector", p, "%s has dtype %s, want BF16, F16 or F32", t.Name, t.DType)
		}
		if !slices.Equal(t.Shape, []int{vocab, DrafterSelectorRank}) {
			c.fail("drafter.selector", p, "%s has shape %v, want [%d, %d]", t.Name, t.Shape, vocab, DrafterSelectorRank)
		}
	}
}
