package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/internal/synthbundle"
)

// BenchmarkFastVerify100Files: verify of an installed, unchanged bundle of
// ~100 files trusting the install record (target: at most 50 ms). It
// reports the median of the timed runs as "ms" next to the usual ns/op.
func BenchmarkFastVerify100Files(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "src")
	if _, err := synthbundle.Generate(dir, synthbundle.Options{Seed: 1, Layers: 20, ChunkLayers: 1, WeightFiles: 4, TotalBytes: 64 << 20}); err != nil {
		b.Fatal(err)
	}
	h := hubtest.New()
	defer h.Close()
	if _, err := h.Publish(repo, dir, "main"); err != nil {
		b.Fatal(err)
	}
	s, err := Open(filepath.Join(b.TempDir(), "data"))
	if err != nil {
		b.Fatal(err)
	}
	s.Client = hub.New(h.URL, "")
	res, err := s.Pull(context.Background(), repo, PullOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		rep, err := s.Verify(repo, false)
		times = append(times, time.Since(t0))
		if err != nil || !rep.Passed() || rep.HashedBytes != 0 {
			b.Fatalf("fast verify: %v", err)
		}
	}
	b.ReportMetric(float64(res.Files), "files")
	b.ReportMetric(float64(median(times).Microseconds())/1000, "median-ms")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
