package rebuild

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/rebuild/export"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/synthbundle"
)

var (
	exportOnce sync.Once
	exportDir  string
	exportErr  error
)

// tinyExport quantizes the tiny model once (mixed plan, GPTQ).
func tinyExport(t *testing.T) string {
	t.Helper()
	exportOnce.Do(func() {
		exportDir, exportErr = os.MkdirTemp("", "rebuild-export-")
		if exportErr == nil {
			_, exportErr = Quantize(context.Background(), tinyOptions(t, exportDir))
		}
	})
	if exportErr != nil {
		t.Fatal(exportErr)
	}
	return exportDir
}

func frobDiff(a, b []float32) float64 {
	var s float64
	for i := range a {
		d := float64(a[i] - b[i])
		s += d * d
	}
	return math.Sqrt(s)
}

// TestLowRankReducesError: rank-r factors shrink ‖W − Ŵ‖ for every
// selected mixer matrix, leave the rest of the export byte-identical, are
// reproducible from the seed, and the reference engine runs the result.
func TestLowRankReducesError(t *testing.T) {
	src := tinyExport(t)
	a, b := t.TempDir(), t.TempDir()
	o := LowRankOptions{Model: tinyModel(t), Export: src, Out: a, Rank: 4, Seed: 11}
	rep, err := LowRank(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Matrices) != 3*3+4 {
		t.Errorf("%d matrices factored, want 13: %v", len(rep.Matrices), rep.Matrices)
	}
	o.Out = b
	if _, err := LowRank(o); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{export.MixerFile(0), export.MixerFile(3), export.MLPFile(1), export.HeadFile} {
		x, _ := os.ReadFile(filepath.Join(a, name))
		y, _ := os.ReadFile(filepath.Join(b, name))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs with seed 11", name)
		}
	}
	orig, _ := os.ReadFile(filepath.Join(src, export.MLPFile(2)))
	cp, _ := os.ReadFile(filepath.Join(a, export.MLPFile(2)))
	if !bytes.Equal(orig, cp) {
		t.Error("an MLP file changed")
	}
	for _, li := range []int{0, 3} {
		before, _ := tensor.OpenSafetensors(filepath.Join(src, export.MixerFile(li)))
		after, _ := tensor.OpenSafetensors(filepath.Join(a, export.MixerFile(li)))
		lm, err := ref.OpenLayer(tinyModel(t), li, 1, 1, anyNumerics())
		if err != nil {
			t.Fatal(err)
		}
		md := after.Metadata()
		if md["lr_rank"] != "4" || md["lr_seed"] != "11" {
			t.Errorf("layer %d metadata %v", li, md)
		}
		for _, key := range lowRankParts[map[bool]string{true: "attn", false: "gdn"}[lm.FullAttention()]] {
			format := md["format"]
			if strings.HasSuffix(key, "k_proj") || strings.HasSuffix(key, "v_proj") {
				format = md["kv_format"]
			}
			m0, err := export.ReadMatrix(before, key, format)
			if err != nil {
				t.Fatal(err)
			}
			m1, err := export.ReadMatrix(after, key, format)
			if err != nil {
				t.Fatal(err)
			}
			w, _, _, _ := lm.Weight(key)
			d0, _ := Dense(m0)
			d1, _ := Dense(m1)
			if e0, e1 := frobDiff(w, d0), frobDiff(w, d1); !(e1 < e0) || m1.Rank != 4 {
				t.Errorf("layer %d %s: error %.4g without factors, %.4g with rank %d", li, key, e0, e1, m1.Rank)
			}
		}
		lm.Close()
		before.Close()
		after.Close()
	}
	m, err := ref.OpenExport(tinyModel(t), a, ref.Options{Threads: 1})
	if err != nil {
		t.Fatalf("reference engine on the low-rank export: %v", err)
	}
	m.Close()
	bad := o
	bad.Rank, bad.Out = 100, t.TempDir()
	if _, err := LowRank(bad); err == nil || !strings.Contains(err.Error(), "rank 100") {
		t.Errorf("rank larger than a matrix: %v", err)
	}
	if entries, _ := os.ReadDir(bad.Out); len(entries) != 0 {
		t.Errorf("%d files written before the rank error", len(entries))
	}
	bad.Rank, bad.Parts = 4, []string{"mlp"}
	if _, err := LowRank(bad); err == nil || !strings.Contains(err.Error(), `"mlp"`) {
		t.Errorf("unknown part: %v", err)
	}
}

// TestEmbeddingsMatchWriteNPY: the streamed table is byte-identical to
// ane/format/tensor's .npy writer given the FP16 cast of the checkpoint rows.
func TestEmbeddingsMatchWriteNPY(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "embed_tokens_fp16.npy")
	rep, err := Embeddings(tinyModel(t), out)
	if err != nil {
		t.Fatal(err)
	}
	in, err := ref.OpenInputs(tinyModel(t))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	V, H := rep.Rows, rep.Cols
	ids := make([]int, V)
	for i := range ids {
		ids[i] = i
	}
	x := make([]float32, V*H)
	in.Embed(ids, x)
	data := make([]byte, 2*V*H)
	for i, v := range x {
		binary.LittleEndian.PutUint16(data[2*i:], half.F16(v))
	}
	want := filepath.Join(dir, "want.npy")
	if err := tensor.WriteNPY(want, "<f2", []int{V, H}, data); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	exp, _ := os.ReadFile(want)
	if V != 512 || H != 64 || !bytes.Equal(got, exp) {
		t.Errorf("embedding (%d×%d) differs from tensor.WriteNPY's bytes", V, H)
	}
}

// TestReleaseManifestPassesVerifier: for a synthetic bundle with drafter
// and export, release-manifest writes an inventory the bundle verifier
// passes and that matches the generator's; a file the model component may
// not hold is refused and no release.json is left behind.
func TestReleaseManifestPassesVerifier(t *testing.T) {
	dir := t.TempDir()
	gen, err := synthbundle.Generate(dir, synthbundle.Options{Export: true})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := gen.Marshal()
	os.Remove(filepath.Join(dir, bundle.ReleaseFile))
	r, rep, err := ReleaseManifest(ManifestOptions{Bundle: dir, ModelID: gen.UpstreamModel.ID, ModelRevision: gen.UpstreamModel.Revision})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() || rep.VerifiedFiles != len(r.Files) {
		t.Errorf("verifier: %+v", rep)
	}
	got, _ := os.ReadFile(filepath.Join(dir, bundle.ReleaseFile))
	if !bytes.Equal(got, want) {
		t.Errorf("release.json differs from the generator's:\n%s\nwant\n%s", got, want)
	}
	os.Remove(filepath.Join(dir, bundle.ReleaseFile))
	os.WriteFile(filepath.Join(dir, "model", "weights.bin"), []byte("x"), 0o644)
	if _, _, err := ReleaseManifest(ManifestOptions{Bundle: dir, ModelID: "Qwen/Qwen3.8-27B", ModelRevision: gen.UpstreamModel.Revision}); err == nil ||
		!strings.Contains(err.Error(), "weights.bin") {
		t.Errorf("a stray model file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, bundle.ReleaseFile)); err == nil {
		t.Error("release.json left behind after a failure")
	}
	os.Remove(filepath.Join(dir, "model", "weights.bin"))
	if _, _, err := ReleaseManifest(ManifestOptions{Bundle: dir, ModelID: "Qwen/Qwen3.8-27B", ModelRevision: "main"}); err == nil ||
		!strings.Contains(err.Error(), "revision") {
		t.Errorf("a branch name as revision: %v", err)
	}
}
