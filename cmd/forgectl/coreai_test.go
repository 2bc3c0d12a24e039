package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/cai"
)

func TestCoreAIChipJSON(t *testing.T) {
	t.Setenv("COREAI_ARCH", "h17")
	out, _, err := runCtl(t, "", "coreai", "chip", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got["chip"] != "H17" || got["soc"] != "m5" || got["compile_mode"] != 1.0 {
		t.Fatalf("chip report %v", got)
	}
	t.Setenv("COREAI_ARCH", "h16")
	if _, _, err := runCtl(t, "", "coreai", "chip"); err == nil || !strings.Contains(err.Error(), "older than M5") {
		t.Fatalf("M4: %v", err)
	}
}

func TestCoreAISmokeNeedsBridge(t *testing.T) {
	if _, _, err := runCtl(t, "", "coreai", "smoke"); err == nil || !strings.Contains(err.Error(), "--bundle is required") {
		t.Fatalf("no bundle: %v", err)
	}
	// Without --bridge the standard search path is used; here it holds
	// nothing, and the error lists where it looked.
	missing := filepath.Join(t.TempDir(), "nowhere", cai.BridgeName)
	t.Setenv(cai.BridgeEnv, missing)
	_, _, err := runCtl(t, "", "coreai", "smoke", "--bundle", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--bridge") {
		t.Fatalf("no bridge found: %v", err)
	}
	// A bridge found through $FORGE_BRIDGE gets the smoke test as far as
	// the bundle (an empty directory: no tokenizer).
	found := filepath.Join(t.TempDir(), cai.BridgeName)
	os.WriteFile(found, nil, 0o644)
	t.Setenv(cai.BridgeEnv, found)
	if _, _, err := runCtl(t, "", "coreai", "smoke", "--bundle", t.TempDir()); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Fatalf("bridge from %s, empty bundle: %v", cai.BridgeEnv, err)
	}
	_, _, err = runCtl(t, "", "coreai", "smoke", "--bundle", t.TempDir(), "--bridge", filepath.Join(t.TempDir(), "lib.dylib"))
	if err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Fatalf("empty bundle: %v", err)
	}
}
