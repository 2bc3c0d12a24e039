package tensor

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sparseSafetensors writes a valid file of 64 BF16 tensors totalling
// dataSize bytes; the data is a hole, so creating a 1 GiB file is instant.
func sparseSafetensors(tb testing.TB, dir string, dataSize int64) string {
	const n = 64
	per := dataSize / n
	var h strings.Builder
	h.WriteString(`{"__metadata__":{"format":"pt"}`)
	for i := range n {
		fmt.Fprintf(&h, `,"model.layers.%d.weight":{"dtype":"BF16","shape":[%d],"data_offsets":[%d,%d]}`, i, per/2, int64(i)*per, int64(i+1)*per)
	}
	h.WriteString("}")
	path := filepath.Join(dir, fmt.Sprintf("sparse-%d.safetensors", dataSize))
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(h.Len()))
	f.Write(prefix[:])
	f.WriteString(h.String())
	if err := f.Truncate(8 + int64(h.Len()) + per*n); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkOpenSafetensors opens (and closes) a 1 MiB and a 1 GiB file with
// the same header in alternation and reports the large/small cost ratio,
// which must stay below 2: opening validates the header and maps the file,
// it never reads the data.
func BenchmarkOpenSafetensors(b *testing.B) {
	dir := b.TempDir()
	small := sparseSafetensors(b, dir, 1<<20)
	large := sparseSafetensors(b, dir, 1<<30)
	open := func(p string) time.Duration {
		t0 := time.Now()
		f, err := OpenSafetensors(p)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
		return time.Since(t0)
	}
	var tSmall, tLarge time.Duration
	for b.Loop() {
		tSmall += open(small)
		tLarge += open(large)
	}
	b.ReportMetric(float64(tSmall.Nanoseconds())/float64(b.N), "ns/open-1MiB")
	b.ReportMetric(float64(tLarge.Nanoseconds())/float64(b.N), "ns/open-1GiB")
	b.ReportMetric(float64(tLarge)/float64(tSmall), "ratio")
}
