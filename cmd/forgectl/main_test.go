package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the forgectl binary the subprocess tests build, so a
// test run leaves nothing behind in the temporary directory.
func TestMain(m *testing.M) {
	code := m.Run()
	if bundleCLIPath != "" {
		os.RemoveAll(filepath.Dir(bundleCLIPath))
	}
	os.Exit(code)
}
