package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// spread is the median and the range of one figure over the rounds.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// spreadOf summarises samples (at least one; the input is not modified).
// An even count takes the mean of the middle two.
func spreadOf(samples []float64) spread {
	s := slices.Sorted(slices.Values(samples))
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return spread{Median: med, Min: s[0], Max: s[n-1]}
}

// config is one measured configuration.
type config struct {
	Preset  string `json:"preset"`
	Threads int    `json:"threads"`
	Mode    string `json:"mode"`
	Kernels string `json:"kernels,omitempty"` // the -kernels level, if several were compared
	Loaded  bool   `json:"loaded"`            // a second process loaded one core meanwhile
}

func (c config) label() string {
	l := fmt.Sprintf("%s, %d, %s", c.Preset, c.Threads, c.Mode)
	if c.Kernels != "" {
		l += ", " + c.Kernels
	}
	if c.Loaded {
		l += ", loaded"
	}
	return l
}

// samples are one configuration's per-round measurements: tok/s of the
// tg128 decode and of the pp512 prefill, and the read bandwidth (bytes/s,
// as many goroutines as the configuration has workers) of the same round
// under the same load.
type samples struct {
	decode, prefill, read []float64
}

// add records one round.
func (s *samples) add(decode, prefill, read float64) {
	s.decode, s.prefill, s.read = append(s.decode, decode), append(s.prefill, prefill), append(s.read, read)
}

// row is one configuration's summary.
type row struct {
	config
	BitsPerWeight float64 `json:"bits_per_weight"`
	MBPerToken    float64 `json:"mb_per_token"`
	Decode        spread  `json:"decode_tok_s"`
	Prefill       spread  `json:"prefill_tok_s"`
	GBps          spread  `json:"weights_gb_s"`     // MB/token × decode tok/s
	Ratio         spread  `json:"ratio_to_read_bw"` // GB/s over the same round's read bandwidth
	// NoPrefill: a peer whose pp512 failed (llamacpp.go); Prefill is
	// whatever rounds before the failure gave, not a figure.
	NoPrefill bool `json:"no_prefill,omitempty"`
	// rounds are the per-round figures behind the spreads, in round
	// order, for comparisons paired by round (compareUnderLoad).
	rounds samples
}

// summarize turns a configuration's samples into its row. weightBytes is
// what one decode step reads (the engine's WeightBytes), bf16Bytes the
// same accounting for the BF16 checkpoint: the export's bits per weight
// are 16 × weightBytes / bf16Bytes, as the table counts them.
func summarize(c config, s samples, weightBytes, bf16Bytes int64) row {
	if len(s.decode) != len(s.read) {
		panic("summarize: a read bandwidth per decode round")
	}
	gbps := make([]float64, len(s.decode))
	ratio := make([]float64, len(s.decode))
	for i, tps := range s.decode {
		gbps[i] = float64(weightBytes) * tps / 1e9
		ratio[i] = gbps[i] * 1e9 / s.read[i]
	}
	return row{
		config:        c,
		BitsPerWeight: 16 * float64(weightBytes) / float64(bf16Bytes),
		MBPerToken:    float64(weightBytes) / 1e6,
		Decode:        spreadOf(s.decode),
		Prefill:       spreadOf(s.prefill),
		GBps:          spreadOf(gbps),
		Ratio:         spreadOf(ratio),
		rounds:        s,
	}
}

// fmtSpread prints a spread as "median [min–max]" with the given decimals.
func fmtSpread(s spread, prec int) string {
	return fmt.Sprintf("%.*f [%.*f–%.*f]", prec, s.Median, prec, s.Min, prec, s.Max)
}

// writeTable prints rows as the markdown table.
func writeTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| preset, threads, mode | bits/weight | MB/token | decode tok/s | prefill tok/s | GB/s | ratio to read bandwidth |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range rows {
		prefill := fmtSpread(r.Prefill, 1)
		if r.NoPrefill {
			prefill = "— (pp512 failed)"
		}
		fmt.Fprintf(w, "| %s | %.2f | %.1f | %s | %s | %s | %s |\n", r.label(), r.BitsPerWeight, r.MBPerToken,
			fmtSpread(r.Decode, 1), prefill, fmtSpread(r.GBps, 2), fmtSpread(r.Ratio, 2))
	}
}

// underLoad is the figure the issue asks about when a second process
// loads a core: the most workers under load against one worker without,
// and against one worker under the same load.
type underLoad struct {
	Preset        string  `json:"preset"`
	Mode          string  `json:"mode"`
	Kernels       string  `json:"kernels,omitempty"`
	Threads       int     `json:"threads_loaded"`
	DecodeLoaded  float64 `json:"decode_tok_s_loaded"`
	DecodeAlone1  float64 `json:"decode_tok_s_1thread_unloaded"`
	PrefillLoaded float64 `json:"prefill_tok_s_loaded"`
	PrefillAlone1 float64 `json:"prefill_tok_s_1thread_unloaded"`
	// DecodeRatio and PrefillRatio are ratios of the medians.
	DecodeRatio  float64 `json:"decode_ratio"`
	PrefillRatio float64 `json:"prefill_ratio"`
	// DecodePaired and PrefillPaired are the same ratios taken within each
	// round (its loaded and unloaded phases run back to back), so a host
	// whose speed drifts between rounds moves both sides of a ratio alike.
	DecodePaired  spread `json:"decode_ratio_paired"`
	PrefillPaired spread `json:"prefill_ratio_paired"`
	// DecodeSameLoad is the loaded most-workers decode over the loaded
	// 1-worker decode, paired by round: what the second worker buys when
	// its core is shared.
	DecodeSameLoad spread `json:"decode_ratio_same_load_paired"`
	GracefulDecode bool   `json:"graceful_decode"` // DecodePaired's median ≥ 1: no collapse below one worker
}

// compareUnderLoad pairs, per preset, mode and kernel level, the loaded
// row with the most workers (more than one) with the 1-worker rows,
// unloaded and loaded. Presets or modes without the unloaded 1-worker and
// the loaded rows are left out, as are peers whose prefill failed.
func compareUnderLoad(rows []row) []underLoad {
	var out []underLoad
	for _, one := range rows {
		if one.Loaded || one.Threads != 1 || one.NoPrefill {
			continue
		}
		var best, oneLoaded *row
		for i := range rows {
			r := &rows[i]
			if !r.Loaded || r.Preset != one.Preset || r.Mode != one.Mode || r.Kernels != one.Kernels || r.NoPrefill {
				continue
			}
			if r.Threads == 1 {
				oneLoaded = r
			} else if best == nil || r.Threads > best.Threads {
				best = r
			}
		}
		if best == nil {
			continue
		}
		u := underLoad{Preset: one.Preset, Mode: one.Mode, Kernels: one.Kernels, Threads: best.Threads,
			DecodeLoaded: best.Decode.Median, DecodeAlone1: one.Decode.Median,
			PrefillLoaded: best.Prefill.Median, PrefillAlone1: one.Prefill.Median,
			DecodePaired:  pairedRatio(best.rounds.decode, one.rounds.decode),
			PrefillPaired: pairedRatio(best.rounds.prefill, one.rounds.prefill)}
		u.DecodeRatio = u.DecodeLoaded / u.DecodeAlone1
		u.PrefillRatio = u.PrefillLoaded / u.PrefillAlone1
		if oneLoaded != nil {
			u.DecodeSameLoad = pairedRatio(best.rounds.decode, oneLoaded.rounds.decode)
		}
		u.GracefulDecode = u.DecodePaired.Median >= 1
		out = append(out, u)
	}
	return out
}

// pairedRatio is the spread of num[i]/den[i] over the rounds both have;
// the zero spread when they have none.
func pairedRatio(num, den []float64) spread {
	n := min(len(num), len(den))
	if n == 0 {
		return spread{}
	}
	r := make([]float64, n)
	for i := range r {
		r[i] = num[i] / den[i]
	}
	return spreadOf(r)
}

func writeUnderLoad(w io.Writer, us []underLoad) {
	for _, u := range us {
		verdict := "graceful (not below 1 thread alone)"
		if !u.GracefulDecode {
			verdict = "below 1 thread alone"
		}
		what := u.Preset + ", " + u.Mode
		if u.Kernels != "" {
			what += ", " + u.Kernels
		}
		fmt.Fprintf(w, "%s: %d threads under load vs 1 thread unloaded: decode %.1f vs %.1f tok/s (%.2f×; paired by round %s), prefill %.1f vs %.1f tok/s (%.2f×; paired %s)",
			what, u.Threads, u.DecodeLoaded, u.DecodeAlone1, u.DecodeRatio, fmtSpread(u.DecodePaired, 2),
			u.PrefillLoaded, u.PrefillAlone1, u.PrefillRatio, fmtSpread(u.PrefillPaired, 2))
		if u.DecodeSameLoad != (spread{}) {
			fmt.Fprintf(w, "; decode vs 1 thread under the same load, paired %s", fmtSpread(u.DecodeSameLoad, 2))
		}
		fmt.Fprintf(w, ": decode %s\n", verdict)
	}
}

// bandwidth is the read bandwidth of one goroutine count, loaded or not.
type bandwidth struct {
	Goroutines int    `json:"goroutines"`
	Loaded     bool   `json:"loaded"`
	GBps       spread `json:"gb_s"`
}

func writeBandwidth(w io.Writer, bw []bandwidth) {
	parts := make([]string, len(bw))
	for i, b := range bw {
		loaded := ""
		if b.Loaded {
			loaded = " loaded"
		}
		parts[i] = fmt.Sprintf("%d goroutine(s)%s %s GB/s", b.Goroutines, loaded, fmtSpread(b.GBps, 1))
	}
	fmt.Fprintf(w, "read bandwidth: %s\n", strings.Join(parts, "; "))
}

// bwKey names one read-bandwidth series.
type bwKey struct {
	goroutines int
	loaded     bool
}

// summarizeBandwidth turns the rounds' read bandwidths (bytes/s) into GB/s
// spreads, unloaded first, then by goroutines.
func summarizeBandwidth(read map[bwKey][]float64) []bandwidth {
	var out []bandwidth
	for k, v := range read {
		gbps := make([]float64, len(v))
		for i, x := range v {
			gbps[i] = x / 1e9
		}
		out = append(out, bandwidth{Goroutines: k.goroutines, Loaded: k.loaded, GBps: spreadOf(gbps)})
	}
	slices.SortFunc(out, func(a, b bandwidth) int {
		if a.Loaded != b.Loaded {
			return cmp.Compare(phaseIndex(a.Loaded), phaseIndex(b.Loaded))
		}
		return cmp.Compare(a.Goroutines, b.Goroutines)
	})
	return out
}
