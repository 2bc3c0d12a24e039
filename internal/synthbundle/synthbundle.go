// Package synthbundle writes synthetic Core AI bundles in the published
// layout: a valid release.json and coreai/manifest.json, a qwen3_5 model
// config, tokenizer files, an FP16 embedding .npy, chunk and head packages
// and a DFlash2 drafter with a real selector.safetensors. The packages are
// deterministic pseudo-random bytes (nothing can run them), streamed to
// disk and hashed on the way, so multi-GiB bundles cost one write.
package synthbundle

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/bundle"
)

// Options shape the bundle. Zero values pick small defaults.
type Options struct {
	Layers      int   // target layers (default 8); a multiple of ChunkLayers
	ChunkLayers int   // layers per chunk package (default 4)
	Hidden      int   // hidden size (default 64)
	Vocab       int   // vocabulary (default 512)
	Contexts    []int // default 8192, 16384
	// TotalBytes is the approximate size of the whole bundle; the chunk
	// weight files absorb it (default: 64 KiB per weight file).
	TotalBytes int64
	// WeightFiles is the number of weight files per chunk package
	// (default 1), to reach a chosen file count.
	WeightFiles int
	Seed        uint64
	NoDrafter   bool // leave the drafter out
	Export      bool // add the optional export/ component
}

// ExportName is the export identity the manifest and drafter point at.
const ExportName = "synth_export"

func (o *Options) defaults() error {
	if o.Layers == 0 {
		o.Layers = 8
	}
	if o.ChunkLayers == 0 {
		o.ChunkLayers = 4
	}
	if o.Hidden == 0 {
		o.Hidden = 64
	}
	if o.Vocab == 0 {
		o.Vocab = 512
	}
	if len(o.Contexts) == 0 {
		o.Contexts = []int{8192, 16384}
	}
	if o.WeightFiles == 0 {
		o.WeightFiles = 1
	}
	if o.Layers%o.ChunkLayers != 0 {
		return fmt.Errorf("synthbundle: %d layers do not split into chunks of %d", o.Layers, o.ChunkLayers)
	}
	if o.Hidden%16 != 0 || o.Layers < 5 {
		return fmt.Errorf("synthbundle: hidden must be a multiple of 16 and layers at least 5")
	}
	return nil
}

type writer struct {
	dir   string
	rel   *bundle.Release
	model string
	opts  Options
}

// Generate writes a bundle into dir (created if needed) and returns its
// release.json, already written.
func Generate(dir string, o Options) (*bundle.Release, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	w := &writer{dir: dir, opts: o, rel: &bundle.Release{
		SchemaVersion: 1,
		UpstreamModel: bundle.UpstreamModel{ID: "Qwen/Qwen3.8-27B", Revision: "1d4bf0f2ff6012fd82039f2fa52739d0dd7c60c0"},
		ModelPath:     "model",
		Runtimes:      map[string]bundle.Runtime{"coreai": {Path: "coreai", Contexts: o.Contexts}},
	}}
	taps := Taps(o.Layers)
	steps := []func() error{w.documents, w.modelFiles, func() error { return w.runtime(taps) }}
	if !o.NoDrafter {
		steps = append(steps, func() error { return w.drafter(taps) })
	}
	if o.Export {
		steps = append(steps, w.export)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := w.rel.Write(dir); err != nil {
		return nil, err
	}
	return w.rel, nil
}

// Taps is bundle.SpreadTaps, kept for the tests that build bundles.
func Taps(layers int) []int { return bundle.SpreadTaps(layers) }

// add writes data at p and inventories it.
func (w *writer) add(component, p string, data []byte) error {
	name := filepath.Join(w.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	w.record(component, p, int64(len(data)), hex.EncodeToString(sum[:]))
	return nil
}

// addExisting inventories a file another writer produced.
func (w *writer) addExisting(component, p string) error {
	sum, size, err := bundle.HashFile(filepath.Join(w.dir, filepath.FromSlash(p)))
	if err != nil {
		return err
	}
	w.record(component, p, size, sum)
	return nil
}

func (w *writer) record(component, p string, size int64, sum string) {
	f := bundle.File{Path: p, Component: component, Bytes: size, SHA256: sum}
	if bundle.NeedsModificationNotice(component, p, w.rel.ModelPath) {
		f.ModificationNotice = bundle.ModificationNotice
	}
	w.rel.Files = append(w.rel.Files, f)
}

// addRandom streams size pseudo-random bytes seeded by the path and seed,
// hashing as it writes.
func (w *writer) addRandom(component, p string, size int64) error {
	name := filepath.Join(w.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), randomReader(w.opts.Seed, p), size); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	w.record(component, p, size, hex.EncodeToString(h.Sum(nil)))
	return nil
}

// randomReader is a deterministic byte stream for (seed, name).
func randomReader(seed uint64, name string) io.Reader {
	h := fnv.New64a()
	io.WriteString(h, name)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	binary.LittleEndian.PutUint64(key[8:], h.Sum64())
	return rand.NewChaCha8(key)
}

func (w *writer) documents() error {
	for _, d := range bundle.RootDocuments {
		text := fmt.Sprintf("# %s\n\nSynthetic Forge bundle (seed %d): not a model.\n", d, w.opts.Seed)
		if d == "QWEN_SOURCE.json" {
			text = `{"id": "Qwen/Qwen3.8-27B", "revision": "1d4bf0f2ff6012fd82039f2fa52739d0dd7c60c0"}` + "\n"
		}
		if err := w.add(bundle.ComponentDocumentation, d, []byte(text)); err != nil {
			return err
		}
	}
	return nil
}

// Model returns the qwen3_5 config the generator writes for o.
func Model(o Options) (*hfconfig.Model, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	types := make([]string, o.Layers)
	for i := range types {
		types[i] = "linear_attention"
		if i%4 == 3 {
			types[i] = "full_attention"
		}
	}
	return &hfconfig.Model{
		ModelType: "qwen3_5", VocabSize: o.Vocab, HiddenSize: o.Hidden, IntermediateSize: 2 * o.Hidden,
		NumHiddenLayers: o.Layers, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 32, LayerTypes: types,
		LinearNumKeyHeads: 2, LinearNumValueHeads: 4, LinearKeyHeadDim: 16, LinearValueHeadDim: 16,
		LinearConvKernelDim: 4, RopeTheta: 1e7, PartialRotaryFactor: 0.25, RMSNormEps: 1e-6,
		MaxPositionEmbeddings: 262144, EOSTokenIDs: []int{o.Vocab - 2, o.Vocab - 1},
	}, nil
}

func (w *writer) modelFiles() error {
	m, err := Model(w.opts)
	if err != nil {
		return err
	}
	cfg, err := m.MarshalHF()
	if err != nil {
		return err
	}
	root := w.rel.ModelPath
	if err := w.add(bundle.ComponentModel, path.Join(root, "config.json"), cfg); err != nil {
		return err
	}
	// Placeholders: the integrity rules inventory the tokenizer but do not parse it.
	tok := fmt.Sprintf(`{"version": "1.0", "model": {"type": "BPE", "vocab": {}, "merges": []}, "synthetic_vocab_size": %d}`+"\n", w.opts.Vocab)
	if err := w.add(bundle.ComponentModel, path.Join(root, "tokenizer.json"), []byte(tok)); err != nil {
		return err
	}
	if err := w.add(bundle.ComponentModel, path.Join(root, "tokenizer_config.json"), []byte(`{"chat_template": ""}`+"\n")); err != nil {
		return err
	}
	emb := make([]byte, w.opts.Vocab*w.opts.Hidden*2)
	io.ReadFull(randomReader(w.opts.Seed, "embedding"), emb)
	for i := 0; i < len(emb); i += 2 {
		emb[i+1] &= 0x3b // keep every fp16 finite and small
	}
	p := path.Join(root, bundle.EmbeddingFile)
	if err := tensor.WriteNPY(filepath.Join(w.dir, filepath.FromSlash(p)), "<f2", []int{w.opts.Vocab, w.opts.Hidden}, emb); err != nil {
		return err
	}
	return w.addExisting(bundle.ComponentModel, p)
}

// ChunkName is bundle.ChunkFile, kept for the tests that name chunks.
func ChunkName(lo, hi int) string { return bundle.ChunkFile(lo, hi) }

func (w *writer) runtime(taps []int) error {
	o := w.opts
	root := w.rel.Runtimes["coreai"].Path
	chunks := o.Layers / o.ChunkLayers
	weightFiles := chunks * o.WeightFiles
	perFile := int64(64 << 10)
	if o.TotalBytes > 0 {
		perFile = max(o.TotalBytes/int64(weightFiles), 1)
	}
	man := bundle.Manifest{
		Version: bundle.ManifestVersion, T: bundle.VerifyRows, TP: 64, Pend: 8, Taps: taps,
		Ctxs: o.Contexts, PCtxs: o.Contexts, KVLen: map[string]int{}, PKVLen: map[string]int{},
		Export:  "/exports/" + ExportName,
		KVCache: bundle.KVCache{KVLayout: v8Layout()},
		Head:    &bundle.Head{File: "head_T8.aimodel"},
	}
	for _, c := range o.Contexts {
		kv := bundle.KVLenFor(c, man.Pend, man.T, man.TP)
		man.KVLen[fmt.Sprint(c)], man.PKVLen[fmt.Sprint(c)] = kv, kv
	}
	for i := range chunks {
		lo, hi := i*o.ChunkLayers, (i+1)*o.ChunkLayers-1
		ch := bundle.Chunk{File: ChunkName(lo, hi), Layers: [2]int{lo, hi}, EntriesCtx: [][]int{o.Contexts, o.Contexts}}
		for _, c := range o.Contexts {
			ch.Entries = append(ch.Entries, bundle.EntryName("v8", c), bundle.EntryName("p64", c))
		}
		for l := lo; l <= hi; l++ {
			if l%4 == 3 {
				ch.AttJ = append(ch.AttJ, l-lo)
			} else {
				ch.GDNJ = append(ch.GDNJ, l-lo)
			}
			if slices.Contains(taps, l) && l != hi {
				ch.Taps = append(ch.Taps, l)
			}
		}
		man.Chunks = append(man.Chunks, ch)
		pkg := path.Join(root, ch.File)
		if err := w.add(bundle.ComponentCoreAI, path.Join(pkg, "metadata.json"), []byte(fmt.Sprintf(`{"layers": [%d, %d]}`+"\n", lo, hi))); err != nil {
			return err
		}
		for j := range o.WeightFiles {
			if err := w.addRandom(bundle.ComponentCoreAI, path.Join(pkg, "weights", fmt.Sprintf("weight-%02d.bin", j)), perFile); err != nil {
				return err
			}
		}
	}
	if err := w.addRandom(bundle.ComponentCoreAI, path.Join(root, man.Head.File, "weights", "weight.bin"), 32<<10); err != nil {
		return err
	}
	data, err := json.MarshalIndent(&man, "", "  ")
	if err != nil {
		return err
	}
	return w.add(bundle.ComponentCoreAI, path.Join(root, bundle.ManifestFile), append(data, '\n'))
}

func v8Layout() bundle.KVLayout {
	f16, tokenHead := "float16", "token_head"
	return bundle.KVLayout{Format: "v8", Keys: "float16", Values: "int8", Scales: &f16, ScaleGranularity: &tokenHead, StableAttention: true}
}

// Drafter returns the DFlash2 drafter config the generator writes for o.
func Drafter(o Options) (*hfconfig.Drafter, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	return &hfconfig.Drafter{
		HiddenSize: o.Hidden, IntermediateSize: 2 * o.Hidden, NumHiddenLayers: 5, NumAttentionHeads: 16,
		NumKeyValueHeads: 8, HeadDim: 128, VocabSize: o.Vocab, SlidingWindow: 2048, NumTargetLayers: o.Layers,
		RMSNormEps: 1e-6, RopeTheta: 1e7,
		DFlash: hfconfig.DFlashConfig{BlockSize: 8, MaskTokenID: o.Vocab - 3, SelectorTopK: 16, SelectorRank: 256,
			ConvGroupSize: 16, ConvKernelSize: 2, TargetLayerIDs: Taps(o.Layers)},
	}, nil
}

func (w *writer) drafter(taps []int) error {
	root := "drafter"
	w.rel.Drafter = &bundle.Drafter{Path: root, Runtime: "coreai", Model: bundle.DrafterModel, Metadata: bundle.DrafterMetadata,
		Config: bundle.DrafterConfig, Codebooks: bundle.DrafterCodebooks, TargetExport: ExportName, HeadExport: ExportName, Taps: taps}
	d, err := Drafter(w.opts)
	if err != nil {
		return err
	}
	cfg, err := d.MarshalHF()
	if err != nil {
		return err
	}
	if err := w.add(bundle.ComponentDrafter, path.Join(root, bundle.DrafterConfig), cfg); err != nil {
		return err
	}
	meta := map[string]any{
		"W": 2048, "T": 8, "R": 8, "RP": 64, "resid_scale": 256.0, "feat_scale": 0.125, "mask_scale": 0.7,
		"target_export": "/exports/" + ExportName, "head_export": "/exports/" + ExportName + "/lm_head.safetensors",
		"entries": map[string]any{
			"draft": map[string]any{"inputs": []string{"feat", "anchor", "mask"}, "outputs": []string{"logits", "hp", "hidden"}},
			"ctx64": map[string]any{"inputs": []string{"feat"}, "outputs": []string{"k_new0", "v_new0"}},
		},
	}
	data, _ := json.MarshalIndent(meta, "", "  ")
	if err := w.add(bundle.ComponentDrafter, path.Join(root, bundle.DrafterMetadata), append(data, '\n')); err != nil {
		return err
	}
	if err := w.addRandom(bundle.ComponentDrafter, path.Join(root, bundle.DrafterModel, "weights", "weight.bin"), 48<<10); err != nil {
		return err
	}
	var ts []tensor.Tensor
	for _, name := range []string{"candidate_selector.predecessor_codebook", "candidate_selector.successor_codebook"} {
		data := make([]byte, w.opts.Vocab*256*2)
		io.ReadFull(randomReader(w.opts.Seed, name), data)
		for i := 0; i < len(data); i += 2 {
			data[i+1] &= 0x3f // finite bf16
		}
		ts = append(ts, tensor.Tensor{Name: name, DType: tensor.BF16, Shape: []int{w.opts.Vocab, 256}, Data: data})
	}
	sel := path.Join(root, bundle.DrafterCodebooks)
	if err := tensor.WriteSafetensors(filepath.Join(w.dir, filepath.FromSlash(sel)), nil, ts); err != nil {
		return err
	}
	if err := w.addExisting(bundle.ComponentDrafter, sel); err != nil {
		return err
	}
	for _, doc := range []string{"LICENSE", "NOTICE", "DFLASH2_SOURCE.json"} {
		if err := w.add(bundle.ComponentDrafter, path.Join(root, doc), []byte("synthetic "+doc+"\n")); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) export() error {
	w.rel.ExportPath = "export"
	for i := range 2 {
		if err := w.addRandom(bundle.ComponentExport, fmt.Sprintf("export/weights-%02d.bin", i), 16<<10); err != nil {
			return err
		}
	}
	return w.add(bundle.ComponentExport, "export/README.md", []byte("Quantized export for the reference backend (synthetic).\n"))
}
