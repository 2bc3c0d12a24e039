package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSetKey: config.set's edit of an arbitrary file with an arbitrary
// dotted key never panics; when it succeeds the result is a JSON object in
// which the key path holds the value, and every other top-level key of the
// original file is kept.
func FuzzSetKey(f *testing.F) {
	f.Add(`{"keep_alive": "10m"}`, "keep_alive", "5m")
	f.Add(`{"limits": {"slots": 1}}`, "limits.per_caller", "x")
	f.Add(`{"limits": 3}`, "limits.slots", "1")
	f.Add(``, "a.b.c", "")
	f.Add(`[1,2]`, "a", "b")
	f.Add(`{"a": {"b": null}}`, "a.b.c", "v")
	f.Add(`{"": 1}`, ".", "v")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, file, key, value string) {
		path := filepath.Join(dir, "config.json")
		if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := setKey(path, key, value)
		if err != nil {
			return
		}
		var doc map[string]any
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("setKey wrote something that is not a JSON object: %v\n%s", err, out)
		}
		parts := strings.Split(key, ".")
		m := doc
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				t.Fatalf("key %q: %q is not an object in the result %s", key, p, out)
			}
			m = next
		}
		if got, ok := m[parts[len(parts)-1]].(string); !ok || got != value {
			t.Fatalf("key %q holds %v, want %q", key, m[parts[len(parts)-1]], value)
		}
		var orig map[string]any
		if json.Unmarshal([]byte(file), &orig) == nil {
			for k := range orig {
				if _, kept := doc[k]; !kept {
					t.Fatalf("top-level key %q of the file was lost", k)
				}
			}
		}
	})
}
