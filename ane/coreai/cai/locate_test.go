package cai

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBridgeCandidatesOrder(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip("no executable path:", err)
	}
	besideBin := filepath.Join(filepath.Dir(exe), "..", "lib", "forged", BridgeName)
	fixed := []string{"/opt/homebrew/opt/forged/lib/forged/" + BridgeName, "/usr/local/lib/forged/" + BridgeName, "build/" + BridgeName}

	t.Setenv(BridgeEnv, "")
	if got, want := BridgeCandidates(), append([]string{besideBin}, fixed...); !slices.Equal(got, want) {
		t.Errorf("without %s:\n got %q\nwant %q", BridgeEnv, got, want)
	}
	t.Setenv(BridgeEnv, "/custom/lib.dylib")
	if got, want := BridgeCandidates(), append([]string{"/custom/lib.dylib", besideBin}, fixed...); !slices.Equal(got, want) {
		t.Errorf("with %s:\n got %q\nwant %q", BridgeEnv, got, want)
	}
}

func TestFindBridgeFromEnv(t *testing.T) {
	lib := filepath.Join(t.TempDir(), BridgeName)
	if err := os.WriteFile(lib, []byte("not really a dylib"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(BridgeEnv, lib)
	path, tried, err := FindBridge()
	if err != nil || path != lib || !slices.Equal(tried, []string{lib}) {
		t.Fatalf("FindBridge with %s set: %q %q %v", BridgeEnv, path, tried, err)
	}
}

func TestFindBridgeInSkipsMissingAndDirectories(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing", BridgeName)
	asDir := filepath.Join(dir, "dir", BridgeName)
	if err := os.MkdirAll(asDir, 0o755); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(dir, "lib", BridgeName)
	third := filepath.Join(dir, "other", BridgeName)
	for _, p := range []string{second, third} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path, tried, err := FindBridgeIn([]string{missing, asDir, second, third})
	if err != nil || path != second || !slices.Equal(tried, []string{missing, asDir, second}) {
		t.Fatalf("got %q, tried %q, %v; want %q after skipping the missing file and the directory", path, tried, err, second)
	}

	path, tried, err = FindBridgeIn([]string{missing, asDir})
	if !errors.Is(err, ErrBridgeNotFound) || path != "" || !slices.Equal(tried, []string{missing, asDir}) {
		t.Fatalf("nothing there: %q %q %v", path, tried, err)
	}
	for _, want := range []string{BridgeName + " not found", missing, asDir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
