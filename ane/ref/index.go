package ref

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// parseIndex reads model.safetensors.index.json's weight_map (tensor name →
// shard file), rejecting shard names that leave the checkpoint directory.
func parseIndex(data []byte) (map[string]string, error) {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("invalid index JSON: %w", err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("weight_map is missing or empty")
	}
	for name, shard := range idx.WeightMap {
		if shard == "" || filepath.Base(shard) != shard || strings.HasPrefix(shard, ".") || !strings.HasSuffix(shard, ".safetensors") {
			return nil, fmt.Errorf("weight_map: tensor %q maps to %q, not a .safetensors file in the checkpoint directory", name, shard)
		}
	}
	return idx.WeightMap, nil
}
