package rebuild

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai"
	"github.com/forgedaemon/forged/ane/coreai/smoke"
	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/format/layout"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/speculative/dflash"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/verify"
)

// TestSmallTensorsCopyCheckpointBytes: small.safetensors holds exactly the
// tensors the export leaves unquantized (29 for tiny: per DeltaNet layer
// in_proj_a/b, conv1d, A_log, dt_bias, norm; per attention layer q/k norm;
// two layer norms per layer; the final norm), byte-identical to the checkpoint.
func TestSmallTensorsCopyCheckpointBytes(t *testing.T) {
	dir := t.TempDir()
	rep, err := SmallTensors(tinyModel(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := hfconfig.LoadModel(tinyModel(t))
	if err != nil {
		t.Fatal(err)
	}
	want := 3*6 + 1*2 + 4*2 + 1
	if rep.Tensors != want {
		t.Errorf("%d small tensors, want %d", rep.Tensors, want)
	}
	f, err := tensor.OpenSafetensors(filepath.Join(dir, ref.SmallFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, closer, err := ref.OpenCheckpointSource(tinyModel(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	n := 0
	for _, spec := range layout.CheckpointTensors(cfg) {
		got, err := f.Bytes(spec.Name)
		isSmall := err == nil
		if isSmall != IsSmallTensor(spec) {
			t.Errorf("%s: in small.safetensors = %v, IsSmallTensor = %v", spec.Name, isSmall, IsSmallTensor(spec))
		}
		if !isSmall {
			continue
		}
		n++
		orig, _ := src.Tensor(spec.Name)
		if !bytes.Equal(got, orig.Data) {
			t.Errorf("%s: bytes differ from the checkpoint", spec.Name)
		}
	}
	if n != want || len(f.Tensors()) != want {
		t.Errorf("file holds %d tensors (%d from the table), want %d", len(f.Tensors()), n, want)
	}
}

// TestAssembleBundle: the assembled bundle passes the verifier, holds only
// allowed model files, its Core AI manifest covers the layers, and the
// reference engine opened on the bundle alone gives the same logits as the
// export opened beside the checkpoint (with the same FP16 embedding).
func TestAssembleBundle(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bundle")
	rep, err := Assemble(AssembleOptions{Model: tinyModel(t), Export: tinyExport(t), Out: out, Contexts: []int{8192, 16384}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verify.Passed() || rep.Chunks != 1 || rep.SmallTensor != 29 {
		t.Errorf("report %+v, verify %+v", rep, rep.Verify)
	}
	// An independent verifier run over everything, export included.
	vr, err := verify.Integrity(out, verify.Options{Selection: bundle.Selection{Runtime: bundle.ComponentCoreAI, Plain: true, IncludeExport: true}, Full: true})
	if err != nil || !vr.Passed() || vr.VerifiedFiles != rep.Files {
		t.Fatalf("verify: %v %+v (report says %d files)", err, vr, rep.Files)
	}
	man, err := bundle.LoadManifest(filepath.Join(out, "coreai"))
	if err != nil || man.Layers() != 4 || len(man.Ctxs) != 2 {
		t.Fatalf("manifest: %v %+v", err, man)
	}
	for _, p := range []string{"coreai/chunk_L00-03.aimodel/" + PlaceholderFile, "coreai/head_T8.aimodel/" + PlaceholderFile} {
		data, err := os.ReadFile(filepath.Join(out, p))
		if err != nil || !strings.Contains(string(data), "Placeholder") {
			t.Errorf("%s: %v %q", p, err, data)
		}
	}
	var src map[string]string
	data, _ := os.ReadFile(filepath.Join(out, "QWEN_SOURCE.json"))
	if err := json.Unmarshal(data, &src); err != nil || src["id"] != DefaultModelID {
		t.Errorf("QWEN_SOURCE.json: %v %s", err, data)
	}
	entries, _ := os.ReadDir(filepath.Join(out, "model"))
	for _, e := range entries {
		if !contains(bundle.ModelFiles, e.Name()) {
			t.Errorf("model/%s is not an allowed model file", e.Name())
		}
	}

	// Same logits: bundle alone vs export + checkpoint + the bundle's FP16 embedding.
	side := t.TempDir()
	for _, name := range filesIn(t, tinyExport(t)) {
		copyFile(filepath.Join(tinyExport(t), name), filepath.Join(side, name))
	}
	copyFile(filepath.Join(out, "model", bundle.EmbeddingFile), filepath.Join(side, tensor.EmbeddingNPY))
	// export/ holds the export's files plus small.safetensors, never an
	// embedding copy from the export directory.
	out2 := filepath.Join(t.TempDir(), "bundle2")
	if _, err := Assemble(AssembleOptions{Model: tinyModel(t), Export: side, Out: out2}); err != nil {
		t.Fatal(err)
	}
	got := filesIn(t, filepath.Join(out2, "export"))
	want := append(filesIn(t, tinyExport(t)), ref.SmallFile)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("export/ holds %v, want %v", got, want)
	}
	a, err := ref.OpenBundle(out, ref.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ref.OpenExport(tinyModel(t), side, ref.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sa, sb := a.NewSession(), b.NewSession()
	defer sa.Close()
	defer sb.Close()
	ids := []int{5, 300, 17, 42, 499}
	la, err := sa.Feed(ids)
	if err != nil {
		t.Fatal(err)
	}
	la = append([]float32(nil), la...)
	lb, err := sb.Feed(ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(la) != 512 || len(lb) != 512 {
		t.Fatalf("logits %d and %d", len(la), len(lb))
	}
	for i := range la {
		if la[i] != lb[i] {
			t.Fatalf("logit %d: bundle %v, export+checkpoint %v", i, la[i], lb[i])
		}
	}
}

// TestAssembleRefusesBadInput: each problem is named and nothing is left behind.
func TestAssembleRefusesBadInput(t *testing.T) {
	partial := t.TempDir()
	for _, name := range filesIn(t, tinyExport(t)) {
		if name != "layer_02_mixer.safetensors" {
			copyFile(filepath.Join(tinyExport(t), name), filepath.Join(partial, name))
		}
	}
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), []byte("x"), 0o644)
	cases := []struct {
		name string
		o    AssembleOptions
		want string
	}{
		{"incomplete export", AssembleOptions{Model: tinyModel(t), Export: partial}, "layer_02_mixer.safetensors is missing"},
		{"output not empty", AssembleOptions{Model: tinyModel(t), Export: tinyExport(t), Out: full}, "is not empty"},
		{"chunking", AssembleOptions{Model: tinyModel(t), Export: tinyExport(t), ChunkLayers: 3}, "do not split into chunks of 3"},
		{"no checkpoint", AssembleOptions{Model: t.TempDir(), Export: tinyExport(t)}, "config.json"},
	}
	for _, c := range cases {
		out := c.o.Out
		if out == "" {
			out = filepath.Join(t.TempDir(), "b")
			c.o.Out = out
		}
		_, err := Assemble(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
		if out != full {
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s: %s left behind", c.name, out)
			}
		}
	}
}

// TestOpenBundleNamesMissingParts: a bundle without small.safetensors or
// without the FP16 embedding is refused with the file named.
func TestOpenBundleNamesMissingParts(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bundle")
	if _, err := Assemble(AssembleOptions{Model: tinyModel(t), Export: tinyExport(t), Out: out}); err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(out, "export", ref.SmallFile), filepath.Join(out, "small.bak"))
	if _, err := ref.OpenBundle(out, ref.Options{}); err == nil || !strings.Contains(err.Error(), "export/small.safetensors") {
		t.Errorf("without small.safetensors: %v", err)
	}
	// A misshapen small tensor is named with its file.
	orig, err := tensor.OpenSafetensors(filepath.Join(out, "small.bak"))
	if err != nil {
		t.Fatal(err)
	}
	var ts []tensor.Tensor
	for _, info := range orig.Tensors() {
		data, _ := orig.Bytes(info.Name)
		shape := info.Shape
		if info.Name == layout.NormName {
			shape, data = []int{32}, data[:64]
		}
		ts = append(ts, tensor.Tensor{Name: info.Name, DType: info.DType, Shape: shape, Data: data})
	}
	if err := tensor.WriteSafetensors(filepath.Join(out, "export", ref.SmallFile), nil, ts); err != nil {
		t.Fatal(err)
	}
	orig.Close()
	if _, err := ref.OpenBundle(out, ref.Options{}); err == nil || !strings.Contains(err.Error(), ref.SmallFile) ||
		!strings.Contains(err.Error(), layout.NormName) || !strings.Contains(err.Error(), "[32]") {
		t.Errorf("misshapen final norm: %v", err)
	}
	os.Rename(filepath.Join(out, "small.bak"), filepath.Join(out, "export", ref.SmallFile))
	os.Remove(filepath.Join(out, "model", bundle.EmbeddingFile))
	if _, err := ref.OpenBundle(out, ref.Options{}); err == nil || !strings.Contains(err.Error(), "model/embed_tokens_fp16.npy is missing") {
		t.Errorf("without the embedding: %v", err)
	}
}

func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// standInBridge builds and attaches the stand-in bridge, skipping without
// a C compiler.
func standInBridge(t *testing.T) string {
	t.Helper()
	lib, err := standin.Build(t.TempDir())
	if errors.Is(err, standin.ErrNoCompiler) {
		t.Skip(err)
	}
	if err == nil {
		err = standin.Attach(lib)
	}
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// TestAssembleStandIn: a bundle assembled with StandIn and a drafter from
// a low-rank, partly rotated export (the mixed plan: online MLP bases in
// layers 0, 1 and 3) verifies PASS as a speculative bundle and says what
// its packages are; coreai runs its coreai/ over the stand-in bridge with
// ane/ref's greedy tokens on the same bundle, for a prompt that starts in
// the 1024 entry and ends in the 2048 one too; smoke.Run with the
// bundle's DFlash2 drafter on the stand-in gives the plain greedy tokens.
func TestAssembleStandIn(t *testing.T) {
	lib := standInBridge(t)
	lr := filepath.Join(t.TempDir(), "lowrank")
	if _, err := LowRank(LowRankOptions{Model: tinyModel(t), Export: tinyExport(t), Out: lr, Rank: 4, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	ddir := filepath.Join(t.TempDir(), "drafter")
	if _, err := dflash.GenerateSynthetic(tinyModel(t), lr, ddir, 3); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "bundle")
	ctxs := []int{1024, 2048}
	rep, err := Assemble(AssembleOptions{Model: tinyModel(t), Export: lr, Out: out, Contexts: ctxs, ChunkLayers: 2, StandIn: true, Drafter: ddir})
	if err != nil {
		t.Fatal(err)
	}
	vr, err := verify.Integrity(out, verify.Options{Selection: bundle.Selection{Runtime: bundle.ComponentCoreAI, IncludeExport: true}, Full: true})
	if err != nil || !vr.Passed() || !vr.Speculative || !rep.StandIn || !rep.Drafter {
		t.Fatalf("verify: %v %+v; report %+v", err, vr, rep)
	}
	for _, f := range []string{"README.md", "MODIFICATIONS.md"} {
		data, _ := os.ReadFile(filepath.Join(out, f))
		if !strings.Contains(string(data), "stand-in") || !strings.Contains(string(data), "nothing here runs on the ANE") && f == "README.md" {
			t.Errorf("%s does not say the packages are a Linux stand-in:\n%s", f, data)
		}
	}
	for _, p := range []string{"coreai/chunk_L02-03.aimodel/" + standin.WeightsFile, "coreai/head_T8.aimodel/" + standin.ProgramFile,
		"drafter/" + bundle.DrafterModel + "/" + standin.WeightsFile} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}

	emb, closeEmb := bundleEmbedding(t, out)
	defer closeEmb()
	e, err := coreai.Open(filepath.Join(out, "coreai"), coreai.Options{Bridge: lib, Embedding: emb, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m, err := ref.OpenBundle(out, ref.Options{Numerics: ane.Numerics{TanhSiLU: true, StableSoftplus: true}, KV: ane.KVV8, Ladder: ctxs, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok, err := tokenizer.Load(filepath.Join(out, "model", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	long := make([]int, 1019)
	for i := range long {
		long[i] = r.IntN(400)
	}
	for _, c := range []struct {
		name   string
		prompt []int
		n      int
	}{
		{"smoke prompt", tok.Encode("The capital of France is"), 16},
		{"short", tok.Encode("Hello, world. Tell me a story"), 12},
		{"across 1024", long, 12},
	} {
		s := m.NewSession()
		want := greedy(t, s.Feed, c.prompt, c.n)
		s.Close()
		e.Reset()
		got := greedy(t, e.Feed, c.prompt, c.n)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: coreai over the stand-in gives %v, ane/ref %v", c.name, got, want)
		}
		if c.name == "across 1024" && e.Context() != 2048 {
			t.Fatalf("%s: context %d at position %d", c.name, e.Context(), e.Position())
		}
		if c.name == "smoke prompt" {
			sm, err := smoke.Run(out, smoke.Options{Bridge: lib, Tokens: c.n})
			if err != nil {
				t.Fatal(err)
			}
			if sm.Drafter != smoke.DFlash2 || sm.DraftsProposed == 0 || !slices.Equal(sm.Tokens, want) {
				t.Fatalf("smoke: drafter %s, %d drafts, tokens %v; plain greedy %v", sm.Drafter, sm.DraftsProposed, sm.Tokens, want)
			}
			t.Logf("smoke: %d verify calls, %d/%d drafts accepted (random synthetic drafter)", sm.VerifyCalls, sm.DraftsAccepted, sm.DraftsProposed)
		}
	}
}

// TestAssembleDrafterPairing: without StandIn a drafter gets a placeholder
// package and the bundle still verifies as speculative; a drafter paired
// with another export is refused and nothing is left behind.
func TestAssembleDrafterPairing(t *testing.T) {
	ddir := filepath.Join(t.TempDir(), "drafter")
	if _, err := dflash.GenerateSynthetic(tinyModel(t), tinyExport(t), ddir, 3); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "bundle")
	rep, err := Assemble(AssembleOptions{Model: tinyModel(t), Export: tinyExport(t), Out: out, Drafter: ddir})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verify.Passed() || !rep.Verify.Speculative {
		t.Fatalf("verify %+v", rep.Verify)
	}
	if _, err := os.Stat(filepath.Join(out, "drafter", bundle.DrafterModel, PlaceholderFile)); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	if _, err := dflash.GenerateSynthetic(tinyModel(t), filepath.Join(t.TempDir(), "another-export"), other, 3); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(t.TempDir(), "bundle")
	_, err = Assemble(AssembleOptions{Model: tinyModel(t), Export: tinyExport(t), Out: out2, Drafter: other})
	if err == nil || !strings.Contains(err.Error(), "drafter.pair") || !strings.Contains(err.Error(), "another-export") {
		t.Fatalf("a drafter of another export: %v", err)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Fatalf("%s left behind", out2)
	}
}

// greedy decodes n tokens after prompt with feed (a session's Feed).
func greedy(t *testing.T, feed func([]int) ([]float32, error), prompt []int, n int) []int {
	t.Helper()
	lg, err := feed(prompt)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for len(out) < n {
		best := 0
		for i, x := range lg {
			if x > lg[best] {
				best = i
			}
		}
		out = append(out, best)
		if lg, err = feed([]int{best}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// bundleEmbedding maps the bundle's model/embed_tokens_fp16.npy, as
// smoke.Run does.
func bundleEmbedding(t *testing.T, dir string) (ref.Embedding, func()) {
	t.Helper()
	emb, err := tensor.OpenF16Table(filepath.Join(dir, "model", bundle.EmbeddingFile))
	if err != nil {
		t.Fatal(err)
	}
	return emb, func() { emb.Close() }
}
