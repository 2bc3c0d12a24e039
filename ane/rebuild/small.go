package rebuild

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/forgedaemon/forged/ane/format/layout"
	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/ane/ref"
)

// SmallReport describes a written export/small.safetensors.
type SmallReport struct {
	Path    string `json:"path"`
	Tensors int    `json:"tensors"`
	Bytes   int64  `json:"bytes"`
}

// IsSmallTensor reports whether a checkpoint tensor stays unquantized
// beside the export: everything except the embedding (its own .npy) and
// the projections the export stores. in_proj_a/b are projections the
// export leaves in BF16 (as the published export does), so they are small tensors too.
func IsSmallTensor(t layout.TensorSpec) bool {
	switch t.Kind {
	case layout.Embedding:
		return false
	case layout.Linear:
		return strings.HasSuffix(t.Name, ".linear_attn.in_proj_a.weight") || strings.HasSuffix(t.Name, ".linear_attn.in_proj_b.weight")
	}
	return true
}

// SmallTensors copies the small tensors of the BF16 checkpoint in model
// byte for byte (same names, dtype and shape) into exportDir/small.safetensors
// (written atomically), so the export runs without the checkpoint (ref.OpenBundle).
// For Qwen3.8-27B that is the 449 tensors the release-0.2 repository ships.
func SmallTensors(model, exportDir string) (*SmallReport, error) {
	cfg, err := ref.CheckCheckpoint(model)
	if err != nil {
		return nil, err
	}
	src, closer, err := ref.OpenCheckpointSource(model)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	var ts []tensor.Tensor
	for _, spec := range layout.CheckpointTensors(cfg) {
		if !IsSmallTensor(spec) {
			continue
		}
		t, ok := src.Tensor(spec.Name)
		if !ok || !slices.Equal(t.Shape, spec.Shape) {
			return nil, fmt.Errorf("checkpoint %s: tensor %q is missing or misshapen", model, spec.Name)
		}
		ts = append(ts, tensor.Tensor{Name: spec.Name, DType: tensor.DType(t.DType), Shape: spec.Shape, Data: t.Data})
	}
	if err := os.MkdirAll(exportDir, 0o755); err != nil {
		return nil, err
	}
	out := filepath.Join(exportDir, ref.SmallFile)
	md := map[string]string{"format": "pt", "content": "unquantized checkpoint tensors of the export (forged rebuild)"}
	if err := tensor.WriteSafetensors(out, md, ts); err != nil {
		return nil, err
	}
	st, err := os.Stat(out)
	if err != nil {
		return nil, err
	}
	return &SmallReport{Path: out, Tensors: len(ts), Bytes: st.Size()}, nil
}
