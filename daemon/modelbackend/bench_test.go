package modelbackend_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane/speculative"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/modelbackend"
)

// BenchmarkServedSpeculation times greedy generations through
// Backend.Generate (the daemon's path, without the socket) on the tiny
// checkpoint: speculative false, then speculative true (auto mode) with
// drafters of controlled acceptance — a replay of the plain output right
// 90% of the time, one never right, and the real prompt lookup — the
// variants alternating within each iteration. It reports tokens/s and
// each variant's ratio to plain decoding, and fails if any output differs.
//
//	go test -run '^$' -bench ServedSpeculation -benchtime 5x ./daemon/modelbackend/
func BenchmarkServedSpeculation(b *testing.B) {
	be, err := modelbackend.Open(tinyDir(b), modelbackend.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	prompt := make([]int, 24)
	for i := range prompt {
		prompt[i] = 10 + (i*37)%200
	}
	const max = 256
	run := func(speculative bool) ([]int, time.Duration) {
		var ids []int
		start := time.Now()
		_, err := be.Generate(context.Background(), daemon.GenerateRequest{Prompt: prompt, MaxTokens: max, Speculative: speculative},
			func(step []int) error { ids = append(ids, step...); return nil })
		if err != nil {
			b.Fatal(err)
		}
		return ids, time.Since(start)
	}
	plain, _ := run(false)
	trace := append(slices.Clone(prompt), plain...)
	variants := []struct {
		name    string
		drafter func([]int) speculative.Drafter
	}{
		{"replay90", func([]int) speculative.Drafter { return &replayDrafter{trace: trace, wrongEvery: 10} }},
		{"never", func([]int) speculative.Drafter { return neverDrafter{id: 511} }},
		{"lookup", func(p []int) speculative.Drafter { return speculative.NewLookupDrafter(p) }},
	}
	times := make([]time.Duration, len(variants)+1)
	for b.Loop() {
		_, d := run(false)
		times[0] += d
		for i, v := range variants {
			modelbackend.SetRequestDrafter(be, v.drafter)
			ids, d := run(true)
			if !slices.Equal(ids, plain) {
				b.Fatalf("%s: speculative output differs from plain", v.name)
			}
			times[i+1] += d
		}
	}
	rate := func(d time.Duration) float64 { return float64(b.N*len(plain)) / d.Seconds() }
	b.ReportMetric(rate(times[0]), "off-tok/s")
	for i, v := range variants {
		b.ReportMetric(rate(times[i+1]), v.name+"-tok/s")
		b.ReportMetric(times[0].Seconds()/times[i+1].Seconds(), v.name+"/off")
	}
}
