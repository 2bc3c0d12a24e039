package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestCoreAIChipJSON(t *testing.T) {
	t.Setenv("COREAI_ARCH", "h17")
	out, err := runForgectlCapture(t, "coreai", "chip", "--json")
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
	if _, err := runForgectlCapture(t, "coreai", "chip"); err == nil || !strings.Contains(err.Error(), "older than M5") {
		t.Fatalf("M4: %v", err)
	}
}

func TestCoreAISmokeNeedsBridge(t *testing.T) {
	_, err := runForgectlCapture(t, "coreai", "smoke", "--bundle", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "--bundle and --bridge are required") {
		t.Fatalf("no bridge: %v", err)
	}
	_, err = runForgectlCapture(t, "coreai", "smoke", "--bundle", t.TempDir(), "--bridge", filepath.Join(t.TempDir(), "lib.dylib"))
	if err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Fatalf("empty bundle: %v", err)
	}
}
