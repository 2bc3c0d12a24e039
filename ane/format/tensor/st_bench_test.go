package tensor

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
// the same header, alternating which goes first, and reports the ratio of
// the median open costs (large/small), which must stay below 2: opening
// validates the header and maps the file but never reads the data. Medians
// keep the ratio meaningful on a loaded machine.
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
	var tSmall, tLarge []time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			tSmall = append(tSmall, open(small))
			tLarge = append(tLarge, open(large))
		} else {
			tLarge = append(tLarge, open(large))
			tSmall = append(tSmall, open(small))
		}
	}
	ms, ml := median(tSmall), median(tLarge)
	b.ReportMetric(float64(ms.Nanoseconds()), "median-ns/open-1MiB")
	b.ReportMetric(float64(ml.Nanoseconds()), "median-ns/open-1GiB")
	b.ReportMetric(float64(ml)/float64(ms), "ratio")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkParseHeader1000 measures header validation alone for a
// 1,000-tensor header (about 130 KB, a large real shard).
func BenchmarkParseHeader1000(b *testing.B) {
	var h strings.Builder
	h.WriteString(`{"__metadata__":{"format":"pt"}`)
	const size = 5120 * 17408 * 2
	for i := range 1000 {
		fmt.Fprintf(&h, `,"model.language_model.layers.%d.mlp.down_proj.weight":{"dtype":"BF16","shape":[5120,17408],"data_offsets":[%d,%d]}`, i, int64(i)*size, int64(i+1)*size)
	}
	h.WriteString("}")
	hdr := []byte(h.String())
	b.SetBytes(int64(len(hdr)))
	for b.Loop() {
		if _, err := parseHeader(hdr, 1000*size); err != nil {
			b.Fatal(err)
		}
	}
}
