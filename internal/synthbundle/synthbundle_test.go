package synthbundle_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/synthbundle"
	"github.com/forgedaemon/forged/verify"
)

func TestGenerateIsDeterministicAndSized(t *testing.T) {
	opts := synthbundle.Options{Seed: 42, Layers: 12, ChunkLayers: 4, WeightFiles: 3, TotalBytes: 9 << 20}
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	relA, err := synthbundle.Generate(a, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := synthbundle.Generate(b, opts); err != nil {
		t.Fatal(err)
	}
	ja, _ := os.ReadFile(filepath.Join(a, "release.json"))
	jb, _ := os.ReadFile(filepath.Join(b, "release.json"))
	if !bytes.Equal(ja, jb) {
		t.Fatal("same seed, different bundles")
	}
	var weights int
	var weightBytes int64
	for _, f := range relA.Files {
		if filepath.Ext(f.Path) == ".bin" && f.Component == "coreai" && filepath.Base(filepath.Dir(filepath.Dir(f.Path))) != "head_T8.aimodel" {
			weights++
			weightBytes += f.Bytes
		}
	}
	if weights != 3*3 || weightBytes != 9<<20 {
		t.Fatalf("%d weight files, %d bytes; want 9 files, %d bytes", weights, weightBytes, 9<<20)
	}
	// A different seed changes the content.
	c := filepath.Join(t.TempDir(), "c")
	opts.Seed = 43
	relC, _ := synthbundle.Generate(c, opts)
	if f, _ := relC.File("coreai/chunk_L00-03.aimodel/weights/weight-00.bin"); f.SHA256 == relA.Files[0].SHA256 {
		t.Fatal("seed does not change the content")
	}
	rep, err := verify.Integrity(a, verify.Options{Full: true})
	if err != nil || !rep.Passed() {
		t.Fatalf("generated bundle fails integrity: %v", rep.Err())
	}
}

func TestGenerateWithoutDrafter(t *testing.T) {
	dir := t.TempDir()
	rel, err := synthbundle.Generate(dir, synthbundle.Options{Seed: 1, NoDrafter: true})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Drafter != nil {
		t.Fatal("drafter block present")
	}
	rep, err := verify.Integrity(dir, verify.Options{Full: true})
	if err != nil || !rep.Passed() || rep.Speculative {
		t.Fatalf("plain bundle: %+v", rep)
	}
	if _, err := bundle.LoadRelease(dir); err != nil {
		t.Fatal(err)
	}
}

func TestGenerateRejectsBadShapes(t *testing.T) {
	for _, o := range []synthbundle.Options{{Layers: 10, ChunkLayers: 4}, {Layers: 4, ChunkLayers: 4}, {Hidden: 40}} {
		if _, err := synthbundle.Generate(t.TempDir(), o); err == nil {
			t.Fatalf("options %+v accepted", o)
		}
	}
}

func TestTaps(t *testing.T) {
	got := synthbundle.Taps(64)
	want := []int{6, 19, 32, 44, 57}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Taps(64) = %v, want %v", got, want)
		}
	}
}
