package rebuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/forgedaemon/forged/ane/rebuild/blas"
)

// goldenTinyExport is the SHA-256 of the tiny mixed-plan GPTQ export
// (tinyOptions) on the pure-Go BLAS, over each file's name and bytes in
// name order. It was computed from the code before the quantizer was made
// faster, and pins that speed-ups do not change a single byte. The pure-Go
// BLAS is used because its results do not depend on the CPU model (the
// native library picks kernels per CPU); on arm64 the Go compiler fuses
// multiply-adds, so the pin holds for amd64 only. It covers the whole
// pipeline, the calibration forward pass (ane/ref, ane/kernels) included: a
// deliberate change to the forward's arithmetic changes it too, and the
// new value must then be pinned in the same commit, saying why.
const goldenTinyExport = "44254595120b29ff9bfc49b06667260d920f1cf193c5ae290a19815edb6f1007"

func exportDigest(t *testing.T, dir string) string {
	t.Helper()
	files := readExport(t, dir)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(files[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestTinyExportGolden: the tiny export's bytes are the pinned ones.
func TestTinyExportGolden(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the pin is for amd64 (arm64 fuses multiply-adds)")
	}
	prev := blas.SetDefault(blas.Go())
	defer blas.SetDefault(prev)
	out := filepath.Join(t.TempDir(), "e")
	if _, err := Quantize(context.Background(), tinyOptions(t, out)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	if got := exportDigest(t, out); got != goldenTinyExport {
		t.Fatalf("tiny export digest %s, pinned %s: the quantizer's output changed", got, goldenTinyExport)
	}
}
