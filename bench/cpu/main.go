// Command cpu measures the reference engine's peer-comparable figures on
// this machine (issue #21, item 5): for each synthetic preset with the
// recipe export (ane/ref QuickExport: the published recipe's formats,
// round-to-nearest codebooks) at each worker count and numeric mode,
// decode tok/s (tg128: 128 single-token steps after an 8-token prompt), prefill
// tok/s (pp512: one 512-token prompt), the weight megabytes one decode step
// reads (the engine's WeightBytes), the weight bandwidth that makes (MB/token
// × tok/s) and its ratio to a STREAM-like read of the same machine in the
// same round (internal/cpuprobe, as many goroutines as workers). Every
// configuration runs once per round, rounds interleaved, and the table
// gives the median [min–max] over rounds, with the load average at start
// and end so a noisy run shows.
//
// With -load every round is measured a second time while a second process
// (this binary, re-executed) spins on FMA and streaming-read work on one
// core (the loaded phase first every other round), and the most-workers
// figure under load is compared with the 1-worker figure without, round by
// round: the pool should degrade gracefully, not fall below one worker
// alone.
//
//	go run ./bench/cpu [-presets small,medium] [-threads 1,2] [-rounds 5] [-mode fast,exact] [-kernels avx512-vnni,avx512] [-json] [-load] [-llamacpp dir[,dir]] [-cpuprofile file]
//
// -kernels makes each listed kernel level (kernels.SetLevel) a
// configuration of its own, so levels compare in the same rounds.
//
// With -llamacpp (llamacpp.go) llama.cpp's llama-bench runs in the same
// rounds on GGUF conversions of the same checkpoints, its rows beside the
// engine's (bench/llamacpp/run.sh sets it all up).
//
// docs/KERNELS.md ("Peer-comparable figures") has the results and the run times.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/kernels"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/internal/cpuprobe"
	"github.com/forgedaemon/forged/internal/synth"
)

const (
	decodeTokens  = 128 // tg128
	promptTokens  = 8   // the decode's short prompt
	prefillTokens = 512 // pp512
	readBytes     = 256 << 20
	readPasses    = 3 // best of, per round, as STREAM reports its best
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == spinArg {
		spin()
		return
	}
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/cpu:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := profiled(o.cpuProfile, func() error { return run(ctx, o, os.Stdout, os.Stderr) }); err != nil {
		fmt.Fprintln(os.Stderr, "bench/cpu:", err)
		os.Exit(1)
	}
}

// profiled runs f under a CPU profile written to path (none when path is
// empty); the profile is complete when f returns, error or not.
func profiled(path string, f func() error) error {
	if path == "" {
		return f()
	}
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(file); err != nil {
		file.Close()
		return fmt.Errorf("-cpuprofile: %w", err)
	}
	err = f()
	pprof.StopCPUProfile()
	if cerr := file.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("-cpuprofile: %w", cerr)
	}
	return err
}

// machine describes where the figures come from.
type machine struct {
	GOOS         string `json:"goos"`
	GOARCH       string `json:"goarch"`
	NumCPU       int    `json:"num_cpu"`
	GOMAXPROCS   int    `json:"gomaxprocs"`
	Kernels      string `json:"kernels"`
	LoadAvgStart string `json:"loadavg_start,omitempty"`
	LoadAvgEnd   string `json:"loadavg_end,omitempty"`
}

// results is everything a run prints.
type results struct {
	Machine   machine     `json:"machine"`
	Rounds    int         `json:"rounds"`
	Bandwidth []bandwidth `json:"read_bandwidth"`
	Rows      []row       `json:"rows"`
	UnderLoad []underLoad `json:"under_load,omitempty"`
	// LoaderCPU and LoadedWall are the load process's CPU seconds and the
	// seconds it ran: evidence that the load was there.
	LoaderCPU  float64 `json:"loader_cpu_s,omitempty"`
	LoadedWall float64 `json:"loaded_wall_s,omitempty"`
}

func run(ctx context.Context, o options, out, progress io.Writer) error {
	res := results{Rounds: o.rounds, Machine: machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), Kernels: kernels.KernelLevel(), LoadAvgStart: loadAvg()}}
	readers := min(slices.Max(o.threads), runtime.NumCPU())
	bufs := cpuprobe.NewBuffers(readers, readBytes)
	read := map[bwKey][]float64{}
	var ld loadStats
	for _, p := range o.presets {
		rows, err := measurePreset(ctx, o, p, bufs, read, &ld, progress)
		if err != nil {
			return fmt.Errorf("preset %s: %w", p, err)
		}
		res.Rows = append(res.Rows, rows...)
	}
	res.Machine.LoadAvgEnd = loadAvg()
	res.Bandwidth = summarizeBandwidth(read)
	if o.load {
		res.UnderLoad = compareUnderLoad(res.Rows)
		res.LoaderCPU, res.LoadedWall = ld.cpu.Seconds(), ld.wall.Seconds()
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	m := res.Machine
	fmt.Fprintf(out, "bench/cpu: %s/%s, %d CPUs, GOMAXPROCS %d, kernels %s; %d interleaved rounds, median [min–max]\n",
		m.GOOS, m.GOARCH, m.NumCPU, m.GOMAXPROCS, m.Kernels, o.rounds)
	if m.LoadAvgStart != "" {
		fmt.Fprintf(out, "load average: %s at start, %s at end\n", m.LoadAvgStart, m.LoadAvgEnd)
	}
	writeBandwidth(out, res.Bandwidth)
	fmt.Fprintln(out)
	writeTable(out, res.Rows)
	if o.load {
		fmt.Fprintf(out, "\nload process: %.1f CPU s over %.1f s loaded\n", res.LoaderCPU, res.LoadedWall)
		writeUnderLoad(out, res.UnderLoad)
	}
	return nil
}

// engine is one configuration's session.
type engine struct {
	threads int
	mode    string
	level   string // kernels.SetLevel before each measurement; "" the default
	s       *ref.Session
	samples [2]samples // unloaded, loaded
}

// useLevel selects the engine's kernel level, if it has its own.
func (e *engine) useLevel() error {
	if e.level == "" {
		return nil
	}
	return kernels.SetLevel(e.level)
}

// measurePreset generates the preset's checkpoint in a temporary
// directory, exports it, and runs o.rounds interleaved rounds over every
// worker count and mode, recording the rounds' read bandwidth into read.
func measurePreset(ctx context.Context, o options, preset string, bufs cpuprobe.Buffers, read map[bwKey][]float64, ld *loadStats, progress io.Writer) ([]row, error) {
	t0 := time.Now()
	peers, err := findPeers(o.llamacpp, preset, o.threads)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bench-cpu-"+preset+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := synth.Generate(dir, synth.Options{Preset: preset, Seed: 1}); err != nil {
		return nil, err
	}
	cm, err := hfconfig.LoadModel(dir)
	if err != nil {
		return nil, err
	}
	cfg := ref.ConfigFromModel(cm)
	src, closer, err := ref.OpenCheckpointSource(dir)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	ladder := []int{2 * prefillTokens}
	dense, err := ref.LoadCheckpoint(cfg, src)
	if err != nil {
		return nil, err
	}
	dm, err := ref.NewModel(cfg, dense, ref.Options{Ladder: ladder})
	if err != nil {
		return nil, err
	}
	bf16Bytes := dm.WeightBytes()
	export, err := ref.QuickExport(cfg, src)
	if err != nil {
		return nil, err
	}
	var engines []*engine
	var weightBytes int64
	levels := o.levels
	if len(levels) == 0 {
		levels = []string{""}
	}
	for _, th := range o.threads {
		for _, mode := range o.modes {
			for _, level := range levels {
				m, err := ref.NewModel(cfg, export, ref.Options{Threads: th, Fast: mode == ref.ModeFast, Ladder: ladder})
				if err != nil {
					return nil, err
				}
				weightBytes = m.WeightBytes()
				e := &engine{threads: th, mode: mode, level: level, s: m.NewSession()}
				defer e.s.Close()
				// Warm up: the first products size the session's scratch.
				if err := e.useLevel(); err != nil {
					return nil, err
				}
				if _, err := e.s.Feed(tokens(cfg.Vocab, promptTokens)); err != nil {
					return nil, err
				}
				if _, err := e.s.Feed(tokens(cfg.Vocab, 1)); err != nil {
					return nil, err
				}
				engines = append(engines, e)
			}
		}
	}
	fmt.Fprintf(progress, "%s: checkpoint, export and %d sessions ready in %.0f s\n", preset, len(engines), time.Since(t0).Seconds())
	phases := []bool{false}
	if o.load {
		phases = append(phases, true)
	}
	for r := range o.rounds {
		t := time.Now()
		order, peerOrder, phaseOrder := slices.Clone(engines), slices.Clone(peers), slices.Clone(phases)
		if r%2 == 1 { // alternate the orders, so no configuration or phase always runs first
			slices.Reverse(order)
			slices.Reverse(peerOrder)
			slices.Reverse(phaseOrder)
		}
		for _, loaded := range phaseOrder {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := measurePhase(ctx, order, peerOrder, r%2 == 1, loaded, cfg.Vocab, bufs, read, ld); err != nil {
				return nil, err
			}
		}
		fmt.Fprintf(progress, "%s: round %d/%d in %.0f s\n", preset, r+1, o.rounds, time.Since(t).Seconds())
	}
	var rows []row
	for _, loaded := range phases {
		for _, e := range engines {
			c := config{Preset: preset, Threads: e.threads, Mode: e.mode, Kernels: e.level, Loaded: loaded}
			rows = append(rows, summarize(c, e.samples[phaseIndex(loaded)], weightBytes, bf16Bytes))
		}
	}
	return append(rows, peerRows(preset, peers, phases, bf16Bytes)...), nil
}

func phaseIndex(loaded bool) int {
	if loaded {
		return 1
	}
	return 0
}

// measurePhase measures the read bandwidth at every worker count, then
// each engine and each peer once (the peers first if peersFirst), with the
// load process running if loaded.
func measurePhase(ctx context.Context, engines []*engine, peers []*peer, peersFirst, loaded bool, vocab int, bufs cpuprobe.Buffers, read map[bwKey][]float64, ld *loadStats) (err error) {
	if loaded {
		l, lerr := startLoader()
		if lerr != nil {
			return lerr
		}
		defer func() { err = errors.Join(err, l.stop(ld)) }()
	}
	bw := map[int]float64{}
	roundBW := func(threads int) float64 {
		k := min(threads, len(bufs))
		if _, ok := bw[k]; !ok {
			bw[k] = bufs.ReadBandwidth(k, readPasses)
			read[bwKey{k, loaded}] = append(read[bwKey{k, loaded}], bw[k])
		}
		return bw[k]
	}
	for _, e := range engines {
		roundBW(e.threads)
	}
	for _, p := range peers {
		roundBW(p.threads)
	}
	if peersFirst {
		if err := measurePeers(ctx, peers, loaded, roundBW); err != nil {
			return err
		}
	}
	for _, e := range engines {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.useLevel(); err != nil {
			return err
		}
		d, err := decodeRate(ctx, e.s, vocab)
		if err != nil {
			return err
		}
		p, err := prefillRate(e.s, vocab)
		if err != nil {
			return err
		}
		e.samples[phaseIndex(loaded)].add(d, p, roundBW(e.threads))
	}
	if !peersFirst {
		return measurePeers(ctx, peers, loaded, roundBW)
	}
	return nil
}

// tokens is a fixed pseudo-random prompt of n ids below vocab.
func tokens(vocab, n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = (i*37 + 11) % vocab
	}
	return ids
}

// decodeRate is tg128: after a short prompt (not timed), 128 single-token
// steps; tokens per second. The tokens are a fixed sequence, not sampled:
// a step costs the same whatever its token (as llama-bench's tg).
func decodeRate(ctx context.Context, s *ref.Session, vocab int) (float64, error) {
	s.Reset()
	if _, err := s.Feed(tokens(vocab, promptTokens)); err != nil {
		return 0, err
	}
	ids := tokens(vocab, promptTokens+decodeTokens)[promptTokens:]
	start := time.Now()
	for _, id := range ids {
		if err := ctx.Err(); err != nil { // an interrupt ends the run within a step
			return 0, err
		}
		if _, err := s.Feed([]int{id}); err != nil {
			return 0, err
		}
	}
	return decodeTokens / time.Since(start).Seconds(), nil
}

// prefillRate is pp512: one 512-token prompt into an empty session.
func prefillRate(s *ref.Session, vocab int) (float64, error) {
	s.Reset()
	ids := tokens(vocab, prefillTokens)
	start := time.Now()
	if _, err := s.Feed(ids); err != nil {
		return 0, err
	}
	return prefillTokens / time.Since(start).Seconds(), nil
}
