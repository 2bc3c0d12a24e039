package ref

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseIndex: any model.safetensors.index.json either parses into shard
// names that stay inside the checkpoint directory, or is an error.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata": {"total_size": 10}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map": {"a": "../x.safetensors"}}`))
	f.Add([]byte(`{"weight_map": {}}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseIndex(data)
		if err != nil {
			return
		}
		for name, shard := range m {
			if filepath.Base(shard) != shard || !strings.HasSuffix(shard, ".safetensors") || strings.HasPrefix(shard, ".") {
				t.Fatalf("tensor %q maps to unsafe shard %q", name, shard)
			}
		}
	})
}

// FuzzExportBasis: export metadata (untrusted strings) either yields
// rotations of the requested sizes or an error naming the file — never a
// panic or an absurd allocation.
func FuzzExportBasis(f *testing.F) {
	f.Add("online", "1024", "1003", "2003")
	f.Add("online", "32", "7", "8")
	f.Add("plain", "", "", "")
	f.Add("online", "48", "1", "2")
	f.Add("online", "99999999999", "1", "2")
	f.Add("rotated", "32", "-1", "x")
	f.Fuzz(func(t *testing.T, basisName, block, seedIn, seedOut string) {
		md := map[string]string{"basis": basisName, "block": block, "seed_in": seedIn, "seed_mid": seedOut}
		in, second, err := basis("layer_00.safetensors", md, 64, 192, "seed_mid")
		if err != nil {
			if !strings.Contains(err.Error(), "layer_00.safetensors") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if (in == nil) != (second == nil) {
			t.Fatal("one rotation without the other")
		}
		if in != nil && (in.N() != 64 || second.N() != 192) {
			t.Fatalf("rotation sizes %d, %d", in.N(), second.N())
		}
	})
}
