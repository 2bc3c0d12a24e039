package rebuild

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/format/drafter"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/rebuild/export"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
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
	// StandIn makes the coreai/ packages stand-in packages
	// (ane/coreai/standin) computed from the export's effective weights
	// (ref.EffectiveBundle) instead of placeholder files, so coreai runs
	// the bundle over the Linux stand-in bridge. Nothing runs on the ANE.
	StandIn bool
	// Drafter, if set, is a DFlash2 drafter directory (config.json,
	// model.safetensors, selector.safetensors, the sidecar naming Export)
	// included as drafter/ with its package (a stand-in package with
	// StandIn, else a placeholder); the runtime taps its target layers and
	// release.json records it.
	Drafter string
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
	StandIn     bool           `json:"stand_in"`
	Drafter     bool           `json:"drafter"`
	Verify      *verify.Report `json:"verify"`
}

// Upstream model named by default in release.json (Anemll/anemll-forge scripts/hf_release.py).
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
// chunks, with placeholder packages or (StandIn) stand-in packages,
// optionally drafter/, and release.json (which the bundle verifier must
// PASS). The reference backend runs it (ref.OpenBundle); Core AI runs it
// only over the stand-in bridge, and only when StandIn. On failure nothing
// is left in Out.
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
	taps := bundle.SpreadTaps(cfg.NumHiddenLayers)
	if o.Drafter != "" {
		// The sidecar must name this export; the runtime taps what the drafter reads.
		if err := drafter.CheckDirs(o.Drafter, o.Model, o.Export, nil); err != nil {
			return nil, fmt.Errorf("assemble: drafter %s: %w", o.Drafter, err)
		}
		dc, err := hfconfig.LoadDrafter(o.Drafter)
		if err != nil {
			return nil, err
		}
		taps = dc.DFlash.TargetLayerIDs
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
	rep := &AssembleReport{Out: o.Out, Layers: cfg.NumHiddenLayers, Chunks: cfg.NumHiddenLayers / o.ChunkLayers, Contexts: o.Contexts,
		StandIn: o.StandIn, Drafter: o.Drafter != ""}
	var weights map[string][]float32 // the export's effective tensors, for stand-in packages
	steps := []func() error{
		func() error { return assembleModel(o, cfg) },
		func() error { return assembleExport(o, rep) },
		func() error { return writeDocuments(o, cfg) },
		func() (err error) {
			if o.StandIn {
				_, weights, err = ref.EffectiveBundle(o.Out)
			}
			return err
		},
		func() error { return writeRuntime(o, cfg, taps, weights) },
		func() error { return assembleDrafter(o, weights) },
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
	r, vr, err := ReleaseManifest(ManifestOptions{Bundle: o.Out, ModelID: o.ModelID, ModelRevision: o.ModelRevision, Plain: o.Drafter == ""})
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

func assembleModel(o AssembleOptions, cfg *hfconfig.Model) error {
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
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() || e.Name() == tensor.EmbeddingNPY {
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

func writeDocuments(o AssembleOptions, cfg *hfconfig.Model) error {
	runtime := fmt.Sprintf(`- coreai/: a valid manifest.json, but every package directory holds only %s:
  Core AI packages cannot be built off Apple hardware, so nothing here runs on the ANE
`, PlaceholderFile)
	packages := "The Core AI packages are placeholders."
	if o.StandIn {
		runtime = `- coreai/: a valid manifest.json whose packages are stand-in packages (functions.txt,
  standin.json, weights.safetensors): a Linux stand-in; nothing here runs on the ANE. ane/coreai
  runs them over the stand-in bridge (ane/coreai/standin), which computes every chunk function on
  the CPU from weights.safetensors: the export's matrices dequantized, with their low-rank branches
  and online rotations folded in (ref.EffectiveBundle)
`
		packages = "The Core AI packages are Linux stand-in packages (ane/coreai/standin), not compiled Core AI\n" +
			"packages: their weights.safetensors hold the export's dequantized matrices as float32, low-rank\n" +
			"branches and online rotations folded in. Nothing in them runs on the ANE."
	}
	if o.Drafter != "" {
		pkg := "a placeholder for its Core AI package"
		if o.StandIn {
			pkg = "its stand-in package (the draft and ctx64 functions on the CPU)"
		}
		runtime += "- drafter/: a DFlash2 drafter (config, weights, selector codebooks, sidecar) and " + pkg + "\n"
		packages += "\nThe drafter sidecar's target_export and head_export were re-pointed at this bundle's export/."
	}
	docs := map[string]string{
		"README.md": fmt.Sprintf(`# Forge demo bundle (synthetic)

This bundle was assembled by forged's rebuild path (forgectl rebuild bundle) from a
%d-layer, hidden-size-%d qwen3_5 checkpoint and its quantized export. If that checkpoint
is synthetic (forgectl rebuild synth), its weights are random and its text is gibberish.

- model/: config, tokenizer, chat template, embed_tokens_fp16.npy
- export/: the quantized layers, lm_head and small.safetensors; the pure-Go reference
  backend runs these
%s`, cfg.NumHiddenLayers, cfg.HiddenSize, runtime),
		"LICENSE": "Apache License, Version 2.0 (the upstream Qwen license). This bundle holds no upstream weights\n" +
			"when built from a synthetic checkpoint.\n",
		"NOTICE": "Assembled by forged's rebuild path. Synthetic checkpoints are generated by forged and are not\n" +
			"derived from Qwen weights; the upstream model named in release.json is the model this format serves.\n",
		"MODIFICATIONS.md": "# Modifications\n\nWeights were quantized by forged's rebuild path (GPTQ/LUT formats of the export\n" +
			"metadata), the embedding was cast to FP16, and the unquantized small tensors were copied to\n" +
			"export/small.safetensors. " + packages + "\n",
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

// writeRuntime writes coreai/: manifest.json for the model's layers
// (standin.Layout: chunks of ChunkLayers, V8 KV cache, p64 entries, the
// contexts asked for, taps) and in every package directory it names
// either a placeholder file or, given the export's effective weights
// (StandIn), a stand-in package.
func writeRuntime(o AssembleOptions, cfg *hfconfig.Model, taps []int, weights map[string][]float32) error {
	root := filepath.Join(o.Out, "coreai")
	ro := standin.RuntimeOptions{Contexts: o.Contexts, ChunkLayers: o.ChunkLayers, KV: ane.KVV8, Taps: taps, Prefill: true, Export: "export"}
	if weights != nil {
		_, err := standin.WriteRuntime(root, cfg, weights, ro)
		return err
	}
	man, err := standin.Layout(cfg, ro)
	if err != nil {
		return err
	}
	packages := []string{man.Head.File}
	for _, ch := range man.Chunks {
		packages = append(packages, ch.File)
	}
	for _, p := range packages {
		if err := writePlaceholder(filepath.Join(root, p), p); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, bundle.ManifestFile), append(data, '\n'), 0o644)
}

// writePlaceholder writes PlaceholderFile into the package directory dir.
func writePlaceholder(dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	text := fmt.Sprintf("Placeholder for the Core AI package %s.\n"+
		"Core AI packages are compiled on a Mac by the ANEMLL Forge builder and cannot be produced here;\n"+
		"this demo bundle's reference backend runs export/ instead.\n", name)
	return os.WriteFile(filepath.Join(dir, PlaceholderFile), []byte(text), 0o644)
}

// assembleDrafter copies the drafter directory's files into drafter/,
// re-pointing the sidecar's target_export and head_export at this
// bundle's export/ (the drafter was paired with o.Export, which export/
// copies), and writes its package: a stand-in package over the effective
// weights, or a placeholder.
func assembleDrafter(o AssembleOptions, weights map[string][]float32) error {
	if o.Drafter == "" {
		return nil
	}
	dst := filepath.Join(o.Out, "drafter")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, name := range []string{drafter.ConfigFile, drafter.WeightsFile, drafter.SelectorFile} {
		if err := copyFile(filepath.Join(o.Drafter, name), filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(filepath.Join(o.Drafter, drafter.MetadataFile))
	if err != nil {
		return err
	}
	var meta map[string]any
	if err := json.Unmarshal(data, &meta); err != nil {
		return fmt.Errorf("drafter %s: %s: %w", o.Drafter, drafter.MetadataFile, err)
	}
	meta["target_export"], meta["head_export"] = "export", "export/"+export.HeadFile
	if data, err = json.MarshalIndent(meta, "", "  "); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dst, drafter.MetadataFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if weights != nil {
		_, err := standin.WriteDrafterPackage(dst, weights)
		return err
	}
	return writePlaceholder(filepath.Join(dst, bundle.DrafterModel), bundle.DrafterModel)
}
