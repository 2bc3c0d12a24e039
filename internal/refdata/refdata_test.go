package refdata

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDirFindsTheRepositoryTestdata(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(dir) || filepath.Base(dir) != "testdata" {
		t.Fatalf("Dir() = %q", dir)
	}
	if !isRoot(filepath.Dir(dir)) {
		t.Fatalf("%s is not the module root", filepath.Dir(dir))
	}
	if p := Path(t, "qwen3", "tokenizer.json"); filepath.Dir(filepath.Dir(p)) != dir {
		t.Fatalf("Path = %q", p)
	}
}

// Only this module's go.mod marks the root: not another module's (a
// nested tool, a test's scratch module), not a missing one.
func TestIsRoot(t *testing.T) {
	for _, c := range []struct {
		gomod string
		want  bool
	}{
		{"module github.com/forgedaemon/forged\n\ngo 1.26.0\n", true},
		{"// comment\nmodule \"github.com/forgedaemon/forged\"\n", true},
		{"module github.com/forgedaemon/forged/tools\n", false},
		{"module example.com/other\n", false},
		{"", false},
	} {
		dir := t.TempDir()
		if c.gomod != "" {
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(c.gomod), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := isRoot(dir); got != c.want {
			t.Errorf("isRoot(go.mod %q) = %v, want %v", c.gomod, got, c.want)
		}
	}
}
