package main

import (
	"compress/gzip"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/ane/kernels"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSpreadOf(t *testing.T) {
	in := []float64{5, 1, 4, 2, 3}
	if got := spreadOf(in); got != (spread{Median: 3, Min: 1, Max: 5}) {
		t.Errorf("odd count: %+v", got)
	}
	if !slices.Equal(in, []float64{5, 1, 4, 2, 3}) {
		t.Errorf("spreadOf reordered its input: %v", in)
	}
	if got := spreadOf([]float64{10, 2, 4, 8}); got != (spread{Median: 6, Min: 2, Max: 10}) {
		t.Errorf("even count: %+v, want the middle two's mean 6", got)
	}
	if got := spreadOf([]float64{7}); got != (spread{7, 7, 7}) {
		t.Errorf("one sample: %+v", got)
	}
}

// TestSummarize checks the arithmetic: bits/weight against the BF16
// bytes, GB/s = MB/token × tok/s per round, and the ratio taken per round
// against that round's read bandwidth (its median differs from the ratio
// of the medians here, so mixing rounds up would show).
func TestSummarize(t *testing.T) {
	c := config{Preset: "medium", Threads: 2, Mode: "fast"}
	s := samples{decode: []float64{28.6, 30, 27}, prefill: []float64{50, 60, 40}, read: []float64{10e9, 25e9, 20e9}}
	r := summarize(c, s, 349e6, 1967e6)
	if r.config != c {
		t.Errorf("config %+v", r.config)
	}
	if !near(r.BitsPerWeight, 16*349.0/1967) || !near(r.MBPerToken, 349) {
		t.Errorf("bits/weight %v, MB/token %v", r.BitsPerWeight, r.MBPerToken)
	}
	if r.Decode != (spread{28.6, 27, 30}) || r.Prefill != (spread{50, 40, 60}) {
		t.Errorf("decode %+v, prefill %+v", r.Decode, r.Prefill)
	}
	if !near(r.GBps.Median, 0.349*28.6) || !near(r.GBps.Min, 0.349*27) || !near(r.GBps.Max, 0.349*30) {
		t.Errorf("GB/s %+v", r.GBps)
	}
	ratios := []float64{0.349 * 28.6 / 10, 0.349 * 30 / 25, 0.349 * 27 / 20}
	if !near(r.Ratio.Median, ratios[2]) || !near(r.Ratio.Min, ratios[1]) || !near(r.Ratio.Max, ratios[0]) {
		t.Errorf("ratio %+v, want per-round ratios %v", r.Ratio, ratios)
	}
}

func TestWriteTable(t *testing.T) {
	r := summarize(config{Preset: "small", Threads: 2, Mode: "fast", Loaded: true},
		samples{decode: []float64{30, 28.6, 27}, prefill: []float64{300, 310, 320}, read: []float64{20e9, 20e9, 20e9}}, 349e6, 1967e6)
	var b strings.Builder
	writeTable(&b, []row{r})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "| preset, threads, mode | bits/weight | MB/token | decode tok/s | prefill tok/s | GB/s | ratio to read bandwidth |") {
		t.Fatalf("table:\n%s", b.String())
	}
	want := "| small, 2, fast, loaded | 2.84 | 349.0 | 28.6 [27.0–30.0] | 310.0 [300.0–320.0] | 9.98 [9.42–10.47] | 0.50 [0.47–0.52] |"
	if lines[2] != want {
		t.Errorf("row\n got %s\nwant %s", lines[2], want)
	}
}

func TestCompareUnderLoad(t *testing.T) {
	// Each row's rounds are {median, median, median}, unless set below.
	mk := func(preset string, threads int, loaded bool, decode, prefill float64) row {
		return row{config: config{Preset: preset, Threads: threads, Mode: "fast", Loaded: loaded},
			Decode: spread{Median: decode}, Prefill: spread{Median: prefill},
			rounds: samples{decode: []float64{decode, decode, decode}, prefill: []float64{prefill, prefill, prefill}}}
	}
	rows := []row{
		mk("small", 1, false, 20, 200),
		mk("small", 2, false, 35, 380),
		mk("small", 1, true, 12, 150),
		mk("small", 2, true, 25, 180),
		mk("small", 4, true, 18, 190),  // the most workers under load is the one compared
		mk("medium", 1, false, 10, 50), // no loaded row: left out
	}
	got := compareUnderLoad(rows)
	if len(got) != 1 {
		t.Fatalf("%d comparisons, want 1: %+v", len(got), got)
	}
	u := got[0]
	if u.Preset != "small" || u.Threads != 4 || u.DecodeLoaded != 18 || u.DecodeAlone1 != 20 || !near(u.DecodeRatio, 0.9) ||
		!near(u.PrefillRatio, 0.95) || !near(u.DecodePaired.Median, 0.9) || !near(u.PrefillPaired.Median, 0.95) ||
		!near(u.DecodeSameLoad.Median, 1.5) || u.GracefulDecode {
		t.Errorf("%+v", u)
	}

	// The verdict is the median of the ratios within each round, not the
	// ratio of medians: a host that slows down in round 2 slows both sides.
	rows[0].rounds.decode = []float64{20, 10, 21} // median 20
	rows[4].rounds.decode = []float64{21, 11, 17} // median 17; per round 1.05, 1.1, 0.81
	rows[4].Decode.Median = 17
	u = compareUnderLoad(rows)[0]
	if !near(u.DecodeRatio, 0.85) || !near(u.DecodePaired.Median, 1.05) || !near(u.DecodePaired.Min, 17.0/21) ||
		!near(u.DecodePaired.Max, 1.1) || !u.GracefulDecode {
		t.Errorf("paired by round: %+v", u)
	}
	rows[4].rounds.decode = []float64{19, 11, 20} // 0.95, 1.1, 0.952
	if u := compareUnderLoad(rows)[0]; u.GracefulDecode || !near(u.DecodePaired.Median, 20.0/21) {
		t.Errorf("below 1 in two rounds of three is not graceful: %+v", u)
	}

	// Without a loaded 1-worker row the same-load ratio is absent.
	noOne := slices.Delete(slices.Clone(rows), 2, 3)
	if u := compareUnderLoad(noOne)[0]; u.DecodeSameLoad != (spread{}) {
		t.Errorf("same-load ratio without a loaded 1-worker row: %+v", u)
	}

	// With -kernels, each level pairs with its own 1-worker row.
	levels := []row{mk("small", 1, false, 20, 200), mk("small", 2, true, 25, 180), mk("small", 1, false, 10, 100), mk("small", 2, true, 8, 90)}
	levels[0].Kernels, levels[1].Kernels, levels[2].Kernels, levels[3].Kernels = "avx512-vnni", "avx512-vnni", "avx2", "avx2"
	got = compareUnderLoad(levels)
	if len(got) != 2 || got[0].Kernels != "avx512-vnni" || !near(got[0].DecodePaired.Median, 1.25) || got[1].Kernels != "avx2" || !near(got[1].DecodePaired.Median, 0.8) {
		t.Errorf("per level: %+v", got)
	}
}

func TestWriteUnderLoad(t *testing.T) {
	var b strings.Builder
	writeUnderLoad(&b, []underLoad{{Preset: "medium", Mode: "fast", Threads: 2, DecodeLoaded: 21, DecodeAlone1: 20, PrefillLoaded: 60, PrefillAlone1: 50,
		DecodeRatio: 1.05, PrefillRatio: 1.2, DecodePaired: spread{1.04, 0.97, 1.1}, PrefillPaired: spread{1.2, 1.1, 1.3},
		DecodeSameLoad: spread{1.5, 1.4, 1.6}, GracefulDecode: true}})
	want := "medium, fast: 2 threads under load vs 1 thread unloaded: decode 21.0 vs 20.0 tok/s (1.05×; paired by round 1.04 [0.97–1.10]), " +
		"prefill 60.0 vs 50.0 tok/s (1.20×; paired 1.20 [1.10–1.30]); decode vs 1 thread under the same load, paired 1.50 [1.40–1.60]: " +
		"decode graceful (not below 1 thread alone)\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}

func TestParseOptions(t *testing.T) {
	levels := kernels.Levels() // "go" first, the machine's own last
	o, err := parseOptions([]string{"-presets", "tiny, small", "-threads", "2,1", "-mode", "exact,fast", "-rounds", "7", "-load", "-json", "-cpuprofile", "p.out",
		"-kernels", levels[len(levels)-1] + ",go"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.presets, []string{"tiny", "small"}) || !slices.Equal(o.threads, []int{2, 1}) ||
		!slices.Equal(o.modes, []string{"exact", "fast"}) || o.rounds != 7 || !o.load || !o.json || o.cpuProfile != "p.out" ||
		!slices.Equal(o.levels, []string{levels[len(levels)-1], "go"}) {
		t.Errorf("%+v", o)
	}
	d, err := parseOptions(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.presets, []string{"small", "medium"}) || !slices.Equal(d.threads, []int{1, 2}) ||
		!slices.Equal(d.modes, []string{"fast"}) || d.rounds != 5 || d.load || d.json || d.cpuProfile != "" || d.levels != nil {
		t.Errorf("defaults %+v", d)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-presets", "huge"}, `unknown preset "huge"`},
		{[]string{"-presets", "small,,medium"}, "empty item"},
		{[]string{"-presets", "small,small"}, "small is listed twice"},
		{[]string{"-threads", "0"}, `"0" is not a worker count`},
		{[]string{"-threads", "two"}, `"two" is not a worker count`},
		{[]string{"-threads", "1,1"}, "1 is listed twice"},
		{[]string{"-threads", "100000"}, "not a worker count in 1..256"},
		{[]string{"-mode", "turbo"}, `"turbo" is not "fast" or "exact"`},
		{[]string{"-kernels", "avx1024"}, `"avx1024" is not a kernel level of this machine`},
		{[]string{"-kernels", "go,go"}, "go is listed twice"},
		{[]string{"-rounds", "0"}, "-rounds 0: need at least 1"},
		{[]string{"-rounds", "x"}, "invalid value"},
		{[]string{"small"}, `unexpected argument "small"`},
		{[]string{"-bogus"}, "not defined: -bogus"},
	} {
		if _, err := parseOptions(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

func TestSummarizeBandwidth(t *testing.T) {
	got := summarizeBandwidth(map[bwKey][]float64{
		{2, true}:  {1e9, 3e9, 2e9},
		{1, true}:  {1e9},
		{2, false}: {20e9, 30e9, 25e9},
		{1, false}: {12e9, 10e9},
	})
	want := []bandwidth{
		{1, false, spread{11, 10, 12}},
		{2, false, spread{25, 20, 30}},
		{1, true, spread{1, 1, 1}},
		{2, true, spread{2, 1, 3}},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// A profiled run writes a profile (pprof's format is gzipped protobuf),
// passes f's error on,
// and an unwritable path is an error before f runs.
func TestProfiled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.out")
	boom := errors.New("boom")
	if err := profiled(path, func() error { return boom }); err != boom {
		t.Fatalf("error %v, want f's", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("the profile is not gzipped: %v", err)
	}
	if b, err := io.ReadAll(z); err != nil || len(b) == 0 {
		t.Errorf("the profile holds %d bytes (%v)", len(b), err)
	}
	ran := false
	err = profiled(filepath.Join(t.TempDir(), "missing", "cpu.out"), func() error { ran = true; return nil })
	if err == nil || !strings.Contains(err.Error(), "-cpuprofile") || ran {
		t.Errorf("unwritable path: error %v, f ran %v", err, ran)
	}
}
