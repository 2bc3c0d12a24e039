package ref

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/half"
	"github.com/forgedaemon/forged/ane/format/tensor"
)

// writeExport writes an in-memory export as safetensors files in dir.
func writeExport(t *testing.T, dir string, files memFiles) {
	t.Helper()
	for name, f := range files {
		var ts []tensor.Tensor
		for key, tt := range f.MapSource {
			ts = append(ts, tensor.Tensor{Name: key, DType: tensor.DType(tt.DType), Shape: tt.Shape, Data: tt.Data})
		}
		if err := tensor.WriteSafetensors(filepath.Join(dir, name), f.md, ts); err != nil {
			t.Fatal(err)
		}
	}
}

// An export on disk (and an FP16 .npy embedding beside it) runs exactly as
// the same export in memory with the checkpoint's BF16 embedding: every
// bf16 embedding value is exact in fp16.
func TestOpenExportFromDisk(t *testing.T) {
	dir := tinyCheckpoint(t)
	files := &DirFiles{Dir: dir}
	defer files.Close()
	src, err := openCheckpoint(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	m0, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := m0.Config()
	m0.Close()
	exp, err := quickExport(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	inMem, err := LoadExport(cfg, src, exp, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := NewModel(cfg, inMem, Options{Ladder: []int{64}})
	out := t.TempDir()
	writeExport(t, out, exp)
	emb, _ := src.Tensor(embedName)
	f16 := make([]byte, len(emb.Data))
	vals := make([]float32, len(emb.Data)/2)
	half.BF16ToF32(vals, half.View(emb.Data))
	for i, v := range vals {
		h := half.F16(v)
		f16[2*i], f16[2*i+1] = byte(h), byte(h>>8)
	}
	if err := tensor.WriteNPY(filepath.Join(out, tensor.EmbeddingNPY), "<f2", []int{cfg.Vocab, cfg.Hidden}, f16); err != nil {
		t.Fatal(err)
	}
	disk, err := OpenExport(dir, out, Options{Ladder: []int{64}})
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	if _, ok := disk.w.embed.(*tensor.F16Table); !ok {
		t.Fatalf("embedding is %T, want the FP16 .npy table", disk.w.embed)
	}
	ids := randIDs(rand.New(rand.NewPCG(40, 40)), 20, cfg.Vocab)
	a, b := mem.NewSession(), disk.NewSession()
	defer a.Close()
	defer b.Close()
	la, _ := a.Feed(ids)
	lb, err := b.Feed(ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := range la {
		if la[i] != lb[i] {
			t.Fatalf("logit %d: %v from disk, %v in memory", i, lb[i], la[i])
		}
	}
	if mem.WeightBytes() != disk.WeightBytes() || mem.WeightBytes() <= 0 {
		t.Fatalf("weight bytes %d (disk) vs %d (memory)", disk.WeightBytes(), mem.WeightBytes())
	}

	// A table of the wrong shape is refused by name.
	bad := t.TempDir()
	writeExport(t, bad, exp)
	tensor.WriteNPY(filepath.Join(bad, tensor.EmbeddingNPY), "<f2", []int{cfg.Vocab - 1, cfg.Hidden}, f16[:len(f16)-2*cfg.Hidden])
	if _, err := OpenExport(dir, bad, Options{}); err == nil || !strings.Contains(err.Error(), "want <f2 [512 64]") {
		t.Fatalf("misshapen embedding: %v", err)
	}
}

// The V8 history layout stays close to FP16 and its codes reconstruct the
// values within half a quantisation step.
func TestV8History(t *testing.T) {
	nm, m16 := newTiny(t, Options{})
	_, m8 := newTiny(t, Options{KV: "v8"})
	ids := randIDs(rand.New(rand.NewPCG(41, 41)), 30, nm.cfg.Vocab)
	a, b := openSession(t, m16), openSession(t, m8)
	la, _ := a.Feed(ids)
	lb, _ := b.Feed(ids)
	if e := relErr32(lb, la); e > 2e-2 || e == 0 {
		t.Fatalf("v8 logits differ from fp16 by %.3g (want small but non-zero)", e)
	}
	r := rand.New(rand.NewPCG(42, 42))
	v, _ := randRow(r, 16)
	v[3] = 0
	codes := make([]int8, 16)
	scale := half.F16Float(quantizeV8(codes, v))
	for i := range v {
		if d := float32(codes[i])*scale - v[i]; d > scale/2 || d < -scale/2 {
			t.Fatalf("value %d: %v reconstructed as %v (scale %v)", i, v[i], float32(codes[i])*scale, scale)
		}
	}
	zero := make([]float32, 16)
	if s := half.F16Float(quantizeV8(codes, zero)); s < 5e-7 || s > 2e-6 {
		t.Fatalf("all-zero row got scale %v, want the 1e-6 floor", s)
	}
	if _, err := NewModel(m16.cfg, m16.w, Options{KV: "int4"}); err == nil {
		t.Fatal("unknown KV format accepted")
	}
}
