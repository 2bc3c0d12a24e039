package coreai

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
)

func TestOpenErrors(t *testing.T) {
	bridge := testBridge(t)
	_, cfg, _ := tiny(t)
	emb := standintest.TinyEmbedding(t)
	rt := writeRuntime(t, bundleSpec{})
	_, err := Open(rt, Options{Bridge: bridge})
	wantErr(t, err, "Embedding is required")
	_, err = Open(rt, Options{Bridge: bridge, Embedding: emb, KV: ane.KVV8})
	wantErr(t, err, "KV cache is fp16", "v8")
	_, err = Open(rt, Options{Bridge: bridge, Embedding: emb, Ladder: []int{4096}})
	wantErr(t, err, "requested contexts [4096]")
	_, err = Open(rt, Options{Bridge: bridge, Embedding: emb, Chip: 16})
	wantErr(t, err, "older than M5")
	_, err = Open(t.TempDir(), Options{Bridge: bridge, Embedding: emb})
	wantErr(t, err, "manifest.json")

	// A package missing an entry the manifest lists fails the load cleanly.
	broken := writeRuntime(t, bundleSpec{})
	fp := filepath.Join(broken, "chunk_L02-03.aimodel", "functions.txt")
	data, _ := os.ReadFile(fp)
	os.WriteFile(fp, []byte(strings.Replace(string(data), "function v8_2k", "function v8_2k_renamed", 1)), 0o644)
	before := live()
	_, err = Open(broken, Options{Bridge: bridge, Embedding: emb, CacheDir: t.TempDir()})
	wantErr(t, err, "no function v8_2k")
	if live() != before {
		t.Fatalf("failed Open leaked bridge objects: %v → %v", before, live())
	}
	// Description and manifest disagree on a shape: the binding says which.
	bad := writeRuntime(t, bundleSpec{})
	d := cfg.LinearKeyHeadDim
	rec0 := fmt.Sprintf("input rec0 f16 3 %d %d %d", cfg.LinearNumValueHeads, d, d)
	fp = filepath.Join(bad, "chunk_L00-01.aimodel", "functions.txt")
	data, _ = os.ReadFile(fp)
	os.WriteFile(fp, []byte(strings.ReplaceAll(string(data), rec0, rec0[:len(rec0)-2]+"8")), 0o644)
	e, err := Open(bad, Options{Bridge: bridge, Embedding: emb, CacheDir: t.TempDir()})
	if err == nil {
		_, err = e.Feed([]int{1, 2, 3})
		e.Close()
	}
	wantErr(t, err, "rec0")
}

func TestEngineMisuse(t *testing.T) {
	e, _ := openPair(t, bundleSpec{})
	_, err := e.Feed(nil)
	wantErr(t, err, "no token ids")
	_, err = e.Feed([]int{1, 1 << 20})
	wantErr(t, err, "token id 1048576 at index 1")
	wantErr(t, e.Accept(1), "no Verify to accept")
	_, err = e.Verify(make([]int, 9))
	wantErr(t, err, "9 tokens, at most 8")
	if _, err := e.Verify([]int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Feed([]int{1})
	wantErr(t, err, "awaits Accept")
	wantErr(t, e.Resize(2048), "awaits Accept")
	_, err = e.Snapshot()
	wantErr(t, err, "awaits Accept")
	wantErr(t, e.Accept(4), "4 rows, the Verify had 3")
	if err := e.Accept(3); err != nil {
		t.Fatal(err)
	}
	_, err = e.Features(9)
	wantErr(t, err, "9 rows requested, the last call had 3")
	wantErr(t, e.Resize(3000), "not a context ladder entry")
	wantErr(t, e.Fit(5000), "5000 positions exceed")
	if err := e.Resize(2048); err != nil || e.Context() != 2048 {
		t.Fatalf("resize up: %v, context %d", err, e.Context())
	}
	if err := e.Resize(1024); err != nil || e.Context() != 1024 {
		t.Fatalf("resize down: %v, context %d", err, e.Context())
	}
	snap, _ := e.Snapshot()
	if _, err := e.Feed([]int{4, 5}); err != nil {
		t.Fatal(err)
	}
	later, _ := e.Snapshot()
	if err := e.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Feed([]int{6}); err != nil { // rewrites position 3 after the later snapshot
		t.Fatal(err)
	}
	wantErr(t, e.Restore(later), "rewritten after the snapshot")
	e.Reset()
	if e.Position() != 0 || e.Context() != 1024 {
		t.Fatalf("after Reset: position %d context %d", e.Position(), e.Context())
	}
	wantErr(t, e.Restore(snap), "only 0 history rows are held")
	other, _ := openPair(t, bundleSpec{})
	wantErr(t, other.Restore(snap), "not from this engine")
}

// Memory adds up package sizes and buffer sizes; Close returns every
// bridge object.
func TestMemoryAndClose(t *testing.T) {
	bridge := testBridge(t)
	_, cfg, _ := tiny(t)
	emb := standintest.TinyEmbedding(t)
	rt := writeRuntime(t, bundleSpec{KV: ane.KVV8, AliasKV: true})
	before := live()
	e, err := Open(rt, Options{Bridge: bridge, Embedding: emb, KV: ane.KVV8, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m := e.Memory()
	// One attention layer: K fp16 + V int8 + fp16 scales over 1024 rows, plus the fp16 mask.
	wantKV := int64(cfg.NumKeyValueHeads*1024*cfg.HeadDim*(2+1) + cfg.NumKeyValueHeads*1024*2 + 1024*2)
	if m.KV != wantKV {
		t.Fatalf("KV %d bytes, want %d", m.KV, wantKV)
	}
	d := cfg.LinearValueHeadDim
	perLayer := int64((8+3)*(2*cfg.LinearNumKeyHeads*cfg.LinearKeyHeadDim+cfg.LinearNumValueHeads*d) +
		cfg.LinearNumValueHeads*d*d + cfg.LinearNumValueHeads*25*d)
	if want := 2 * 3 * perLayer * 2; m.Recurrent != want { // 3 DeltaNet layers, 2 sets, fp16
		t.Fatalf("recurrent %d bytes, want %d", m.Recurrent, want)
	}
	if m.Weights <= 0 || m.Scratch <= 0 || m.Embedding != emb.Bytes() {
		t.Fatalf("memory %+v", m)
	}
	if _, err := e.Feed([]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); err != nil {
		t.Fatal(err)
	}
	if err := e.Resize(2048); err != nil {
		t.Fatal(err)
	}
	if e.Memory().KV != 2*wantKV {
		t.Fatalf("KV after resize %d, want %d", e.Memory().KV, 2*wantKV)
	}
	e.Close()
	if live() != before {
		t.Fatalf("Close left bridge objects: %v → %v", before, live())
	}
}
