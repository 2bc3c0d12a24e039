package ref

import (
	"os"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/internal/synth"
)

// Benchmarks run on synthetic checkpoints generated in a temporary
// directory (internal/synth) and an export made by QuickExport (round-to-nearest
// with fixed codebooks; see quickexport.go). Run with e.g.
//
//	go test -run '^$' -bench . -benchtime 20x ./ane/ref
//
// Each reports tokens/s and, for decode, the weight bytes read per token,
// the machine's copy bandwidth measured in the same run and their ratio.

type benchModel struct {
	dir    string
	cfg    Config
	w      *Weights
	files  *DirFiles
	export *Weights
}

var (
	benchMu     sync.Mutex
	benchModels = map[string]*benchModel{}
	benchDirs   []string
)

func loadBench(b *testing.B, preset string) *benchModel {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if bm, ok := benchModels[preset]; ok {
		return bm
	}
	dir, err := os.MkdirTemp("", "ref-bench-"+preset+"-")
	if err != nil {
		b.Fatal(err)
	}
	benchDirs = append(benchDirs, dir)
	if err := synth.Generate(dir, synth.Options{Preset: preset, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	m, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	bm := &benchModel{dir: dir, cfg: m.Config(), w: m.w}
	bm.files = &DirFiles{Dir: dir}
	src, err := openCheckpoint(dir, bm.files)
	if err != nil {
		b.Fatal(err)
	}
	if bm.export, err = QuickExport(bm.cfg, src); err != nil {
		b.Fatal(err)
	}
	benchModels[preset] = bm
	return bm
}

func (bm *benchModel) model(b *testing.B, export bool, threads int) *Model {
	w := bm.w
	if export {
		w = bm.export
	}
	m, err := NewModel(bm.cfg, w, Options{Threads: threads, Ladder: []int{4096}})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// copyBandwidth is the machine's memory bandwidth by a copy loop over
// 256 MiB with two goroutines, STREAM convention (bytes read + written per
// second), best of four.
func copyBandwidth() float64 {
	const n = 256 << 20
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	best := 0.0
	for rep := 0; rep < 4; rep++ {
		start := time.Now()
		var wg sync.WaitGroup
		for p := 0; p < 2; p++ {
			wg.Add(1)
			go func(lo, hi int) { defer wg.Done(); copy(dst[lo:hi], src[lo:hi]) }(p*n/2, (p+1)*n/2)
		}
		wg.Wait()
		best = max(best, 2*n/time.Since(start).Seconds())
	}
	return best
}

// cpuSeconds is the process's user + system CPU time: under a loaded
// machine it shows the work done, where wall time also shows the waiting.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// decodeSteps runs n decode steps, restarting the session when the context
// fills, and returns the time spent in the steps.
func decodeSteps(b *testing.B, s *Session, n int) time.Duration {
	var spent time.Duration
	tok := 1
	for i := 0; i < n; i++ {
		if s.Position() >= s.Context()-1 {
			s.Reset()
		}
		start := time.Now()
		if _, err := s.Feed([]int{tok}); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(start)
		tok = (tok*31 + 7) % s.m.cfg.Vocab
	}
	return spent
}

func benchDecode(b *testing.B, preset string, export bool) {
	bm := loadBench(b, preset)
	m := bm.model(b, export, 0)
	s := m.NewSession()
	defer s.Close()
	s.Feed([]int{1, 2, 3, 4, 5, 6, 7, 8})
	decodeSteps(b, s, 2) // warm up scratch
	bw := copyBandwidth()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuSeconds()
	spent := decodeSteps(b, s, b.N)
	cpu := cpuSeconds() - cpu0
	b.StopTimer()
	perTok := spent.Seconds() / float64(b.N)
	wb := float64(m.WeightBytes())
	b.ReportMetric(1/perTok, "tok/s")
	b.ReportMetric(wb/1e6, "MB/token")
	b.ReportMetric(bw/1e9, "copyGB/s")
	b.ReportMetric(wb/perTok/bw, "bw_ratio")
	b.ReportMetric(1e3*cpu/float64(b.N), "cpu_ms/token")
}

func BenchmarkDecodeExport(b *testing.B) {
	for _, p := range []string{"small", "medium"} {
		b.Run(p, func(b *testing.B) { benchDecode(b, p, true) })
	}
}

func BenchmarkDecodeBF16(b *testing.B) {
	b.Run("small", func(b *testing.B) { benchDecode(b, "small", false) })
}

func BenchmarkPrefillExport(b *testing.B) {
	for _, p := range []string{"small", "medium"} {
		b.Run(p, func(b *testing.B) {
			bm := loadBench(b, p)
			m := bm.model(b, true, 0)
			s := m.NewSession()
			defer s.Close()
			ids := make([]int, 64)
			for i := range ids {
				ids[i] = (i*37 + 11) % bm.cfg.Vocab
			}
			s.Feed(ids)
			var spent time.Duration
			b.ResetTimer()
			cpu0 := cpuSeconds()
			for i := 0; i < b.N; i++ {
				s.Reset()
				start := time.Now()
				if _, err := s.Feed(ids); err != nil {
					b.Fatal(err)
				}
				spent += time.Since(start)
			}
			b.ReportMetric(float64(64*b.N)/spent.Seconds(), "tok/s")
			b.ReportMetric(1e3*(cpuSeconds()-cpu0)/float64(64*b.N), "cpu_ms/token")
		})
	}
}

// BenchmarkDecodeThreads measures 2-worker vs 1-worker decode on the same
// weights, interleaved so load changes hit both; it reports the median
// per-round speedup.
func BenchmarkDecodeThreads(b *testing.B) {
	for _, p := range []string{"small", "medium"} {
		b.Run(p, func(b *testing.B) {
			bm := loadBench(b, p)
			s1, s2 := bm.model(b, true, 1).NewSession(), bm.model(b, true, 2).NewSession()
			defer s1.Close()
			defer s2.Close()
			for _, s := range []*Session{s1, s2} {
				s.Feed([]int{1, 2, 3, 4})
				decodeSteps(b, s, 2)
			}
			var ratios []float64
			var t1, t2 time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				a := decodeSteps(b, s1, 4)
				c := decodeSteps(b, s2, 4)
				t1, t2 = t1+a, t2+c
				ratios = append(ratios, a.Seconds()/c.Seconds())
			}
			sort.Float64s(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "speedup")
			b.ReportMetric(float64(4*b.N)/t1.Seconds(), "tok/s_1thr")
			b.ReportMetric(float64(4*b.N)/t2.Seconds(), "tok/s_2thr")
		})
	}
}

// BenchmarkVerifyExport is what decides whether speculation can pay on
// this engine: a Verify of 8 rows against one of 1 row on the small
// export (medians, measured alternately), as "verify8/verify1", in the
// exact and the fast mode.
//
//	go test -run '^$' -bench VerifyExport -benchtime 40x ./ane/ref
func BenchmarkVerifyExport(b *testing.B) {
	bm := loadBench(b, "small")
	exact, fast := exactAndFast(b, bm)
	for _, mode := range []struct {
		name string
		m    *Model
	}{{"exact", exact}, {"fast", fast}} {
		b.Run(mode.name, func(b *testing.B) {
			s := mode.m.NewSession()
			defer s.Close()
			prompt := make([]int, 32)
			for i := range prompt {
				prompt[i] = (i*131 + 5) % bm.cfg.Vocab
			}
			if _, err := s.Feed(prompt); err != nil {
				b.Fatal(err)
			}
			var t1, t8 []float64
			for b.Loop() {
				if s.Position()+ane.VerifyRows >= s.Context() {
					s.Reset()
				}
				for _, rows := range []int{1, ane.VerifyRows} {
					start := time.Now()
					if _, err := s.Verify(prompt[:rows]); err != nil {
						b.Fatal(err)
					}
					if err := s.Accept(1); err != nil {
						b.Fatal(err)
					}
					if rows == 1 {
						t1 = append(t1, time.Since(start).Seconds())
					} else {
						t8 = append(t8, time.Since(start).Seconds())
					}
				}
			}
			sort.Float64s(t1)
			sort.Float64s(t8)
			v1, v8 := t1[len(t1)/2], t8[len(t8)/2]
			b.ReportMetric(v1*1e3, "ms/verify1")
			b.ReportMetric(v8*1e3, "ms/verify8")
			b.ReportMetric(v8/v1, "verify8/verify1")
		})
	}
}

// BenchmarkQuickExport times quickExport on each preset's checkpoint (the
// setup of every benchmark here and of bench/cpu), and BenchmarkLoadExport
// loading its result (LoadExport: the codebook matrices' packing, run
// counts and integer forms, as ref.OpenExport does after reading the
// files), in ns/op. Their parallel forms are in docs/KERNELS.md ("Load").
//
//	go test -run '^$' -bench 'QuickExport|LoadExport' -benchtime 3x ./ane/ref
func BenchmarkQuickExport(b *testing.B) {
	benchExportSetup(b, func(cfg Config, src Source, _ memFiles) error {
		_, err := quickExport(cfg, src)
		return err
	})
}

func BenchmarkLoadExport(b *testing.B) {
	benchExportSetup(b, func(cfg Config, src Source, files memFiles) error {
		_, err := LoadExport(cfg, src, files, nil)
		return err
	})
}

// benchExportSetup times step on the small and medium checkpoints, with
// their quick export made beforehand.
func benchExportSetup(b *testing.B, step func(Config, Source, memFiles) error) {
	for _, p := range []string{"small", "medium"} {
		b.Run(p, func(b *testing.B) {
			bm := loadBench(b, p)
			src, err := openCheckpoint(bm.dir, bm.files)
			if err != nil {
				b.Fatal(err)
			}
			files, err := quickExport(bm.cfg, src)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := step(bm.cfg, src, files); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
