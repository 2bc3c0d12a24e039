package refchunk

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/internal/synth"
)

// LoadSafetensors of a checkpoint's files gives LoadCheckpoint's weights;
// FromTensors serves the tensors it is given, and a missing or short one
// is an error naming it.
func TestWeightsFromFilesAndTensors(t *testing.T) {
	dir := t.TempDir()
	if err := synth.Generate(dir, synth.Options{Preset: "tiny", Seed: 7}); err != nil {
		t.Fatal(err)
	}
	ckpt, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the checkpoint's files %v: %v", files, err)
	}
	file, err := LoadSafetensors(ckpt.Cfg, files...)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(file.tensors, ckpt.tensors, slices.Equal) || len(file.tensors) == 0 {
		t.Fatalf("LoadSafetensors read %d tensors, LoadCheckpoint %d, or their values differ", len(file.tensors), len(ckpt.tensors))
	}
	if _, err := LoadSafetensors(ckpt.Cfg, filepath.Join(dir, "none.safetensors")); err == nil || !strings.Contains(err.Error(), "none.safetensors") {
		t.Fatalf("a missing file: %v", err)
	}
	cfg := &hfconfig.Model{VocabSize: 3, HiddenSize: 2}
	w := FromTensors(cfg, map[string][]float32{prefix + "embed_tokens.weight": {0, 1, 2, 3, 4, 5}})
	if row, err := w.Embedding(2); err != nil || !slices.Equal(row, []float32{4, 5}) {
		t.Fatalf("Embedding(2) = %v, %v", row, err)
	}
	if _, err := NewHead(w, 8); err == nil || !strings.Contains(err.Error(), "no tensor "+prefix+"norm.weight") {
		t.Fatalf("a head without its norm: %v", err)
	}
	short := FromTensors(cfg, map[string][]float32{prefix + "embed_tokens.weight": {0, 1, 2}})
	if _, err := short.Embedding(0); err == nil || !strings.Contains(err.Error(), "has 3 elements, want 6") {
		t.Fatalf("a short embedding: %v", err)
	}
}
