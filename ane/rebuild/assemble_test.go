package rebuild

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/config"
	"github.com/forgedaemon/forged/ane/layout"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/ane/tensor"
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
	cfg, err := config.LoadModel(tinyModel(t))
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
	copyFile(filepath.Join(out, "model", bundle.EmbeddingFile), filepath.Join(side, ref.EmbeddingNPY))
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
