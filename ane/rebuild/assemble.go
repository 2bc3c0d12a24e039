package rebuild

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/forgedaemon/forged/ane/config"
	"github.com/forgedaemon/forged/ane/rebuild/export"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/synthbundle"
	"github.com/forgedaemon/forged/verify"
)

// AssembleOptions configure Assemble.
type AssembleOptions struct {
	Model  string // BF16 checkpoint directory (config, tokenizer, chat template, embedding)
	Export string // quantized export directory (Quantize or LowRank output)
	Out    string // the bundle directory to create; must be absent or empty
	// Contexts are the context entries the runtime manifest advertises
	// (default [8192]); ChunkLayers the layers per chunk package (default 4).
	Contexts    []int
	ChunkLayers int
	// ModelID and ModelRevision name the upstream model in release.json
	// (default Qwen/Qwen3.8-27B at the published revision).
	ModelID, ModelRevision string
}

// AssembleReport describes an assembled bundle.
type AssembleReport struct {
	Out         string         `json:"out"`
	Files       int            `json:"files"`
	Bytes       int64          `json:"bytes"`
	Layers      int            `json:"layers"`
	Chunks      int            `json:"chunks"`
	Contexts    []int          `json:"contexts"`
	SmallTensor int            `json:"small_tensors"`
	Verify      *verify.Report `json:"verify"`
}

// Upstream model named by default in release.json (reference §1.1).
const (
	DefaultModelID       = "Qwen/Qwen3.8-27B"
	DefaultModelRevision = "1d4bf0f2ff6012fd82039f2fa52739d0dd7c60c0"
	// PlaceholderFile is what each Core AI package directory of an
	// assembled bundle holds: Core AI packages cannot be built off a Mac.
	PlaceholderFile = "PLACEHOLDER.txt"
)

// Assemble builds a complete bundle directory from a checkpoint and its
// export: model/ (the allowed model files and embed_tokens_fp16.npy),
// export/ (the export plus small.safetensors), the root documents, a
// coreai/ runtime section whose manifest covers the model's layers in
// chunks but whose packages are placeholders, and release.json (which the
// bundle verifier must PASS). The bundle is plain (no drafter). The
// reference backend runs it (ref.OpenBundle); Core AI cannot. On failure
// nothing is left in Out.
func Assemble(o AssembleOptions) (_ *AssembleReport, err error) {
	if o.Model == "" || o.Export == "" || o.Out == "" {
		return nil, errors.New("assemble: the checkpoint, export and output directories are all required")
	}
	if len(o.Contexts) == 0 {
		o.Contexts = []int{8192}
	}
	if o.ChunkLayers == 0 {
		o.ChunkLayers = 4
	}
	if o.ModelID == "" {
		o.ModelID, o.ModelRevision = DefaultModelID, DefaultModelRevision
	}
	cfg, err := ref.CheckCheckpoint(o.Model)
	if err != nil {
		return nil, err
	}
	if cfg.NumHiddenLayers%o.ChunkLayers != 0 {
		return nil, fmt.Errorf("assemble: %d layers do not split into chunks of %d", cfg.NumHiddenLayers, o.ChunkLayers)
	}
	if err := checkExportFiles(o.Export, cfg.NumHiddenLayers); err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(o.Out); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("assemble: %s is not empty", o.Out)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(o.Out)
		}
	}()
	rep := &AssembleReport{Out: o.Out, Layers: cfg.NumHiddenLayers, Chunks: cfg.NumHiddenLayers / o.ChunkLayers, Contexts: o.Contexts}
	steps := []func() error{
		func() error { return assembleModel(o, cfg) },
		func() error { return assembleExport(o, rep) },
		func() error { return writeDocuments(o, cfg) },
		func() error { return writeRuntime(o, cfg) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	// The reference backend must be able to run what was assembled.
	m, err := ref.OpenBundle(o.Out, ref.Options{})
	if err != nil {
		return nil, fmt.Errorf("assembled bundle does not load: %w", err)
	}
	m.Close()
	r, vr, err := ReleaseManifest(ManifestOptions{Bundle: o.Out, ModelID: o.ModelID, ModelRevision: o.ModelRevision, Plain: true})
	if err != nil {
		return nil, err
	}
	rep.Verify = vr
	for _, f := range r.Files {
		rep.Files++
		rep.Bytes += f.Bytes
	}
	return rep, nil
}

// checkExportFiles refuses an incomplete export before any work.
func checkExportFiles(dir string, layers int) error {
	need := []string{"lm_head.safetensors"}
	for i := range layers {
		need = append(need, export.MLPFile(i), export.MixerFile(i))
	}
	for _, name := range need {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("export %s: %s is missing (is the quantize run complete?)", dir, name)
		}
	}
	return nil
}

func assembleModel(o AssembleOptions, cfg *config.Model) error {
	dst := filepath.Join(o.Out, "model")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, name := range bundle.ModelFiles {
		if name == bundle.EmbeddingFile {
			continue
		}
		src := filepath.Join(o.Model, name)
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := copyFile(src, filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	for _, name := range bundle.RequiredModelFiles {
		if _, err := os.Stat(filepath.Join(dst, name)); err != nil && name != bundle.EmbeddingFile {
			return fmt.Errorf("checkpoint %s: %s is missing (a bundle needs it in model/)", o.Model, name)
		}
	}
	_, err := Embeddings(o.Model, filepath.Join(dst, bundle.EmbeddingFile))
	return err
}

// assembleExport copies the export's files (not its hidden state, not an
// embedding copy) and adds
// small.safetensors unless the export already has one.
func assembleExport(o AssembleOptions, rep *AssembleReport) error {
	dst := filepath.Join(o.Out, "export")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(o.Export)
	if err != nil {
		return err
	}
	for _, e := range entries {
		// The embedding lives in model/ (an export directory may hold a copy for ref.OpenExport).
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() || e.Name() == ref.EmbeddingNPY {
			continue
		}
		if err := copyFile(filepath.Join(o.Export, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(dst, ref.SmallFile)); err == nil {
		return nil
	}
	small, err := SmallTensors(o.Model, dst)
	if err != nil {
		return err
	}
	rep.SmallTensor = small.Tensors
	return nil
}

func writeDocuments(o AssembleOptions, cfg *config.Model) error {
	docs := map[string]string{
		"README.md": fmt.Sprintf(`# Forge demo bundle (synthetic)

This bundle was assembled by forged's rebuild path (forgectl rebuild bundle) from a
%d-layer, hidden-size-%d qwen3_5 checkpoint and its quantized export. If that checkpoint
is synthetic (forgectl rebuild synth), its weights are random and its text is gibberish.

- model/: config, tokenizer, chat template, embed_tokens_fp16.npy
- export/: the quantized layers, lm_head and small.safetensors; the pure-Go reference
  backend runs these
- coreai/: a valid manifest.json, but every package directory holds only %s:
  Core AI packages cannot be built off Apple hardware, so nothing here runs on the ANE
`, cfg.NumHiddenLayers, cfg.HiddenSize, PlaceholderFile),
		"LICENSE": "Apache License, Version 2.0 (the upstream Qwen license). This bundle holds no upstream weights\n" +
			"when built from a synthetic checkpoint.\n",
		"NOTICE": "Assembled by forged's rebuild path. Synthetic checkpoints are generated by forged and are not\n" +
			"derived from Qwen weights; the upstream model named in release.json is the model this format serves.\n",
		"MODIFICATIONS.md": "# Modifications\n\nWeights were quantized by forged's rebuild path (GPTQ/LUT formats of the export\n" +
			"metadata), the embedding was cast to FP16, and the unquantized small tensors were copied to\n" +
			"export/small.safetensors. The Core AI packages are placeholders.\n",
	}
	src, _ := json.MarshalIndent(map[string]string{"id": o.ModelID, "revision": o.ModelRevision,
		"note": "upstream model this bundle format serves; a synthetic demo bundle contains none of its weights"}, "", "  ")
	docs["QWEN_SOURCE.json"] = string(src) + "\n"
	for name, text := range docs {
		if err := os.WriteFile(filepath.Join(o.Out, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeRuntime writes coreai/manifest.json for the model's layers (chunks
// of ChunkLayers, V8 KV cache, the contexts asked for) and a placeholder
// file in every package directory it names.
func writeRuntime(o AssembleOptions, cfg *config.Model) error {
	root := filepath.Join(o.Out, "coreai")
	L := cfg.NumHiddenLayers
	taps := synthbundle.Taps(L)
	f16, tokenHead := "float16", "token_head"
	const pend, tp = 8, 64
	man := bundle.Manifest{
		Version: bundle.ManifestVersion, T: bundle.VerifyRows, TP: tp, Pend: pend, Taps: taps,
		Ctxs: o.Contexts, PCtxs: o.Contexts, KVLen: map[string]int{}, PKVLen: map[string]int{},
		Export: "export",
		KVCache: bundle.KVCache{KVLayout: bundle.KVLayout{Format: "v8", Keys: "float16", Values: "int8",
			Scales: &f16, ScaleGranularity: &tokenHead, StableAttention: true}},
		Head: &bundle.Head{File: "head_T8.aimodel"},
	}
	for _, c := range o.Contexts {
		kv := bundle.KVLenFor(c, pend, bundle.VerifyRows, tp)
		man.KVLen[fmt.Sprint(c)], man.PKVLen[fmt.Sprint(c)] = kv, kv
	}
	packages := []string{man.Head.File}
	for lo := 0; lo < L; lo += o.ChunkLayers {
		hi := lo + o.ChunkLayers - 1
		ch := bundle.Chunk{File: synthbundle.ChunkName(lo, hi), Layers: [2]int{lo, hi}, EntriesCtx: [][]int{o.Contexts, o.Contexts}}
		for _, c := range o.Contexts {
			ch.Entries = append(ch.Entries, bundle.EntryName("v8", c), bundle.EntryName("p64", c))
		}
		for l := lo; l <= hi; l++ {
			if cfg.IsFullAttention(l) {
				ch.AttJ = append(ch.AttJ, l-lo)
			} else {
				ch.GDNJ = append(ch.GDNJ, l-lo)
			}
			if slices.Contains(taps, l) && l != hi {
				ch.Taps = append(ch.Taps, l)
			}
		}
		man.Chunks = append(man.Chunks, ch)
		packages = append(packages, ch.File)
	}
	if err := man.Validate(); err != nil {
		return err
	}
	if err := man.ValidateLayers(L); err != nil {
		return err
	}
	for _, p := range packages {
		dir := filepath.Join(root, p)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		text := fmt.Sprintf("Placeholder for the Core AI package %s.\n"+
			"Core AI packages are compiled on a Mac by the ANEMLL Forge builder and cannot be produced here;\n"+
			"this demo bundle's reference backend runs export/ instead.\n", p)
		if err := os.WriteFile(filepath.Join(dir, PlaceholderFile), []byte(text), 0o644); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(&man, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, bundle.ManifestFile), append(data, '\n'), 0o644)
}
