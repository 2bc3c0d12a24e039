package verify

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/bundle"
)

// local maps a bundle path to the file system.
func (c *checker) local(p string) string { return filepath.Join(c.dir, filepath.FromSlash(p)) }

// checkModel loads model/config.json and checks the embedding header
// against it. The published checker hard-codes the real model (64 layers,
// hidden 5120); here the bundle's own config is the reference, and the
// manifest must cover exactly its layers (checkManifest).
func (c *checker) checkModel() *hfconfig.Model {
	cfgPath := path.Join(c.rel.ModelPath, "config.json")
	model, err := hfconfig.LoadModel(c.local(cfgPath))
	if err != nil {
		c.fail("model.config", cfgPath, "%v", err)
		return nil
	}
	c.checkEmbedding(path.Join(c.rel.ModelPath, bundle.EmbeddingFile), model)
	return model
}

// checkEmbedding: a C-order little-endian float16 .npy of shape
// (vocab_size, hidden_size) whose size is exactly header + data.
func (c *checker) checkEmbedding(p string, model *hfconfig.Model) {
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
func (c *checker) checkManifest(rt bundle.Runtime, model *hfconfig.Model) *bundle.Manifest {
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

// checkDrafter applies check_drafter / check_drafter_pair through the
// shared rules in ane/speculative/dflash (the runtime applies the same ones before it
// loads a drafter). What only a bundle has — release.json's drafter taps
// and export names — is checked here.
func (c *checker) checkDrafter(model *hfconfig.Model, man *bundle.Manifest) bool {
	d := c.rel.Drafter
	before := len(c.report.Failures)
	metaPath := path.Join(d.Path, d.Metadata)
	cfgPath := path.Join(d.Path, d.Config)
	selPath := path.Join(d.Path, d.Codebooks)

	target := drafter.Target{Model: model}
	if man != nil {
		target.Taps = man.Taps
		target.ExportName = path.Base(man.Export)
	}
	meta, err := readDrafterMeta(c.local(metaPath))
	if err != nil {
		c.fail("drafter.meta", metaPath, "%v", err)
	} else {
		c.failAll(drafter.MetaRules(meta, metaPath))
		c.failAll(drafter.ExportRules(meta, target.ExportName, metaPath))
	}
	if cfg, err := hfconfig.LoadDrafter(c.local(cfgPath)); err != nil {
		c.fail("drafter.config", cfgPath, "%v", err)
	} else {
		c.failAll(drafter.ConfigRules(cfg, meta, target, cfgPath))
	}
	if man != nil {
		if !slices.Equal(d.Taps, man.Taps) {
			c.fail("drafter.pair", bundle.ReleaseFile, "drafter.taps %v differ from the runtime manifest taps %v", d.Taps, man.Taps)
		}
		if d.TargetExport != target.ExportName || d.HeadExport != target.ExportName {
			c.fail("drafter.pair", bundle.ReleaseFile, "drafter.target_export %q / head_export %q, want the runtime's export %q", d.TargetExport, d.HeadExport, target.ExportName)
		}
	}
	if model != nil {
		c.failAll(drafter.SelectorRules(c.local(selPath), selPath, model.VocabSize, drafter.PublishedSelectorRk))
	}
	return len(c.report.Failures) == before
}

// readDrafterMeta reads the sidecar at the bundle's own metadata path
// (release.json names it; drafter.ReadMetadata assumes the default name).
func readDrafterMeta(p string) (*drafter.Metadata, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var m drafter.Metadata
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// failAll records the shared rules' violations as failures.
func (c *checker) failAll(vs []drafter.Violation) {
	for _, v := range vs {
		c.fail(v.Rule, v.File, "%s", v.Msg)
	}
}
