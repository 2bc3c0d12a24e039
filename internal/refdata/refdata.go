// Package refdata locates the repository's testdata folder: the reference
// data (the Qwen3 tokenizer and chat template, reference encodings and
// renders, NumPy's generator output, the JSON-Schema benchmark slice) that
// tests and benchmarks compare against. testdata/README.md says what each
// file is and where it came from.
//
// It is for tests: the folder is found by walking up from the working
// directory (a package's directory under go test) to the module root.
package refdata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// modulePath is this repository's module, so a go.mod of another module
// (a test's temporary directory, a nested tool) is not taken for its root.
const modulePath = "github.com/forgedaemon/forged"

// Dir returns the absolute path of the repository's testdata folder.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if isRoot(dir) {
			td := filepath.Join(dir, "testdata")
			if _, err := os.Stat(filepath.Join(td, "README.md")); err != nil {
				return "", fmt.Errorf("refdata: repository root %s has no testdata/README.md: %w", dir, err)
			}
			return td, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("refdata: no " + modulePath + " module root above " + wd)
		}
		dir = parent
	}
}

func isRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == modulePath
		}
	}
	return false
}

// Path returns testdata/parts… and fails the test if it does not exist.
func Path(t testing.TB, parts ...string) string {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(append([]string{dir}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("reference data missing from the repository's testdata (see testdata/README.md): %v", err)
	}
	return p
}
